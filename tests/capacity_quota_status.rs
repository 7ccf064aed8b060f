//! CapacityQuotas (autoscaling.x-k8s.io, cluster-scoped) on a live cluster, over a fake API server at the
//! HTTP layer: read in the version served (v1beta1 preferred, v1alpha1 where only it is served, nothing where
//! the CRD is not), watched rather than listed each loop; the status upstream's controller writes, written to
//! the status subresource once and not again while nothing changes; an invalid quota named in its status and
//! in one Event.

mod common;

use common::Server;
use common::kube_api::{self, Fake, Objects, node};
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::control::{Kube, Publisher};
use ekscale::autoscaler::{ClusterSource, ClusterView, ProviderClient, ProviderConfig, RunOnce};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SCENARIO: &str = "
cluster: quotas
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}
";

fn quota(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("autoscaling.x-k8s.io/{version}"), "kind": "CapacityQuota",
           "metadata": {"name": name, "generation": 1, "resourceVersion": "1", "uid": format!("uid-{name}")},
           "spec": spec})
}

/// Three quotas: one on the general pool, one on every node, one whose selector upstream refuses.
fn quotas(version: &str) -> Vec<Value> {
    vec![
        quota(
            version,
            "general-pool",
            json!({"selector": {"matchLabels": {"eks.amazonaws.com/nodegroup": "general"}},
                   "limits": {"resources": {"nodes": 4, "cpu": 16}}}),
        ),
        quota(
            version,
            "everything",
            json!({"limits": {"resources": {"cpu": 64, "memory": "256Gi", "pods": 1000}}}),
        ),
        quota(
            version,
            "bad",
            json!({"selector": {"matchExpressions": [{"key": "pool", "operator": "Foo",
                                                      "values": ["gpu"]}]},
                   "limits": {"resources": {"nodes": 1}}}),
        ),
    ]
}

/// The provider's one general instance as the API server's one node (2 CPU, 8Gi, 29 pods).
fn general_node(id: &str) -> Value {
    let mut n = node("node-0");
    n["spec"]["providerID"] = json!(id);
    n["spec"]["taints"] = json!([]);
    n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = json!("general");
    n["status"]["capacity"] = json!({"cpu": "2", "memory": "8Gi", "pods": "29"});
    n
}

async fn cluster(objects: Objects) -> (Server, ProviderClient, Arc<Kube>, Fake) {
    let provider = Server::start_with(SCENARIO, None).await;
    let client =
        ProviderClient::new(&ProviderConfig::plaintext(provider.addr.to_string())).unwrap();
    let instance = client.nodes("general").await.unwrap().remove(0);
    let (kube, fake) = kube_api::connect(Objects {
        nodes: vec![general_node(&instance.id)],
        ..objects
    })
    .await;
    (provider, client, Arc::new(kube), fake)
}

fn acting() -> Settings {
    Settings {
        act: true,
        ..Settings::default()
    }
}

/// The status writes so far: (version, name, patch).
fn writes(fake: &Fake) -> Vec<(String, String, Value)> {
    fake.objects.lock().unwrap().status_writes.clone()
}

/// The view once `done` holds of it: each watch event (a status written, an object added) reaches the
/// cache on its own stream.
async fn view_when(kube: &Kube, done: impl Fn(&ClusterView) -> bool) -> Arc<ClusterView> {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let view = kube.view().await.unwrap();
            if done(&view) {
                return view;
            }
            tokio::task::yield_now().await;
        }
    });
    waited.await.expect("the watch event reaches the cache")
}

/// Every quota's status as written back has reached the cache.
fn statuses_read(view: &ClusterView) -> bool {
    (view.quotas.iter()).all(|q| q.status.observed_generation.is_some())
}

