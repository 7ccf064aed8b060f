//! AWS on a bad day, through a fault-injecting proxy in front of moto: throttling and 503 bursts during
//! Refresh, IncreaseSize and DeleteNodes, answers lost after AWS carried a change out, and AWS slower than
//! cluster-autoscaler's 5 s deadline. The SDK retries with backoff, no change is applied twice, every RPC
//! answers inside the deadline, and the provider's view converges to what AWS has.

mod common;

use aws_config::retry::RetryConfig;
use aws_config::{BehaviorVersion, Region};
use aws_sdk_eks::config::Credentials;
use common::Server;
use common::faults::{AwsError, Fault, FaultProxy};
use common::moto::{self, Moto, NodeGroup};
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::aws::AwsBackend;
use ekscale::cloud::aws::AwsConfig;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::*;
use ekscale::provider::ProviderMetrics;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tonic::transport::Channel;

struct Rig {
    _moto: Moto,
    /// Straight to moto: what AWS really has.
    aws: aws_config::SdkConfig,
    asgs: HashMap<String, String>,
    proxy: FaultProxy,
    /// The provider's backend, to read its cache's age.
    backend: Arc<AwsBackend>,
    server: Server,
}

/// moto with `prod` (web: m5.large, 1..6, 2 running; batch: m5.xlarge, 0..5, 1 running), the proxy in
/// front of it, and the provider's AWS backend reading through the proxy with the SDK's standard retries
/// (3 attempts).
async fn rig(config: &str) -> Rig {
    let moto = Moto::start();
    let aws = moto.sdk().await;
    let asgs = moto::create_cluster(
        &aws,
        "prod",
        &[
            NodeGroup {
                name: "web",
                min: 1,
                max: 6,
                desired: 2,
                ..Default::default()
            },
            NodeGroup {
                name: "batch",
                instance_types: &["m5.xlarge"],
                ..Default::default()
            },
        ],
    )
    .await;
    let proxy = FaultProxy::start(&moto.endpoint).await;
    let through_proxy = aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(&proxy.endpoint)
        .region(Region::new(moto::REGION))
        .credentials_provider(Credentials::new("test", "test", None, None, "moto"))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(3)
                .with_initial_backoff(Duration::from_millis(20)),
        )
        .load()
        .await;
    let config = AwsConfig::load(config, None, None).unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let backend = Arc::new(AwsBackend::new(config, &through_proxy, metrics));
    let server = Server::serve(backend.clone(), None, None).await;
    server
        .client()
        .await
        .refresh(RefreshRequest {})
        .await
        .unwrap();
    Rig {
        _moto: moto,
        aws,
        asgs,
        proxy,
        backend,
        server,
    }
}

async fn target(client: &mut CloudProviderClient<Channel>, id: &str) -> i32 {
    client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: id.into() })
        .await
        .unwrap()
        .into_inner()
        .target_size
}

async fn increase(
    client: &mut CloudProviderClient<Channel>,
    id: &str,
    delta: i32,
) -> Result<(), tonic::Status> {
    client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: id.into(),
            delta,
        })
        .await
        .map(drop)
}

/// Every read cluster-autoscaler makes in a loop, each under its 5 s deadline (the channel's timeout).
async fn hot_reads(client: &mut CloudProviderClient<Channel>) -> i32 {
    let groups = client
        .node_groups(NodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    assert_eq!(groups.len(), 2);
    for group in &groups {
        let id = group.id.clone();
        client
            .node_group_nodes(NodeGroupNodesRequest { id: id.clone() })
            .await
            .unwrap();
        client
            .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest { id: id.clone() })
            .await
            .unwrap();
        client
            .node_group_get_options(NodeGroupAutoscalingOptionsRequest {
                id,
                ..Default::default()
            })
            .await
            .unwrap();
    }
    target(client, "web").await
}

const CONFIG: &str = "cluster: prod\nrefreshInterval: 0s\n";

