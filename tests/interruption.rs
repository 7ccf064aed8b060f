//! The interruption queue against moto's SQS: the provider binary started with `--interruption-queue` reads
//! EventBridge's four kinds of message, serves each instance of a served node group as leaving with its
//! group, reason and time, keeps the strongest reason, forgets an instance once it has left its group,
//! counts and deletes what it cannot use, and keeps answering while the queue fails.

mod common;

use common::moto::{self, Moto, NodeGroup};
use common::{Binary, http_get};
use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
use ekscale::proto::ekscale::{LeavingInstance, ListLeavingInstancesRequest};
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::{
    ExternalGrpcNode, NodeGroupDeleteNodesRequest, NodeGroupsRequest,
};
use jiff::{Timestamp, ToSpan};
use serde_json::json;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// moto with cluster `prod`: node groups `web` (2 on-demand instances) and `spot` (3 Spot instances), and
/// an SQS queue `prod-interruptions`.
struct Aws {
    moto: Moto,
    sdk: aws_config::SdkConfig,
    queue: String,
    /// Each group's instances, as providerIDs, sorted.
    instances: HashMap<&'static str, Vec<String>>,
}

async fn aws() -> Aws {
    let moto = Moto::start();
    let sdk = moto.sdk().await;
    let web = NodeGroup {
        name: "web",
        desired: 2,
        ..Default::default()
    };
    let spot = NodeGroup {
        name: "spot",
        desired: 3,
        capacity_type: "SPOT",
        ..Default::default()
    };
    let asgs = moto::create_cluster(&sdk, "prod", &[web, spot]).await;
    let mut instances = HashMap::new();
    for group in ["web", "spot"] {
        instances.insert(group, moto::asg_state(&sdk, &asgs[group]).await.1);
    }
    let created = sqs(&sdk)
        .create_queue()
        .queue_name("prod-interruptions")
        .send()
        .await
        .unwrap();
    Aws {
        queue: created.queue_url().unwrap().to_string(),
        moto,
        sdk,
        instances,
    }
}

fn sqs(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    aws_sdk_sqs::Client::new(sdk)
}

impl Aws {
    /// The provider binary on this moto, with these extra arguments.
    fn provider(&self, args: &[&str]) -> Binary {
        let env = [
            ("AWS_ENDPOINT_URL", self.moto.endpoint.as_str()),
            ("AWS_REGION", moto::REGION),
            ("AWS_ACCESS_KEY_ID", "test"),
            ("AWS_SECRET_ACCESS_KEY", "test"),
            ("AWS_CONFIG_FILE", "/dev/null"),
            ("AWS_SHARED_CREDENTIALS_FILE", "/dev/null"),
            // What the queue says of instances in no served group is logged at debug.
            ("RUST_LOG", "info,ekscale::cloud::aws::interruption=debug"),
        ];
        let mut all = vec!["--backend", "aws", "--cluster", "prod"];
        all.extend_from_slice(args);
        Binary::start_with_env(&all, &env)
    }

    async fn send(&self, body: &str) {
        let request = sqs(&self.sdk).send_message().queue_url(&self.queue);
        request.message_body(body).send().await.unwrap();
    }