#[tokio::test]
async fn the_status_is_written_once_in_the_version_preferred_and_again_only_when_it_changes() {
    let (_provider, client, kube, fake) = cluster(Objects {
        quota_versions: vec!["v1beta1", "v1alpha1"],
        capacity_quotas: quotas("v1beta1"),
        ..Objects::default()
    })
    .await;
    let view = kube.view().await.unwrap();
    let names: Vec<&str> = view.quotas.iter().map(|q| q.name.as_str()).collect();
    assert_eq!(names, ["bad", "everything", "general-pool"]);
    assert!(view.quotas[0].problem().is_some());

    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    let written = writes(&fake);
    assert_eq!(written.len(), 3, "{written:#?}");
    assert!(written.iter().all(|(version, _, _)| version == "v1beta1"));
    let of = |name: &str| {
        let w = written.iter().find(|w| w.1 == name).unwrap();
        w.2["status"].clone()
    };
    let everything = of("everything");
    assert_eq!(
        everything["used"]["resources"],
        json!({"cpu": "2", "memory": "8Gi", "pods": "29"})
    );
    assert_eq!(everything["observedGeneration"], 1);
    let conditions: Vec<(&str, &str, &str)> = (everything["conditions"].as_array().unwrap())
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap();
            (s("type"), s("status"), s("reason"))
        })
        .collect();
    assert_eq!(
        conditions,
        [
            (
                "cluster-autoscaler.kubernetes.io/valid",
                "True",
                "ValidationSucceeded"
            ),
            ("Reconciled", "True", "ReconciliationSucceeded")
        ]
    );
    assert_eq!(
        of("general-pool")["used"]["resources"],
        json!({"cpu": "2", "nodes": "1"})
    );
    let bad = of("bad");
    assert_eq!(bad["conditions"][0]["reason"], "ValidationFailed");
    assert!(
        (bad["conditions"][0]["message"].as_str().unwrap())
            .ends_with("\"Foo\" is not a valid label selector operator"),
        "{bad}"
    );
    assert_eq!(bad["conditions"][1]["message"], "Validation failed");
    assert!(
        bad.get("used").is_none(),
        "an invalid quota's used is left alone"
    );

    // The writes come back through the watch; a loop over the same nodes writes nothing.
    let view = view_when(&kube, statuses_read).await;
    once.run(&view, SystemTime::now()).await.unwrap();
    assert_eq!(writes(&fake).len(), 3, "{:#?}", writes(&fake));

    // A node registers outside any group: the quotas that match it are written again, the others not.
    let mut extra = node("extra");
    extra["status"]["capacity"] = json!({"cpu": "4", "memory": "16Gi", "pods": "58"});
    let added = json!({"type": "ADDED", "object": extra});
    fake.events.send(("nodes", added)).unwrap();
    let view = view_when(&kube, |v| v.nodes.len() == 2).await;
    once.run(&view, SystemTime::now()).await.unwrap();
    let written = writes(&fake);
    assert_eq!(written.len(), 4, "{written:#?}");
    let last = &written[3];
    assert_eq!(last.1, "everything");
    assert_eq!(
        last.2["status"]["used"]["resources"],
        json!({"cpu": "6", "memory": "24Gi", "pods": "87"})
    );
}

#[tokio::test]
async fn where_only_v1alpha1_is_served_quotas_are_read_and_written_in_it() {
    let (_provider, client, kube, fake) = cluster(Objects {
        quota_versions: vec!["v1alpha1"],
        capacity_quotas: quotas("v1alpha1"),
        ..Objects::default()
    })
    .await;
    let view = kube.view().await.unwrap();
    assert_eq!(view.quotas.len(), 3);
    assert!(
        (view.quotas.iter()).all(|q| q.version == Some(ekscale::model::QuotaVersion::V1alpha1))
    );
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    once.run(&view, SystemTime::now()).await.unwrap();
    let written = writes(&fake);
    assert_eq!(written.len(), 3, "{written:#?}");
    assert!(written.iter().all(|(version, _, _)| version == "v1alpha1"));
}

/// A cluster without the CRD: no quota watch, no quotas, nothing written.
#[tokio::test]
async fn a_cluster_without_the_crd_has_no_quotas() {
    let (_provider, client, kube, fake) = cluster(Objects::default()).await;
    let view = kube.view().await.unwrap();
    assert!(view.quotas.is_empty());
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    assert!(writes(&fake).is_empty());
    let watched = fake.watches.borrow().clone();
    assert!(!watched.contains_key("capacityquotas"), "{watched:?}");
}

/// A dry run (or `simulate`) reads quotas and writes nothing.
#[tokio::test]
async fn a_dry_run_writes_no_status() {
    let (_provider, client, kube, fake) = cluster(Objects {
        quota_versions: vec!["v1beta1"],
        capacity_quotas: quotas("v1beta1"),
        ..Objects::default()
    })
    .await;
    let view = kube.view().await.unwrap();
    let mut once = RunOnce::new(client, Settings::default()).acting_on(kube.clone());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(writes(&fake).is_empty());
    // Read all the same: the loop's report holds each quota with what the one node of general uses of it
    // (2 CPUs of both, the node itself of general-pool's), and the invalid one with why it is not enforced.
    let reported: Vec<(&str, Option<u64>, Option<u64>, bool)> = (status.capacity_quotas.iter())
        .map(|q| {
            let used = |r: &str| q.used.get(r).copied();
            (
                q.name.as_str(),
                used("cpu"),
                used("nodes"),
                q.problem.is_some(),
            )
        })
        .collect();
    assert_eq!(
        reported,
        [
            ("bad", None, None, true),
            ("everything", Some(2), None, false),
            ("general-pool", Some(2), Some(1), false)
        ],
        "{:#?}",
        status.capacity_quotas
    );
    let pool = &status.capacity_quotas[2];
    assert_eq!(pool.limits.get("nodes"), Some(&4));
    assert_eq!(pool.node_groups, ["general"]);
}