#[tokio::test]
async fn refresh_rides_out_bursts_serves_the_cache_through_an_outage_and_converges() {
    let rig = rig(CONFIG).await;
    let mut client = rig.server.client().await;

    // A burst shorter than the SDK's retries: nobody upstream notices.
    rig.proxy.inject(
        "DescribeAutoScalingGroups",
        Fault::Refuse(AwsError::Unavailable),
        2,
    );
    rig.proxy.inject(
        "GET /clusters/prod/node-groups",
        Fault::Refuse(AwsError::Throttling),
        1,
    );
    client.refresh(RefreshRequest {}).await.unwrap();
    let (calls, faulted) = rig.proxy.calls("DescribeAutoScalingGroups");
    assert_eq!(faulted, 2);
    assert!(calls > faulted, "retried until it went through");
    assert_eq!(rig.proxy.calls("GET /clusters/prod/node-groups").1, 1);

    // An outage: Refresh says so, the reads answer from the cache, and AWS moves on meanwhile.
    rig.proxy.inject(
        "DescribeAutoScalingGroups",
        Fault::Refuse(AwsError::Unavailable),
        usize::MAX,
    );
    aws_sdk_autoscaling::Client::new(&rig.aws)
        .set_desired_capacity()
        .auto_scaling_group_name(&rig.asgs["web"])
        .desired_capacity(4)
        .send()
        .await
        .unwrap();
    let status = client.refresh(RefreshRequest {}).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert!(
        status.message().contains("DescribeAutoScalingGroups"),
        "{status:?}"
    );
    assert_eq!(hot_reads(&mut client).await, 2, "the cache, not a guess");

    // AWS is back: the next Refresh takes what AWS has.
    rig.proxy.heal();
    client.refresh(RefreshRequest {}).await.unwrap();
    assert_eq!(target(&mut client, "web").await, 4);
    let instances = client
        .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
        .await
        .unwrap()
        .into_inner()
        .instances;
    let mut ids: Vec<String> = instances.into_iter().map(|i| i.id).collect();
    ids.sort();
    assert_eq!(ids, moto::asg_state(&rig.aws, &rig.asgs["web"]).await.1);
}

#[tokio::test]
async fn a_change_whose_answer_was_lost_is_never_applied_twice() {
    let rig = rig(CONFIG).await;
    let mut client = rig.server.client().await;
    let asg = rig.asgs["web"].clone();

    // AWS sets the capacity, the answer is lost, the SDK retries: the same absolute capacity again.
    rig.proxy.inject(
        "SetDesiredCapacity",
        Fault::LoseAnswer(AwsError::Unavailable),
        1,
    );
    increase(&mut client, "web", 2).await.unwrap();
    assert_eq!(rig.proxy.calls("SetDesiredCapacity"), (2, 1));
    assert_eq!(moto::asg_state(&rig.aws, &asg).await.0, 4, "not 6");
    assert_eq!(target(&mut client, "web").await, 4);

    // Every answer lost: the caller hears UNAVAILABLE, yet the provider has read back what AWS did, so a
    // caller retrying from the target it sees asks for no more than it meant to.
    rig.proxy.inject(
        "SetDesiredCapacity",
        Fault::LoseAnswer(AwsError::Throttling),
        3,
    );
    let status = increase(&mut client, "web", 1).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable, "{status:?}");
    assert_eq!(moto::asg_state(&rig.aws, &asg).await.0, 5);
    assert_eq!(
        target(&mut client, "web").await,
        5,
        "read back from the ASG"
    );

    // A termination whose answer is lost: the instance goes once and the capacity drops by one.
    client.refresh(RefreshRequest {}).await.unwrap();
    let (_, before) = moto::asg_state(&rig.aws, &asg).await;
    let victim = before[0].clone();
    rig.proxy.inject(
        "TerminateInstanceInAutoScalingGroup",
        Fault::LoseAnswer(AwsError::Unavailable),
        1,
    );
    let deleted = client
        .node_group_delete_nodes(NodeGroupDeleteNodesRequest {
            id: "web".into(),
            nodes: vec![ExternalGrpcNode {
                provider_id: victim.clone(),
                ..Default::default()
            }],
        })
        .await;
    let (desired, after) = moto::asg_state(&rig.aws, &asg).await;
    assert_eq!(desired, 4, "decremented once: {deleted:?}");
    assert!(!after.contains(&victim));
    client.refresh(RefreshRequest {}).await.unwrap();
    assert_eq!(target(&mut client, "web").await, 4, "{deleted:?}");

    // A burst of 503s longer than the retries on another group: refused whole, and that group unchanged.
    rig.proxy.inject(
        "SetDesiredCapacity",
        Fault::Refuse(AwsError::Unavailable),
        3,
    );
    let status = increase(&mut client, "batch", 1).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert_eq!(target(&mut client, "batch").await, 1);
    assert_eq!(moto::asg_state(&rig.aws, &rig.asgs["batch"]).await.0, 1);
    // And then it goes through.
    increase(&mut client, "batch", 1).await.unwrap();
    assert_eq!(moto::asg_state(&rig.aws, &rig.asgs["batch"]).await.0, 2);
}