    /// Messages on the queue, visible or being handled.
    async fn queued(&self) -> u64 {
        use aws_sdk_sqs::types::QueueAttributeName as Name;
        let output = sqs(&self.sdk)
            .get_queue_attributes()
            .queue_url(&self.queue)
            .attribute_names(Name::ApproximateNumberOfMessages)
            .attribute_names(Name::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap();
        let attributes = output.attributes().unwrap();
        let count = |name: &Name| -> u64 { attributes[name].parse().unwrap() };
        count(&Name::ApproximateNumberOfMessages)
            + count(&Name::ApproximateNumberOfMessagesNotVisible)
    }

    /// The `n`th instance of `group`: its providerID and its EC2 id.
    fn instance(&self, group: &str, n: usize) -> (String, String) {
        let id = self.instances[group][n].clone();
        let ec2 = id.rsplit('/').next().unwrap().to_string();
        (id, ec2)
    }
}

/// An EC2 event of `detail_type` about `instance`, as EventBridge puts it on the queue.
fn ec2_event(
    detail_type: &str,
    time: Timestamp,
    instance: &str,
    detail: serde_json::Value,
) -> String {
    let mut detail = detail;
    detail["instance-id"] = json!(instance);
    json!({
        "version": "0",
        "id": format!("{instance}-{detail_type}"),
        "detail-type": detail_type,
        "source": "aws.ec2",
        "account": "123456789012",
        "time": time.to_string(),
        "region": moto::REGION,
        "resources": [format!("arn:aws:ec2:{}:123456789012:instance/{instance}", moto::REGION)],
        "detail": detail,
    })
    .to_string()
}

fn spot_warning(time: Timestamp, instance: &str) -> String {
    let detail = json!({"instance-action": "terminate"});
    ec2_event(
        "EC2 Spot Instance Interruption Warning",
        time,
        instance,
        detail,
    )
}

fn rebalance(time: Timestamp, instance: &str) -> String {
    ec2_event(
        "EC2 Instance Rebalance Recommendation",
        time,
        instance,
        json!({}),
    )
}

fn state_change(time: Timestamp, instance: &str, state: &str) -> String {
    let detail = json!({"state": state});
    ec2_event(
        "EC2 Instance State-change Notification",
        time,
        instance,
        detail,
    )
}

/// An AWS Health scheduled change for `instance` starting at `start`, written in RFC 2822 as AWS Health
/// writes it.
fn scheduled_change(time: Timestamp, start: Timestamp, instance: &str) -> String {
    let printer = jiff::fmt::rfc2822::DateTimePrinter::new();
    json!({
        "version": "0",
        "id": format!("{instance}-health"),
        "detail-type": "AWS Health Event",
        "source": "aws.health",
        "account": "123456789012",
        "time": time.to_string(),
        "region": moto::REGION,
        "resources": [instance],
        "detail": {
            "eventArn": "arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/1",
            "service": "EC2",
            "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
            "eventTypeCategory": "scheduledChange",
            "startTime": printer.timestamp_to_rfc9110_string(&start).unwrap(),
            "eventDescription": [{"language": "en_US", "latestDescription": "retirement"}],
            "affectedEntities": [{"entityValue": instance}],
        },
    })
    .to_string()
}

/// The value of the sample `name{labels}` in the provider's metrics (0 when absent).
fn sample(provider: &Binary, name_and_labels: &str) -> f64 {
    let text = http_get(provider.metrics, "/metrics");
    text.lines()
        .find_map(|line| line.strip_prefix(name_and_labels)?.strip_prefix(' '))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

fn messages(provider: &Binary, kind: &str, outcome: &str) -> f64 {
    let labels = format!("{{kind=\"{kind}\",outcome=\"{outcome}\"}}");
    sample(
        provider,
        &format!("ekscale_provider_interruption_messages_total{labels}"),
    )
}

fn all_received(provider: &Binary) -> f64 {
    let kinds = [
        "spotInterruption",
        "rebalance",
        "scheduledEvent",
        "instanceStopped",
        "unknown",
    ];
    kinds
        .iter()
        .map(|kind| messages(provider, kind, "received"))
        .sum()
}

/// Waits (polling the metric, at most a minute) until `done` holds.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "waited a minute for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn leaving(provider: &Binary) -> Vec<LeavingInstance> {
    let mut client = NodeGroupsClient::new(provider.channel().await);
    let answer = client
        .list_leaving_instances(ListLeavingInstancesRequest {})
        .await;
    answer.unwrap().into_inner().instances
}

/// Deletes one instance of `group` through the provider's CloudProvider service.
async fn delete(provider: &Binary, group: &str, id: &str) {
    let mut cloud = CloudProviderClient::new(provider.channel().await);
    let node = ExternalGrpcNode {
        provider_id: id.into(),
        ..Default::default()
    };
    let delete = NodeGroupDeleteNodesRequest {
        id: group.into(),
        nodes: vec![node],
    };
    cloud.node_group_delete_nodes(delete).await.unwrap();
}

fn seconds(at: Timestamp) -> i64 {
    at.as_second()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_kind_of_message_lists_its_instance_with_group_reason_and_time() {
    let aws = aws().await;
    let provider = aws.provider(&["--interruption-queue", &aws.queue]);
    let now = Timestamp::now();
    let (spot0, spot0_ec2) = aws.instance("spot", 0);
    let (spot1, spot1_ec2) = aws.instance("spot", 1);
    let (spot2, spot2_ec2) = aws.instance("spot", 2);
    let (web0, web0_ec2) = aws.instance("web", 0);
    let (web1, web1_ec2) = aws.instance("web", 1);
    let retirement = now + 30.hours();
    let sent = [
        spot_warning(now, &spot0_ec2),
        rebalance(now, &spot1_ec2),
        scheduled_change(now, retirement, &web0_ec2),
        state_change(now, &web1_ec2, "stopping"),
        // spot2: recommended, then warned, then reported running: the warning stands, whatever the order
        // SQS hands them out in.
        rebalance(now, &spot2_ec2),
        spot_warning(now + 10.seconds(), &spot2_ec2),
        state_change(now + 11.seconds(), &spot2_ec2, "running"),
        // A recommendation after the warning does not weaken it.
        rebalance(now + 20.seconds(), &spot0_ec2),
    ];
    for body in &sent {
        aws.send(body).await;
    }
    until("every message", || {
        all_received(&provider) == sent.len() as f64
    })
    .await;

    let got: Vec<_> = (leaving(&provider).await.into_iter())
        .map(|l| (l.node_group_id, l.id, l.reason, l.at_unix_seconds))
        .collect();
    let row = |group: &str, id: &String, reason: &str, at: Timestamp| {
        (
            group.to_string(),
            id.clone(),
            reason.to_string(),
            seconds(at),
        )
    };
    let mut expected = vec![
        row("spot", &spot0, "spotInterruption", now + 120.seconds()),
        row("spot", &spot1, "rebalance", now),
        row("spot", &spot2, "spotInterruption", now + 130.seconds()),
        row("web", &web0, "scheduledEvent", retirement),
        row("web", &web1, "instanceStopped", now),
    ];
    expected.sort();
    assert_eq!(got, expected);
    assert_eq!(messages(&provider, "spotInterruption", "parsed"), 2.0);
    assert_eq!(messages(&provider, "rebalance", "parsed"), 3.0);
    assert_eq!(messages(&provider, "instanceStopped", "parsed"), 2.0);
    assert_eq!(messages(&provider, "scheduledEvent", "parsed"), 1.0);
    let gauge = |reason: &str| {
        sample(
            &provider,
            &format!("ekscale_provider_leaving_instances{{reason=\"{reason}\"}}"),
        )
    };
    assert_eq!(gauge("spotInterruption"), 2.0);
    assert_eq!(aws.queued().await, 0, "every message deleted once recorded");

    // spot0 leaves its group (deleted through the provider): the next read of the group forgets it.
    delete(&provider, "spot", &spot0).await;
    until("spot0 forgotten", || gauge("spotInterruption") == 1.0).await;
    let ids: Vec<_> = leaving(&provider).await.into_iter().map(|l| l.id).collect();
    assert!(!ids.contains(&spot0), "{ids:?}");
    assert_eq!(ids.len(), 4, "{ids:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_messages_are_counted_ignored_deleted_and_list_nothing() {
    let aws = aws().await;
    // By name (GetQueueUrl), the flag over the config file's queue.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "interruptionQueue: no-such-queue\n").unwrap();
    let config = config.to_str().unwrap();
    let provider = aws.provider(&[
        "--config",
        config,
        "--interruption-queue",
        "prod-interruptions",
    ]);
    let now = Timestamp::now();
    let (_, spot0_ec2) = aws.instance("spot", 0);
    let no_instance = spot_warning(now, &spot0_ec2).replace(
        &format!("\"instance-id\":\"{spot0_ec2}\""),
        "\"instance-id\":\"\"",
    );
    assert!(!no_instance.contains(&format!("\"instance-id\":\"{spot0_ec2}\"")));
    let bad_time = scheduled_change(now, now, &spot0_ec2).replace(
        &jiff::fmt::rfc2822::DateTimePrinter::new()
            .timestamp_to_rfc9110_string(&now)
            .unwrap(),
        "tomorrow-ish",
    );
    let sent = [
        "this is not JSON".to_string(),
        json!({"Records": [{"eventSource": "aws:s3"}]}).to_string(),
        ec2_event(
            "EC2 AMI State Change",
            now,
            &spot0_ec2,
            json!({"State": "available"}),
        ),
        spot_warning(now, "i-0123456789abcdef0"),
        no_instance,
        bad_time,
    ];
    for body in &sent {
        aws.send(body).await;
    }
    until("every message", || {
        all_received(&provider) == sent.len() as f64
    })
    .await;
    assert_eq!(messages(&provider, "unknown", "ignored"), 3.0);
    assert_eq!(messages(&provider, "spotInterruption", "ignored"), 2.0);
    assert_eq!(messages(&provider, "scheduledEvent", "ignored"), 1.0);
    for kind in ["spotInterruption", "scheduledEvent", "unknown"] {
        assert_eq!(messages(&provider, kind, "parsed"), 0.0, "{kind}");
    }
    assert!(leaving(&provider).await.is_empty());
    assert_eq!(aws.queued().await, 0, "ignored messages are deleted too");
    let errors = sample(
        &provider,
        "ekscale_provider_interruption_queue_errors_total",
    );
    assert_eq!(errors, 0.0, "the flag's queue was read, not the file's");

    // Each ignored message logged once, with why.
    let log = provider.stop();
    let ignored: Vec<_> = log
        .iter()
        .filter(|l| l.contains("interruption message ignored"))
        .collect();
    assert_eq!(ignored.len(), sent.len(), "{ignored:#?}");
    // An instance of no served group is ordinary (the rules see the whole account): said at debug.
    let unknown = ignored.iter().find(|l| l.contains("unknownInstance"));
    assert!(unknown.is_some_and(|l| l.contains("DEBUG")), "{ignored:#?}");
    for why in [
        "not JSON",
        "not an EventBridge event",
        "EC2 AMI State Change",
        "unknownInstance",
        "instance-id",
        "startTime",
    ] {
        assert!(
            ignored.iter().any(|l| l.contains(why)),
            "no {why:?} in {ignored:#?}"
        );
    }
}

/// deploy/iam-policy.json allows exactly the SQS calls the poller makes: GetQueueUrl for a queue given by
/// name, ReceiveMessage and DeleteMessage.
#[tokio::test(flavor = "multi_thread")]
async fn the_iam_policy_allows_exactly_the_queue_calls() {
    let aws = aws().await;
    let provider = aws.provider(&["--interruption-queue", "prod-interruptions"]);
    let (_, spot0_ec2) = aws.instance("spot", 0);
    aws.send(&rebalance(Timestamp::now(), &spot0_ec2)).await;
    until("the message", || all_received(&provider) == 1.0).await;
    let text = http_get(provider.metrics, "/metrics");
    let mut called: Vec<String> = (moto::aws_calls(&text).into_keys())
        .filter(|call| call.starts_with("sqs:"))
        .collect();
    called.sort();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/iam-policy.json");
    let policy: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut allowed: Vec<String> = (policy["Statement"].as_array().unwrap().iter())
        .flat_map(|statement| statement["Action"].as_array().unwrap().iter())
        .map(|action| action.as_str().unwrap().to_string())
        .filter(|action| action.starts_with("sqs:"))
        .collect();
    allowed.sort();
    assert_eq!(allowed, called);
    assert_eq!(
        called,
        ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_queue_is_counted_and_the_provider_keeps_answering() {
    let aws = aws().await;
    let wrong = format!("{}/123456789012/no-such-queue", aws.moto.endpoint);
    let provider = aws.provider(&["--interruption-queue", &wrong]);
    let errors = || {
        sample(
            &provider,
            "ekscale_provider_interruption_queue_errors_total",
        )
    };
    // Two errors: the poller retried after its backoff instead of stopping.
    until("two queue errors", || errors() >= 2.0).await;
    let mut cloud = CloudProviderClient::new(provider.channel().await);
    let groups = cloud
        .node_groups(NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(groups.node_groups.len(), 2);
    assert!(leaving(&provider).await.is_empty());
    let log = provider.stop();
    let failed =
        |l: &String| l.contains("interruption queue failed") && l.contains("ReceiveMessage");
    assert!(log.iter().any(failed), "{log:#?}");
}

#[test]
fn the_queue_is_for_the_aws_backend_only() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ekscale-provider"))
        .args(["--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"])
        .args([
            "--backend",
            "sim",
            "--interruption-queue",
            "prod-interruptions",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("--interruption-queue is for --backend aws"),
        "{message}"
    );
}