/// A quota created after the first list arrives by the watch, and the next loop writes its status.
#[tokio::test]
async fn a_quota_created_after_the_list_is_seen_by_the_next_loop() {
    let (_provider, client, kube, fake) = cluster(Objects {
        quota_versions: vec!["v1beta1"],
        ..Objects::default()
    })
    .await;
    assert!(kube.view().await.unwrap().quotas.is_empty());
    let mut watches = fake.watches.subscribe();
    let watching = watches.wait_for(|w| w.get("capacityquotas").copied().unwrap_or(0) > 0);
    tokio::time::timeout(Duration::from_secs(10), watching)
        .await
        .expect("the quotas are watched")
        .unwrap();
    let created = quotas("v1beta1").remove(1);
    fake.objects
        .lock()
        .unwrap()
        .capacity_quotas
        .push(created.clone());
    let added = json!({"type": "ADDED", "object": created});
    fake.events.send(("capacityquotas", added)).unwrap();
    let view = view_when(&kube, |v| v.quotas.len() == 1).await;
    assert_eq!(view.quotas[0].name, "everything");
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    once.run(&view, SystemTime::now()).await.unwrap();
    let written = writes(&fake);
    assert_eq!(written.len(), 1, "{written:#?}");
    assert_eq!(written[0].1, "everything");
}

/// An invalid quota gets one Warning Event, however many loops see it: the loop that writes its status
/// tells it, and the next, whose view has that status, does not.
#[tokio::test]
async fn an_invalid_quota_gets_one_event() {
    let (_provider, client, kube, fake) = cluster(Objects {
        quota_versions: vec!["v1beta1"],
        capacity_quotas: quotas("v1beta1"),
        ..Objects::default()
    })
    .await;
    let publisher = Publisher::new(kube_api::client(&fake).await, "kube-system", "pod-a");
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    once.run(&view, SystemTime::now()).await.unwrap();
    let quotas = &view.quotas;
    assert!(publisher.publish_quota_problems(quotas).await.is_empty());
    let view = view_when(&kube, statuses_read).await;
    once.run(&view, SystemTime::now()).await.unwrap();
    let quotas = &view.quotas;
    assert!(publisher.publish_quota_problems(quotas).await.is_empty());
    // A replica that starts now reads the status, which already says it.
    let restarted = Publisher::new(kube_api::client(&fake).await, "kube-system", "pod-b");
    assert!(restarted.publish_quota_problems(quotas).await.is_empty());

    let events = fake.objects.lock().unwrap().events.clone();
    assert_eq!(events.len(), 1, "{events:#?}");
    let event = &events[0];
    assert_eq!(event["type"], "Warning");
    assert_eq!(event["reason"], "ValidationFailed");
    assert_eq!(event["regarding"]["kind"], "CapacityQuota");
    assert_eq!(event["regarding"]["name"], "bad");
    assert_eq!(
        event["regarding"]["apiVersion"],
        "autoscaling.x-k8s.io/v1beta1"
    );
    let note = event["note"].as_str().unwrap();
    assert!(
        note.starts_with("not enforced: spec.selector: Invalid value:"),
        "{note}"
    );
}

/// The simulated cluster (the demo's) keeps what the loop writes as the API server would: a valid quota's
/// status with its used figures, an invalid one's conditions with the used it had left as it was.
#[tokio::test]
async fn the_simulated_cluster_keeps_the_status_as_a_merge_patch_leaves_it() {
    let (_server, config, cluster) = common::simulated::simulated(SCENARIO).await;
    let read = |object: Value| ekscale::k8s::quota_from_value(object).unwrap();
    let mut bad = read(quotas("v1beta1").remove(2));
    let before: ekscale::model::Quantity = "3".parse().unwrap();
    bad.status.used = Some([("nodes".to_string(), before)].into());
    cluster.create_quotas(vec![read(quotas("v1beta1").remove(1)), bad]);
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client, acting()).acting_on(cluster.clone());
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);

    let kept = cluster.quotas();
    let everything = kept.iter().find(|q| q.name == "everything").unwrap();
    let used = everything.status.used.as_ref().expect("used written");
    let pods: u64 = view.nodes.iter().map(|n| n.capacity.pods).sum();
    assert_eq!(
        used["pods"],
        ekscale::model::Quantity::from_millis(i128::from(pods) * 1000)
    );
    assert_eq!(everything.status.observed_generation, Some(1));
    let bad = kept.iter().find(|q| q.name == "bad").unwrap();
    assert_eq!(bad.status.conditions[0].reason, "ValidationFailed");
    assert_eq!(
        bad.status.used,
        Some([("nodes".to_string(), before)].into())
    );
}