#[tokio::test]
async fn slower_aws_than_the_deadline_still_gets_an_answer_to_every_rpc() {
    // awsTimeout 1s (4s by default) so that AWS taking 2 s per call is "too slow" without a slow test.
    let rig = rig("cluster: prod\nrefreshInterval: 0s\nawsTimeout: 1s\n").await;
    let mut client = rig.server.client().await;
    let asg = rig.asgs["web"].clone();
    rig.proxy
        .inject("", Fault::Delay(Duration::from_secs(2)), usize::MAX);

    // Refresh answers OK from the cache while the slow read goes on behind it; the reads never wait.
    client.refresh(RefreshRequest {}).await.unwrap();
    assert_eq!(hot_reads(&mut client).await, 2);

    // A slow size change: a clear error in time, then no other change until its outcome is known.
    let status = increase(&mut client, "web", 1).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(
        status.message().contains("did not answer within 1s"),
        "{status:?}"
    );
    let status = increase(&mut client, "web", 1).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(
        status.message().contains("still being read back"),
        "{status:?}"
    );
    assert!(hot_reads(&mut client).await >= 2);

    // AWS recovers: the read-back settles the group on what AWS has, and changes are taken again.
    rig.proxy.heal();
    let mut settled = false;
    for _ in 0..100 {
        if increase(&mut client, "web", 1).await.is_ok() {
            settled = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(settled, "the group never took a change again");
    let (desired, _) = moto::asg_state(&rig.aws, &asg).await;
    assert_eq!(target(&mut client, "web").await, desired);
    assert!(
        desired == 3 || desired == 4,
        "the slow change happened at most once: {desired}"
    );
}

#[tokio::test]
async fn a_group_aws_keeps_throttling_is_backed_off_and_the_companion_scales_another() {
    use ekscale::autoscaler::ClusterView;
    use ekscale::autoscaler::RunOnce;
    use ekscale::autoscaler::Settings;
    use ekscale::autoscaler::{ProviderClient, ProviderConfig};
    use ekscale::model::{Pod, Resources};
    let rig = rig(CONFIG).await;
    // Eight pods of 1.5 CPU: the three instances running (not registered as nodes here) take three.
    let pods: Vec<Pod> = (0..8)
        .map(|i| {
            let demand = Resources {
                cpu_millis: 1500,
                memory_bytes: 1 << 30,
                pods: 1,
                ..Default::default()
            };
            Pod::pending("default", &format!("api-{i}"), demand)
        })
        .collect();
    let view = ClusterView {
        pods: pods.into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    let config = ProviderConfig::plaintext(rig.server.addr.to_string());
    let client = ProviderClient::new(&config).unwrap();
    let now = std::time::SystemTime::now();

    // Which group the expander wants, from a loop that does not act. The price expander decides alone
    // (least-waste may tie between the two, and ties are broken at random).
    let expander = ekscale::autoscaler::scaleup::Expander {
        chain: vec![ekscale::autoscaler::scaleup::Strategy::Price],
        priorities: None,
    };
    let looking = Settings {
        act: false,
        expander: expander.clone(),
        ..Settings::default()
    };
    let plan = RunOnce::new(client.clone(), looking)
        .run(&view, now)
        .await
        .unwrap();
    let first = plan.scale_up[0].node_group.clone();
    let other = if first == "web" { "batch" } else { "web" };

    // AWS throttles every size change of that group's ASG, past the SDK's retries.
    rig.proxy.inject_when(
        "SetDesiredCapacity",
        &format!("AutoScalingGroupName={}", rig.asgs[&first]),
        Fault::Refuse(AwsError::Throttling),
        usize::MAX,
    );
    let acting = Settings {
        act: true,
        expander,
        ..Settings::default()
    };
    let mut once = RunOnce::new(client, acting);
    let status = once.run(&view, now).await.unwrap();
    assert_eq!(status.scale_up[0].node_group, first);
    let error = status.scale_up[0].error.as_deref().unwrap_or_default();
    assert!(error.contains("Rate exceeded"), "{status:#?}");
    let (desired, _) = moto::asg_state(&rig.aws, &rig.asgs[&first]).await;

    // Next loop: that group is in backoff, the other one is asked instead, and AWS takes it.
    let later = now + Duration::from_secs(10);
    let status = once.run(&view, later).await.unwrap();
    assert_eq!(status.scale_up.len(), 1, "{status:#?}");
    assert_eq!(status.scale_up[0].node_group, other, "{status:#?}");
    assert!(status.scale_up[0].error.is_none(), "{status:#?}");
    let skipped = status.node_groups.iter().find(|g| g.id == first).unwrap();
    assert!(
        skipped
            .skipped
            .as_deref()
            .is_some_and(|why| why.contains("backoff") && why.contains("Rate exceeded")),
        "{skipped:?}"
    );
    assert!(moto::asg_state(&rig.aws, &rig.asgs[other]).await.0 > 1);
    assert_eq!(
        moto::asg_state(&rig.aws, &rig.asgs[&first]).await.0,
        desired
    );
}

/// AWS answering, a refresh brings the cache up to date; then AWS slows down past awsTimeout (3 s), and the
/// next refresh is answered from the cache: true once it was. A machine too slow to ask within maxCacheAge
/// (2 s) of the update is rightly refused (the cache's age says so), and tries again from a new update.
async fn young_cache_served(rig: &Rig, client: &mut CloudProviderClient<Channel>) -> bool {
    let max_cache_age = Duration::from_secs(2);
    for _ in 0..10 {
        rig.proxy.heal();
        let before = rig.backend.cache_age().unwrap();
        let read = Instant::now();
        client.refresh(RefreshRequest {}).await.unwrap();
        // The update is in once the cache is younger than the old one would be now (a refresh still in the
        // background from an earlier round may take it back to when that one began: then this round is
        // refused).
        let updated = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                let unchanged = before + read.elapsed();
                if rig.backend.cache_age().unwrap() < unchanged {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        updated
            .await
            .expect("a refresh with AWS answering updates the cache");
        rig.proxy
            .inject("", Fault::Delay(Duration::from_secs(3)), usize::MAX);
        match client.refresh(RefreshRequest {}).await {
            Ok(_) => return true,
            Err(status) => {
                let age = rig.backend.cache_age().unwrap();
                assert!(
                    age > max_cache_age,
                    "refused a cache {age:?} old: {status:?}"
                );
            }
        }
    }
    false
}

#[tokio::test]
async fn a_cache_aws_has_not_confirmed_for_too_long_is_refused() {
    let rig = rig("cluster: prod\nrefreshInterval: 0s\nawsTimeout: 1s\nmaxCacheAge: 2s\n").await;
    let mut client = rig.server.client().await;
    // Young enough: served from the cache while AWS is slow.
    assert!(young_cache_served(&rig, &mut client).await, "never served");
    // Once older than maxCacheAge, AWS still not done: cluster-autoscaler is told to skip its loop.
    let mut status = None;
    for _ in 0..100 {
        if let Err(e) = client.refresh(RefreshRequest {}).await {
            status = Some(e);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let status = status.expect("Refresh never refused the stale cache");
    assert_eq!(status.code(), tonic::Code::Unavailable);
    assert!(status.message().contains("maxCacheAge"), "{status:?}");
    // The reads still answer (cluster-autoscaler does not make them in a skipped loop, others may).
    assert_eq!(hot_reads(&mut client).await, 2);

    // AWS recovers: the background refresh completes and Refresh is OK again.
    rig.proxy.heal();
    let mut ok = false;
    for _ in 0..40 {
        if client.refresh(RefreshRequest {}).await.is_ok() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ok, "Refresh never recovered");
}
