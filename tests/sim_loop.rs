//! The loop over the cluster simulator: RunOnce acts through the in-process provider, instances start on the
//! simulated EKS's clock, nodes register, the simulator's scheduler binds the pods, and the next loops see
//! upcoming nodes instead of scaling again.

mod common;

use common::Server;
use common::simulated::{owned, simulated};
use ekscale::autoscaler::ClusterSource;
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::cloud::NodeGroupBackend;
use ekscale::model::{Pod, Resources};
use ekscale::simulated_cluster::{OnDisagreement, SimulatedCluster};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

const SCENARIO: &str = "
cluster: loop
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 10, desiredSize: 1, provisioningDelay: 30s}
  - {name: tight, instanceType: m5.xlarge, zones: [us-east-1c], minSize: 0, maxSize: 10, desiredSize: 0, availableCapacity: 1}
";

/// A cluster of one group, `general` (m5.large in us-east-1a, 0 to 5 nodes), with `desired` nodes running.
async fn general(desired: u32) -> (Server, ProviderConfig, Arc<SimulatedCluster>) {
    let scenario = format!(
        "cluster: general\nregion: us-east-1\nnodeGroups:\n  - {{name: general, instanceType: m5.large, \
         zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: {desired}}}\n"
    );
    simulated(&scenario).await
}

fn settings() -> Settings {
    Settings {
        act: true,
        remove_unregistered: true,
        ..Settings::default()
    }
}

/// The scale-ups of a loop as (group, delta).
fn scale_ups(status: &ekscale::autoscaler::status::Status) -> Vec<(&str, u64)> {
    status
        .scale_up
        .iter()
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect()
}

fn web(n: usize, cpu: u64) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let demand = Resources {
                cpu_millis: cpu,
                memory_bytes: 1 << 30,
                pods: 1,
                ..Default::default()
            };
            Pod::pending("default", &format!("web-{i}"), demand)
        })
        .collect()
}

#[tokio::test]
async fn scale_up_then_nodes_register_and_pods_bind() {
    let (server, config, cluster) = simulated(SCENARIO).await;
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());

    // One m5.large runs (1930m): one 1-CPU pod binds, five wait.
    cluster.create_pods(web(6, 1000));
    let view = cluster.view().await.unwrap();
    assert_eq!(view.nodes.len(), 1);
    assert_eq!(view.pods.iter().filter(|p| p.unschedulable).count(), 5);

    // least-waste: two m5.xlarge (3 pods each: 37.5% cpu waste) beat five m5.large (50%). The estimator
    // does not know that `tight` can start only one more instance.
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(scale_ups(&status), [("tight", 2)], "{status:#?}");
    assert!(status.scale_up[0].error.is_none());

    // Next loop: the second instance failed (a stockout), so tight is backed off and, as upstream does, not
    // counted on; general takes the five pods. Nothing is asked of tight again.
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let tight = status.node_groups.iter().find(|g| g.id == "tight").unwrap();
    assert!(
        tight
            .skipped
            .as_deref()
            .unwrap()
            .starts_with("in backoff after failed scale-up (instance creation failed"),
        "{status:#?}"
    );
    assert_eq!(scale_ups(&status), [("general", 5)], "{status:#?}");

    // Next loop, before anything started: the pods wait for upcoming nodes; nothing is asked twice. The
    // instance tight could not create was deleted (upstream does so in the loop that sees it), or it would
    // launch, unasked, whenever capacity frees up.
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(status.scale_up.is_empty(), "{status:#?}");
    let tight = status.node_groups.iter().find(|g| g.id == "tight").unwrap();
    assert_eq!(tight.target_size, 1, "{tight:?}");
    assert_eq!(status.placed.len(), 5);
    assert!(status.placed.iter().all(|p| p.node == "upcoming"));

    // Time passes: instances run, nodes register, every pod binds, and the loop has nothing to do.
    server.sim().clock().advance(Duration::from_secs(31));
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    server.sim().clock().advance(Duration::from_secs(31));
    let view = cluster.view().await.unwrap();
    assert!(
        view.pods.iter().all(|p| p.node_name.is_some()),
        "pods still pending: {status:#?}"
    );
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(
        status.scale_up.is_empty() && status.no_scale_up.is_empty(),
        "{status:#?}"
    );
}

#[tokio::test]
async fn removed_instances_take_their_nodes_and_controllers_recreate_pods() {
    let (server, config, cluster) = simulated(SCENARIO).await;
    let mut owned = web(1, 500);
    owned[0].controller = Some(Arc::new(ekscale::model::Controller {
        kind: "ReplicaSet".into(),
        name: "web".into(),
        uid: "u".into(),
    }));
    let mut bare = web(1, 500);
    bare[0].name = "bare".into();
    cluster.create_pods(owned.into_iter().chain(bare));
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));

    // The provider deletes the only instance.
    let client = ProviderClient::new(&config).unwrap();
    let node = &view.nodes[0];
    client.refresh().await.unwrap();
    client
        .delete_nodes("general", &[(node.name.clone(), node.provider_id.clone())])
        .await
        .unwrap();
    server.sim().clock().advance(Duration::from_secs(120));
    let view = cluster.view().await.unwrap();
    assert!(view.nodes.is_empty());
    let names: Vec<&str> = view.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["web-0"], "the pod without a controller is gone");
    assert!(view.pods[0].unschedulable && view.pods[0].node_name.is_none());
}

/// A managed node group update on the simulated EKS, as the cluster sees it: nodes register with the image
/// their group has when they do, so the surge and the replacements carry the new one; the surge keeps the
/// group at its size while old nodes go one at a time; at the end every node is on the new image.
#[tokio::test]
async fn an_update_replaces_every_node_with_one_of_the_new_image() {
    use ekscale::model::NODE_GROUP_IMAGE_LABEL;
    let (server, _, cluster) = general(2).await;
    let images = |view: &ekscale::autoscaler::ClusterView| {
        let mut images: Vec<String> = (view.nodes.iter())
            .map(|n| {
                n.labels
                    .get(NODE_GROUP_IMAGE_LABEL)
                    .cloned()
                    .unwrap_or_default()
            })
            .collect();
        images.sort();
        images
    };
    let view = cluster.view().await.unwrap();
    assert_eq!(images(&view), ["ami-eks-amd64-1"; 2]);

    // One zone: a surge of one. Two old nodes over 300 s: replaced at 100 s and 200 s (each replacement
    // registering 30 s later), the surge off at 300 s; a terminated node leaves 10 s after.
    server
        .sim()
        .start_update("general", "ami-2", Duration::from_secs(300))
        .unwrap();
    let mut fewest = usize::MAX;
    for step in 1..=32 {
        server.sim().clock().advance(Duration::from_secs(10));
        let view = cluster.view().await.unwrap();
        fewest = fewest.min(view.nodes.len());
        if step == 4 {
            // 40 s: the surge has registered, on the new image.
            assert_eq!(
                images(&view),
                ["ami-2", "ami-eks-amd64-1", "ami-eks-amd64-1"]
            );
        }
    }
    assert_eq!(fewest, 2, "never below the group's size");
    let view = cluster.view().await.unwrap();
    assert_eq!(images(&view), ["ami-2"; 2]);
    assert_eq!(server.sim().target_size("general").unwrap(), 2);
}

#[tokio::test]
async fn a_group_at_max_size_still_counts_its_upcoming_nodes() {
    let scenario = "
cluster: full
region: us-east-1
nodeGroups:
  - {name: full, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 1, desiredSize: 1}
";
    let server = Server::start_with(scenario, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    // The instance runs but its node has not registered: it is upcoming, and the pod waits for it.
    let view = ekscale::autoscaler::ClusterView {
        pods: web(1, 500).into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    let status = once.run(&view, std::time::SystemTime::now()).await.unwrap();
    assert_eq!(status.placed.len(), 1, "{status:#?}");
    assert_eq!(status.placed[0].node_group.as_deref(), Some("full"));
    assert!(status.no_scale_up.is_empty());
}

#[tokio::test]
async fn instances_that_never_register_are_removed_and_their_group_backed_off() {
    let server = Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client.clone(), settings());
    let view = ekscale::autoscaler::ClusterView::default();
    let start = std::time::SystemTime::now();
    once.run(&view, start).await.unwrap();
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 1);

    // Past --max-node-provision-time (15 minutes) with no node: deleted, down to min size 0.
    let later = start + Duration::from_secs(901);
    let status = once.run(&view, later).await.unwrap();
    assert!(status.errors.is_empty(), "{status:#?}");
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 0);
    let later = later + Duration::from_secs(1);
    let status = once.run(&view, later).await.unwrap();
    let general = status
        .node_groups
        .iter()
        .find(|g| g.id == "general")
        .unwrap();
    assert!(
        general
            .skipped
            .as_deref()
            .unwrap()
            .contains("did not register within"),
        "{status:#?}"
    );
}

#[tokio::test]
async fn new_pods_are_batched_and_their_delays_honoured() {
    let server = Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let settings = Settings {
        wait_for_new_pods: true,
        ..Settings::default()
    };
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings);
    let now = std::time::SystemTime::now();
    let created = |ago: u64| Some(now - Duration::from_secs(ago));
    let mut pods = web(4, 1000);
    for pod in &mut pods {
        pod.created = created(1);
    }
    let view = |pods: Vec<Pod>| ekscale::autoscaler::ClusterView {
        pods: pods.into_iter().map(Arc::new).collect(),
        ..Default::default()
    };
    // All under 2 s old: wait one loop for more.
    let status = once.run(&view(pods.clone()), now).await.unwrap();
    assert!(status.scale_up.is_empty(), "{status:#?}");
    assert!(status.no_scale_up[0].reasons[""].contains("under 2s old"));
    // Three seconds later: go.
    let later = now + Duration::from_secs(3);
    let status = once.run(&view(pods.clone()), later).await.unwrap();
    assert_eq!(
        status.scale_up.iter().map(|s| s.pods.len()).sum::<usize>(),
        3,
        "{status:#?}"
    );

    // A pod's own delay annotation holds it back; GPU pods wait 30 s.
    pods[0].scale_up_delay = Some(Duration::from_secs(60));
    pods[1].demand.gpus = 1;
    pods[1].created = created(10);
    let status = once.run(&view(pods), later).await.unwrap();
    let reasons: Vec<&str> = status
        .no_scale_up
        .iter()
        .map(|p| p.reasons[""].as_str())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.starts_with("younger than its scale-up delay (1m")),
        "{reasons:?}"
    );
    assert!(reasons.iter().any(|r| r.contains("GPU pod")), "{reasons:?}");
    assert!(status.scale_up.is_empty());
}

#[tokio::test]
async fn pods_built_in_memory_are_matched_to_fargate_profiles_too() {
    let scenario = "
cluster: fargate
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 3, desiredSize: 0}
fargateProfiles:
  - {name: serverless, selectors: [{namespace: serverless}]}
";
    let (_server, config, cluster) = simulated(scenario).await;
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    let mut pods = web(2, 1000);
    pods[0].namespace = "serverless".into();
    pods[0].scheduler_name = "fargate-scheduler".into();
    pods[1].namespace = "serverless".into();
    cluster.create_pods(pods);
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let fargate: Vec<(&str, &str, bool)> = status
        .fargate
        .iter()
        .map(|f| (f.pod.as_str(), f.profile.as_str(), f.note.is_some()))
        .collect();
    assert_eq!(
        fargate,
        [
            ("serverless/web-0", "serverless", false),
            ("serverless/web-1", "serverless", true)
        ],
        "{status:#?}"
    );
    assert_eq!(status.fargate[0].capacity_provisioned, "1vCPU 2GB");
}

/// A PodDisruptionBudget over the pods of `app` allowing `max_unavailable` of them not running.
fn budget(app: &str, max_unavailable: i32) -> ekscale::simulated_cluster::Budget {
    ekscale::simulated_cluster::Budget {
        namespace: "default".into(),
        name: app.into(),
        selector: ekscale::model::LabelSelector {
            match_labels: [("app".to_string(), app.to_string())].into(),
            expressions: vec![],
        },
        max_unavailable,
    }
}

fn names<P: std::borrow::Borrow<Pod>>(pods: &[P]) -> std::collections::BTreeSet<String> {
    pods.iter().map(|p| p.borrow().key()).collect()
}

/// The cluster after one more step (`view` steps the simulator), checked to hold exactly the pods
/// `expected`: none lost.
async fn view_losing_nothing(
    cluster: &SimulatedCluster,
    expected: &std::collections::BTreeSet<String>,
    when: String,
) -> Arc<ekscale::autoscaler::ClusterView> {
    let view = cluster.view().await.unwrap();
    assert_eq!(&names(&view.pods), expected, "{when}: a pod was lost");
    view
}

/// The companion acting on `cluster` through the provider at `config`, unneeded nodes going after a
/// minute; and its provider client, to act beside it as another actor would.
fn acting_quickly(
    config: &ProviderConfig,
    cluster: &Arc<SimulatedCluster>,
) -> (ProviderClient, RunOnce) {
    let client = ProviderClient::new(config).unwrap();
    let mut fast = settings();
    fast.scale_down.unneeded_time = Duration::from_secs(60);
    let once = RunOnce::new(client.clone(), fast).acting_on(cluster.clone());
    (client, once)
}

#[tokio::test]
async fn a_burst_scales_up_then_back_down_and_no_pod_is_ever_lost() {
    let scenario = "
cluster: burst
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a, us-east-1b], minSize: 1, maxSize: 10, desiredSize: 1, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client.clone(), settings()).acting_on(cluster.clone());
    let clock = server.sim().clock().clone();
    cluster.create_pdb(budget("api", 1));

    // A steady service, then a burst of six 1-CPU pods: one m5.large (1930m) holds one of them. Once the
    // burst runs, a cache of four 500m pods lands one per burst node (first fit); when the burst ends, those
    // nodes are underutilized and must be drained, not just deleted.
    cluster.create_pods(owned("api", 2, 300, 1 << 30));
    cluster.view().await.unwrap();
    cluster.create_pods(owned("web", 6, 1000, 1 << 30));
    let mut expected = names(&cluster.pods());
    let mut most_nodes = 0;
    let mut states: std::collections::BTreeMap<String, usize> = Default::default();
    let mut drained = 0;
    let mut phase = 0;
    for loop_number in 0..400 {
        let view = view_losing_nothing(&cluster, &expected, format!("loop {loop_number}")).await;
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "loop {loop_number}: {status:#?}");
        most_nodes = most_nodes.max(view.nodes.len());
        for d in &status.scale_down.deletions {
            *states.entry(d.state.clone()).or_default() += 1;
        }
        drained += status
            .scale_down
            .nodes
            .iter()
            .filter(|s| s.reason == "underutilized")
            .count();
        let all_running = view.pods.iter().all(|p| p.node_name.is_some());
        if phase == 0 && all_running && view.pods.len() == 8 {
            cluster.create_pods(owned("cache", 4, 500, 1 << 30));
            phase = 1;
        } else if phase == 1 && all_running {
            // The burst ends: its pods go, as an HPA scaling in would delete them.
            cluster.delete_pods(|p| p.name.starts_with("web-"));
            phase = 2;
        }
        expected = names(&cluster.pods());
        clock.advance(Duration::from_secs(10));
    }
    assert_eq!(phase, 2, "the burst never got nodes");
    assert!(
        most_nodes >= 6,
        "the burst needed 6 nodes, got {most_nodes}"
    );
    assert!(
        drained >= 2,
        "nodes with cache pods were drained: {states:?}"
    );
    assert!(states.get("draining").is_some_and(|n| *n > 0), "{states:?}");
    let view = cluster.view().await.unwrap();
    // 600m of api and 2000m of cache need two m5.large, and two is what is left.
    assert_eq!(view.nodes.len(), 2, "{:#?}", view.nodes);
    assert_eq!(states.get("deleted"), Some(&(most_nodes - 2)), "{states:?}");
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    assert_eq!(names(&view.pods), expected);
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 2);
    // No taint of ours is left behind on the nodes that stay.
    for node in &view.nodes {
        assert!(
            !node.tainted(ekscale::model::TO_BE_DELETED_TAINT),
            "{:?}",
            node.taints
        );
    }
}

#[tokio::test]
async fn the_simulator_refuses_evictions_a_budget_forbids() {
    let (_server, _config, cluster) = simulated(SCENARIO).await;
    cluster.create_pods(owned("api", 2, 300, 1 << 30));
    cluster.create_pdb(budget("api", 1));
    let view = cluster.view().await.unwrap();
    assert_eq!(view.pdbs[0].disruptions_allowed, 1);
    cluster
        .evict("default", "api-0", Duration::from_secs(30))
        .await
        .unwrap();
    // api-0 is pending again (its ReplicaSet recreated it): no disruption left until it runs.
    let refused = cluster
        .evict("default", "api-1", Duration::from_secs(30))
        .await;
    assert!(
        matches!(
            refused,
            Err(ekscale::autoscaler::ClusterError::EvictionRefused { .. })
        ),
        "{refused:?}"
    );
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    assert_eq!(view.pdbs[0].disruptions_allowed, 1);
}

#[tokio::test]
async fn a_failed_delete_puts_the_node_back_in_service() {
    let scenario = "
cluster: race
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 1, maxSize: 5, desiredSize: 2, deletionDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let (client, mut once) = acting_quickly(&config, &cluster);
    let clock = server.sim().clock().clone();
    cluster.create_pods(owned("api", 1, 300, 1 << 30));

    // The pod's node stays (the group may lose one node only); the empty one is unneeded, then tainted.
    let view = cluster.view().await.unwrap();
    let busy = view.pods[0].node_name.as_deref().unwrap().to_string();
    let empty = view.nodes.iter().find(|n| n.name != busy).unwrap().clone();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(status.scale_down.deletions.is_empty(), "{status:#?}");
    clock.advance(Duration::from_secs(61));
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(status.scale_down.nodes.len(), 1, "{status:#?}");
    assert_eq!(status.scale_down.nodes[0].node, empty.name);
    assert_eq!(status.scale_down.nodes[0].reason, "empty");
    let tainted = cluster.nodes();
    let tainted = tainted.iter().find(|n| n.name == empty.name).unwrap();
    assert!(tainted.tainted(ekscale::model::TO_BE_DELETED_TAINT));

    // Meanwhile someone else removes the busy node: the group is at its min, so our delete must fail.
    let busy_node = view.nodes.iter().find(|n| n.name == busy).unwrap();
    client.refresh().await.unwrap();
    client
        .delete_nodes("general", &[(busy.clone(), busy_node.provider_id.clone())])
        .await
        .unwrap();
    clock.advance(Duration::from_secs(10));
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let failed: Vec<_> = status
        .scale_down
        .deletions
        .iter()
        .filter(|d| d.state == "failed")
        .collect();
    assert_eq!(failed.len(), 1, "{status:#?}");
    assert!(failed[0].detail.contains("min size reached"), "{failed:?}");
    assert!(status.errors[0].contains("stays in service"), "{status:#?}");

    // The taint is off: when the busy node's instance is gone, its pod lands on the node we kept.
    clock.advance(Duration::from_secs(31));
    let view = cluster.view().await.unwrap();
    assert_eq!(view.nodes.len(), 1);
    assert_eq!(view.nodes[0].name, empty.name);
    assert!(!view.nodes[0].tainted(ekscale::model::TO_BE_DELETED_TAINT));
    assert_eq!(view.pods[0].node_name.as_deref(), Some(empty.name.as_str()));
    // And the loop does not try again during the failure cooldown, nor below min size afterwards.
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(status.scale_down.nodes.is_empty(), "{status:#?}");
}

#[tokio::test]
async fn soft_taints_follow_unneeded_nodes_and_stale_taints_are_removed_at_start() {
    let (_server, config, cluster) = general(2).await;
    let view = cluster.view().await.unwrap();
    let (a, b) = (view.nodes[0].name.clone(), view.nodes[1].name.clone());
    // An earlier run died while removing `a`: its taint is still there.
    cluster
        .taint(
            &a,
            &ekscale::autoscaler::scaledown::to_be_deleted(cluster.now()),
        )
        .await
        .unwrap();
    // `b` is busy (a 1500m pod), `a` is empty.
    let mut busy = owned("busy", 1, 1500, 1 << 30);
    busy[0].scheduling = Arc::new(ekscale::model::Scheduling {
        node_selector: [("kubernetes.io/hostname".to_string(), b.clone())].into(),
        ..Default::default()
    });
    cluster.create_pods(busy);

    let mut once =
        RunOnce::new(ProviderClient::new(&config).unwrap(), settings()).acting_on(cluster.clone());
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(
        status
            .scale_down
            .deletions
            .iter()
            .any(|d| d.node == a && d.state == "restored"),
        "{status:#?}"
    );
    let taints = |name: &str| {
        cluster
            .nodes()
            .iter()
            .find(|n| n.name == name)
            .unwrap()
            .taints
            .iter()
            .map(|t| (t.key.clone(), t.effect.as_str()))
            .collect::<Vec<_>>()
    };
    // `a` is unneeded (its timer runs): soft-tainted, not removed yet.
    assert_eq!(
        taints(&a),
        [(DELETION_CANDIDATE.to_string(), "PreferNoSchedule")],
        "{status:#?}"
    );
    assert!(taints(&b).is_empty());
    let kept = status
        .scale_down
        .unremovable
        .iter()
        .find(|k| k.node == a)
        .unwrap();
    assert_eq!(kept.reason, "NotUnneededLongEnough");
    assert!(
        kept.detail.starts_with("unneeded for 0s of 10m"),
        "{kept:?}"
    );

    // Pods arrive that need `a`: the soft taint comes off.
    cluster.create_pods(owned("more", 1, 1500, 1 << 30));
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    once.run(&view, cluster.now()).await.unwrap();
    assert!(taints(&a).is_empty(), "{:?}", taints(&a));
}

const DELETION_CANDIDATE: &str = ekscale::model::DELETION_CANDIDATE_TAINT;

#[tokio::test]
async fn refused_evictions_are_retried_then_the_node_is_given_back() {
    use ekscale::autoscaler::scaledown::{
        Actuator, Cause, DeletionKind, DeletionOrder, Outcome, Pacing, StepGround,
    };
    let (server, config, cluster) = general(1).await;
    let client = ProviderClient::new(&config).unwrap();
    cluster.create_pods(owned("api", 1, 300, 1 << 30));
    cluster.create_pdb(budget("api", 0));
    let view = cluster.view().await.unwrap();
    let node = view.nodes[0].clone();
    let mut actuator = Actuator::default();
    let pacing = Pacing::default();
    let rules = ekscale::autoscaler::scaledown::Rules::default();
    let now = cluster.now();
    let order = DeletionOrder {
        node: &node,
        group: "general",
        kind: DeletionKind::Drain,
        cause: Cause::ScaleDown,
    };
    (actuator.start(&*cluster, order, now).await).unwrap();
    let clock = server.sim().clock().clone();
    let mut last = Vec::new();
    let updating = HashSet::new();
    // Every 10 s for 2 minutes the eviction is refused and retried; then the node is given back.
    for _ in 0..14 {
        clock.advance(Duration::from_secs(10));
        let view = cluster.view().await.unwrap();
        let ground = StepGround {
            cluster: &*cluster,
            client: &client,
            view: &view,
            rules: &rules,
            pacing: &pacing,
        };
        last = actuator.advance(&ground, &updating, cluster.now()).await;
        if matches!(last[..], [Outcome::Failed { .. }]) {
            break;
        }
        assert!(
            matches!(&last[..], [Outcome::Draining { waiting, .. }] if waiting.starts_with("the scheduler") || waiting.starts_with("refused evictions: default/api-0")),
            "{last:?}"
        );
    }
    let [Outcome::Failed { why, .. }] = &last[..] else {
        panic!("{last:?}");
    };
    assert!(why.contains("--max-pod-eviction-time 2m"), "{why}");
    let view = cluster.view().await.unwrap();
    assert!(
        view.nodes[0].taints.is_empty(),
        "the node is back in service"
    );
    assert_eq!(view.pods[0].node_name.as_deref(), Some(node.name.as_str()));
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 1);
}

/// An expired node's drain that a PodDisruptionBudget holds waits (it is not given back, as a scale-down's
/// is), says when it will be forced, and once its group's terminationGracePeriod has passed since the drain
/// began, the pod is deleted past its budget and the node goes.
#[tokio::test]
async fn a_grace_period_forces_a_drain_a_budget_holds() {
    use ekscale::autoscaler::scaledown::{
        Actuator, Cause, DeletionKind, DeletionOrder, Outcome, Pacing, StepGround,
    };
    let (server, config, cluster) = general(1).await;
    let client = ProviderClient::new(&config).unwrap();
    cluster.create_pods(owned("db", 1, 300, 1 << 30));
    cluster.create_pdb(budget("db", 0));
    let view = cluster.view().await.unwrap();
    let node = view.nodes[0].clone();
    let mut actuator = Actuator::default();
    let (pacing, rules) = (Pacing::default(), Default::default());
    let grace = Duration::from_secs(600);
    let cause = Cause::Disruption {
        reason: "expired",
        grace: Some(grace),
    };
    let started = cluster.now();
    let order = DeletionOrder {
        node: &node,
        group: "general",
        kind: DeletionKind::Drain,
        cause,
    };
    (actuator.start(&*cluster, order, started).await).unwrap();
    let clock = server.sim().clock().clone();
    let updating = HashSet::new();
    let mut held = false;
    let mut steps = 0;
    let deleted = loop {
        steps += 1;
        assert!(steps < 100, "the drain was never forced");
        clock.advance(Duration::from_secs(10));
        let now = cluster.now();
        let view = cluster.view().await.unwrap();
        let ground = StepGround {
            cluster: &*cluster,
            client: &client,
            view: &view,
            rules: &rules,
            pacing: &pacing,
        };
        let outcomes = actuator.advance(&ground, &updating, now).await;
        match &outcomes[..] {
            [
                Outcome::Draining {
                    held: Some("expired"),
                    waiting,
                    ..
                },
            ] => {
                assert!(waiting.contains("forced at"), "{waiting}");
                held = true;
                // The pod stays where it is while the drain is held.
                let db = view.pods.iter().find(|p| p.name == "db-0").unwrap();
                assert_eq!(db.node_name.as_deref(), Some(node.name.as_str()));
            }
            [Outcome::Draining { held: None, .. }] => {}
            [Outcome::Deleted { cause: c, .. }] => break (*c, now),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(deleted.0, cause);
    assert!(
        held,
        "refused evictions past --max-pod-eviction-time hold the drain"
    );
    // Forced once the grace period passed since the drain began (the first step after the taint's delay),
    // and gone at the steps after.
    let took = deleted.1.duration_since(started).unwrap();
    let (from, to) = (
        grace + pacing.delay_after_taint,
        grace + Duration::from_secs(40),
    );
    assert!(took >= from && took <= to, "{took:?}");
    let view = cluster.view().await.unwrap();
    assert!(
        view.pods
            .iter()
            .all(|p| p.name != "db-0" || p.node_name.as_deref() != Some(node.name.as_str()))
    );
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("general").await.unwrap(), 0);
}

/// How many pods of `cpu` millicores and `memory` bytes fit in the free room of the view's nodes.
fn room_for(view: &ekscale::autoscaler::ClusterView, cpu: u64, memory: u64) -> u64 {
    view.nodes
        .iter()
        .map(|node| {
            let used = view
                .pods
                .iter()
                .filter(|p| p.node_name.as_deref() == Some(node.name.as_str()))
                .fold(Resources::default(), |r, p| r.plus(p.demand));
            let free_cpu = node.allocatable.cpu_millis.saturating_sub(used.cpu_millis);
            let free_memory = node
                .allocatable
                .memory_bytes
                .saturating_sub(used.memory_bytes);
            (free_cpu / cpu).min(free_memory / memory)
        })
        .sum()
}

#[tokio::test]
async fn headroom_keeps_room_free_and_a_burst_lands_in_it_without_a_new_node() {
    let scenario = "
cluster: headroom
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.2xlarge, zones: [us-east-1a], minSize: 1, maxSize: 5, desiredSize: 1, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let policy: ekscale::autoscaler::headroom::PolicyFile = serde_norway::from_str(
        "{name: buffer, nodeGroup: general, pods: 5, shape: {cpu: '1', memory: 2Gi}}",
    )
    .unwrap();
    let settings = Settings {
        headroom: vec![ekscale::autoscaler::headroom::Policy::from_file(policy).unwrap()],
        ..settings()
    };
    let mut once =
        RunOnce::new(ProviderClient::new(&config).unwrap(), settings).acting_on(cluster.clone());
    let clock = server.sim().clock().clone();
    let (cpu, memory) = (1000, 2 << 30);

    // Four steady 1-CPU pods on the one m5.2xlarge leave room for three more: the policy wants five, so
    // one node is added for the other two.
    cluster.create_pods(owned("steady", 4, 1000, 1 << 30).into_iter().map(|mut p| {
        p.demand.memory_bytes = 2 << 30;
        p
    }));
    let view = cluster.view().await.unwrap();
    assert_eq!(room_for(&view, cpu, memory), 3);
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(scale_ups(&status), [("general", 1)], "{status:#?}");
    let h = &status.headroom[0];
    assert_eq!(
        (h.reserved, h.placed, h.scale_up, h.unmet),
        (5, 3, 2, 0),
        "{h:?}"
    );

    // Steady for half an hour: the room stays, nothing is added or removed (the room the headroom holds
    // keeps the second node from looking unneeded).
    let mut nodes = 0;
    for _ in 0..180 {
        clock.advance(Duration::from_secs(10));
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.scale_down.nodes.is_empty(), "{status:#?}");
        assert!(status.scale_up.is_empty(), "{status:#?}");
        nodes = view.nodes.len();
    }
    assert_eq!(nodes, 2);
    let view = cluster.view().await.unwrap();
    assert!(room_for(&view, cpu, memory) >= 5);

    // Bursts of five such pods land at once in that room: no pod waits, no node is added for them. The
    // second node had room for seven, so after the first burst there is still room for five; after the
    // second there is not, and the room is made again, ahead of the next burst.
    for (burst, made_again) in [("burst-a", false), ("burst-b", true)] {
        cluster.create_pods(owned(burst, 5, 1000, 1 << 30).into_iter().map(|mut p| {
            p.demand.memory_bytes = 2 << 30;
            p
        }));
        let view = cluster.view().await.unwrap();
        assert!(
            view.pods.iter().all(|p| p.node_name.is_some()),
            "{burst}: pods wait"
        );
        assert_eq!(view.nodes.len(), 2);
        let status = once.run(&view, cluster.now()).await.unwrap();
        let h = &status.headroom[0];
        if made_again {
            assert_eq!((h.placed, h.scale_up), (0, 5), "{status:#?}");
            assert_eq!(scale_ups(&status), [("general", 1)]);
        } else {
            assert_eq!((h.placed, h.scale_up), (5, 0), "{status:#?}");
            assert!(status.scale_up.is_empty());
        }
    }
}

#[tokio::test]
async fn placeholder_pods_of_negative_priority_are_preempted_and_scaled_up_for_as_upstream_documents()
 {
    let scenario = "
cluster: overprovisioning
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 1, maxSize: 5, desiredSize: 1}
";
    let (_server, config, cluster) = simulated(scenario).await;
    let mut once =
        RunOnce::new(ProviderClient::new(&config).unwrap(), settings()).acting_on(cluster.clone());
    // The overprovisioning Deployment: one 1500m pod at priority -1 holds most of the node.
    cluster.create_pods(
        owned("placeholder", 1, 1500, 1 << 30)
            .into_iter()
            .map(|mut p| {
                p.priority = Some(-1);
                p
            }),
    );
    let view = cluster.view().await.unwrap();
    assert!(view.pods[0].node_name.is_some());
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(status.scale_up.is_empty());

    // A real pod comes: it takes the placeholder's room at once, and the placeholder, pending now, gets a
    // node of its own (priority -1 is above the expendable cutoff of -10).
    cluster.create_pods(owned("real", 1, 1000, 1 << 30));
    let view = cluster.view().await.unwrap();
    let by_name = |name: &str| view.pods.iter().find(|p| p.name == name).unwrap();
    assert!(
        by_name("real-0").node_name.is_some(),
        "the real pod runs at once"
    );
    assert!(by_name("placeholder-0").node_name.is_none() && by_name("placeholder-0").unschedulable);
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(scale_ups(&status), [("general", 1)], "{status:#?}");
    assert_eq!(
        status.scale_up[0].pods.iter().collect::<Vec<_>>(),
        ["default/placeholder-0"]
    );
}

#[tokio::test]
async fn a_daemonset_with_no_pod_running_yet_still_takes_its_room_on_new_nodes() {
    let scenario = "
cluster: ds
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 3, desiredSize: 0}
";
    let (_server, config, _) = simulated(scenario).await;
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    let mut exporter = web(1, 500).remove(0);
    exporter.name = "exporter-template".into();
    exporter.controller = Some(Arc::new(ekscale::model::Controller {
        kind: "DaemonSet".into(),
        name: "exporter".into(),
        uid: "ds".into(),
    }));
    // A 1600m pod fits an empty m5.large (1930m) but not beside the 500m DaemonSet pod every node runs.
    let view = |daemonsets: Vec<Pod>| ekscale::autoscaler::ClusterView {
        pods: web(1, 1600).into_iter().map(Arc::new).collect(),
        daemonsets,
        ..Default::default()
    };
    let status = once
        .run(&view(vec![]), std::time::SystemTime::now())
        .await
        .unwrap();
    assert_eq!(scale_ups(&status), [("general", 1)]);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    let status = once
        .run(&view(vec![exporter]), std::time::SystemTime::now())
        .await
        .unwrap();
    assert!(status.scale_up.is_empty(), "{status:#?}");
    assert!(
        status.no_scale_up[0].reasons["general"]
            .contains("an empty node has 1430m free after its DaemonSets"),
        "{status:#?}"
    );
}

/// The provider the companion talks to, and a second one over the same simulated EKS for the cluster's
/// own view of it (kubelets and EKS do not stop when the provider process does).
async fn with_a_killable_provider(scenario: &str) -> (Server, Server, Arc<SimulatedCluster>) {
    let cloud = Server::start_with(scenario, None).await;
    let sim = cloud.shared_sim();
    let provider = Server::serve(sim.clone(), Some(sim), None).await;
    let config = ProviderConfig::plaintext(cloud.addr.to_string());
    let cluster = SimulatedCluster::new(&config, cloud.sim().clock().clone())
        .unwrap()
        .on_disagreement(OnDisagreement::Panic);
    (cloud, provider, Arc::new(cluster))
}

const RESTART: &str = "
cluster: restart
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 1, maxSize: 10, desiredSize: 1, provisioningDelay: 60s}
";

#[tokio::test]
async fn a_provider_killed_mid_scale_up_stops_the_companion_until_it_is_back_and_nothing_is_asked_twice()
 {
    let (cloud, mut provider, cluster) = with_a_killable_provider(RESTART).await;
    let client =
        ProviderClient::new(&ProviderConfig::plaintext(provider.addr.to_string())).unwrap();
    let mut once = RunOnce::new(client, settings()).acting_on(cluster.clone());
    let clock = cloud.sim().clock().clone();
    // Six 1-CPU pods: an m5.large (1930m) holds one; the group's first instance is starting, so five new.
    cluster.create_pods(owned("web", 6, 1000, 1 << 30));
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(scale_ups(&status), [("general", 5)]);

    // Killed while the instances start: every loop fails at Refresh and does nothing, while the cluster
    // goes on (instances come up, nodes register, pods bind).
    let sim = provider.kill();
    for loop_number in 0..12 {
        let view = cluster.view().await.unwrap();
        let error = once.run(&view, cluster.now()).await.unwrap_err();
        assert!(
            error.to_string().to_lowercase().contains("refresh"),
            "loop {loop_number}: {error}"
        );
        assert_eq!(sim.target_size("general").unwrap(), 6, "nothing acted");
        clock.advance(Duration::from_secs(10));
    }
    let provider = Server::restart(provider.addr, sim.clone()).await;

    // Back: the companion sees the nodes it asked for and asks for nothing more.
    for loop_number in 0..30 {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        assert!(status.errors.is_empty(), "loop {loop_number}: {status:#?}");
        assert!(
            status.scale_up.is_empty(),
            "loop {loop_number}: {status:#?}"
        );
        clock.advance(Duration::from_secs(10));
    }
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    assert_eq!(sim.target_size("general").unwrap(), 6);
    assert!(
        provider.requests("Refresh") > 0,
        "the restarted provider served"
    );
}

/// Runs the burst until its nodes drain, kills the provider while a drain is under way (and, with
/// `restart_companion`, the companion too), and checks that after both are back every node went at most
/// once, no pod was lost, and no taint of ours is left.
async fn scale_down_across_a_provider_restart(restart_companion: bool) {
    let (cloud, mut provider, cluster) = with_a_killable_provider(RESTART).await;
    let config = ProviderConfig::plaintext(provider.addr.to_string());
    let mut once =
        RunOnce::new(ProviderClient::new(&config).unwrap(), settings()).acting_on(cluster.clone());
    let clock = cloud.sim().clock().clone();
    cluster.create_pods(owned("api", 2, 300, 1 << 30));
    cluster.create_pods(owned("web", 6, 1000, 1 << 30));
    let mut expected = names(&cluster.pods());
    let mut deleted: std::collections::BTreeMap<String, usize> = Default::default();
    let mut phase = 0;
    let mut killed_at = None;
    let mut sim = None;
    for loop_number in 0..300 {
        let view = view_losing_nothing(&cluster, &expected, format!("loop {loop_number}")).await;
        let all_running = view.pods.iter().all(|p| p.node_name.is_some());
        if phase == 0 && all_running && view.pods.len() == 8 {
            cluster.create_pods(owned("cache", 4, 500, 1 << 30));
            phase = 1;
        } else if phase == 1 && all_running {
            cluster.delete_pods(|p| p.name.starts_with("web-"));
            phase = 2;
        }
        match &sim {
            Some(sim) if killed_at.is_some_and(|at| loop_number >= at + 12) => {
                // Back after two minutes; the companion restarted with it, or the same one going on.
                provider = Server::restart(provider.addr, Arc::clone(sim)).await;
                if restart_companion {
                    once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings())
                        .acting_on(cluster.clone());
                }
                killed_at = None;
            }
            Some(_) if killed_at.is_some() => {
                let result = once.run(&view, cluster.now()).await;
                assert!(
                    result.is_err(),
                    "loop {loop_number}: acted without a provider"
                );
                expected = names(&cluster.pods());
                clock.advance(Duration::from_secs(10));
                continue;
            }
            _ => {}
        }
        let status = once.run(&view, cluster.now()).await.unwrap();
        for d in &status.scale_down.deletions {
            if d.state == "deleted" {
                *deleted.entry(d.node.clone()).or_default() += 1;
            }
        }
        let draining = status
            .scale_down
            .deletions
            .iter()
            .any(|d| d.state == "draining");
        if draining && sim.is_none() {
            sim = Some(provider.kill());
            killed_at = Some(loop_number);
        }
        expected = names(&cluster.pods());
        clock.advance(Duration::from_secs(10));
    }
    assert!(sim.is_some(), "no drain happened to interrupt");
    assert!(deleted.values().all(|n| *n == 1), "{deleted:?}");
    let view = cluster.view().await.unwrap();
    // 600m of api and 2000m of cache need two m5.large, and two is what is left.
    assert_eq!(view.nodes.len(), 2, "{:#?}", view.nodes);
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    for node in &view.nodes {
        assert!(
            !node.tainted(ekscale::model::TO_BE_DELETED_TAINT),
            "{}: {:?}",
            node.name,
            node.taints
        );
    }
}

#[tokio::test]
async fn a_provider_killed_mid_drain_is_waited_for_and_no_node_goes_twice() {
    scale_down_across_a_provider_restart(false).await;
}

#[tokio::test]
async fn a_companion_and_provider_killed_mid_drain_leave_no_taint_behind() {
    scale_down_across_a_provider_restart(true).await;
}

/// A week of simulated time, one loop every two minutes, with random workloads from a seed: deployments come and
/// go and change size, some pods cannot move (no controller, or `safe-to-evict: "false"`), some have
/// budgets; one group often has no capacity. Checked at every loop: no pod is ever lost, no group is
/// ever outside [min, max], no node goes while it holds a pod that cannot move.
/// `EKSCALE_SOAK_SEED` picks another week; `EKSCALE_SOAK_DAYS` another length.
#[tokio::test]
async fn a_seeded_week_of_random_workloads_loses_nothing() {
    use ekscale::model::SafeToEvict;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    let seed: u64 = std::env::var("EKSCALE_SOAK_SEED").map_or(7, |s| s.parse().unwrap());
    let days: u64 = std::env::var("EKSCALE_SOAK_DAYS").map_or(7, |s| s.parse().unwrap());
    let scenario = "
cluster: soak
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b], minSize: 1, maxSize: 12, desiredSize: 1, provisioningDelay: 90s}
  - {name: large, instanceType: m5.2xlarge, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 0, provisioningDelay: 2m}
  - {name: scarce, instanceType: c5.xlarge, zones: [us-east-1c], minSize: 0, maxSize: 6, desiredSize: 0, availableCapacity: 1}
";
    let (server, config, cluster) = simulated(scenario).await;
    let client = ProviderClient::new(&config).unwrap();
    let mut once = RunOnce::new(client, settings()).acting_on(cluster.clone());
    let sim = server.shared_sim();
    let clock = sim.clock().clone();
    let bounds: Vec<(String, i32, i32)> = sim
        .node_groups()
        .iter()
        .map(|g| (g.id.clone(), g.min_size, g.max_size))
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut expected = names(&cluster.pods());
    let mut apps: Vec<String> = Vec::new();
    let (mut created, mut deleted_pods, mut pinned) = (0usize, 0usize, 0usize);
    let (mut scale_ups, mut nodes_removed, mut most_nodes) = (0u64, 0usize, 0usize);
    let mut pinned_on: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    let mut pinned_checks = 0usize;
    let loops = days * 24 * 30;
    for minute in 0..loops {
        // About every 20 minutes something changes; as much goes as comes.
        if rng.random_bool(0.1) {
            match rng.random_range(0..10) {
                0..=3 => {
                    let app = format!("app{minute}");
                    let count = rng.random_range(1..8);
                    let cpu = rng.random_range(1..16) * 100;
                    let mut pods = owned(&app, count, cpu, 1 << 30);
                    for pod in &mut pods {
                        pod.demand.memory_bytes = rng.random_range(1..24) << 28;
                    }
                    if rng.random_bool(0.3) {
                        cluster.create_pdb(budget(&app, 1));
                    }
                    created += pods.len();
                    cluster.create_pods(pods);
                    apps.push(app);
                }
                4 => {
                    // A pod nothing may move: bare, or annotated not safe to evict.
                    let mut pod = owned(&format!("pinned{minute}"), 1, 200, 1 << 30).remove(0);
                    if rng.random_bool(0.5) {
                        pod.controller = None;
                    } else {
                        pod.disruption.safe_to_evict = SafeToEvict::No;
                    }
                    pinned += 1;
                    created += 1;
                    cluster.create_pods([pod]);
                }
                5 => {
                    let pinned_pods: Vec<String> = cluster
                        .pods()
                        .iter()
                        .filter(|p| p.name.starts_with("pinned"))
                        .map(|p| p.name.clone())
                        .collect();
                    if !pinned_pods.is_empty() {
                        let name = pinned_pods[rng.random_range(0..pinned_pods.len())].clone();
                        deleted_pods += 1;
                        cluster.delete_pods(|p| p.name == name);
                    }
                }
                _ => {
                    if !apps.is_empty() {
                        let app = apps.swap_remove(rng.random_range(0..apps.len()));
                        let prefix = format!("{app}-");
                        deleted_pods += cluster
                            .pods()
                            .iter()
                            .filter(|p| p.name.starts_with(&prefix))
                            .count();
                        cluster.delete_pods(|p| p.name.starts_with(&prefix));
                    }
                }
            }
            expected = names(&cluster.pods());
        }

        let when = format!("seed {seed}, minute {minute}");
        let view = view_losing_nothing(&cluster, &expected, when).await;
        // A node that went since the last loop held no pod that cannot move (unless we deleted it).
        for (node, pods) in &pinned_on {
            if view.nodes.iter().any(|n| &n.name == node) {
                continue;
            }
            pinned_checks += 1;
            let still_there: Vec<&String> = pods.iter().filter(|p| expected.contains(*p)).collect();
            assert!(
                still_there.is_empty(),
                "seed {seed}, minute {minute}: {node} removed under {still_there:?}"
            );
        }
        let status = once.run(&view, cluster.now()).await.unwrap();
        scale_ups += status.scale_up.iter().map(|s| s.delta).sum::<u64>();
        nodes_removed += status
            .scale_down
            .deletions
            .iter()
            .filter(|d| d.state == "deleted")
            .count();
        for (id, min, max) in &bounds {
            let target = sim.target_size(id).unwrap();
            assert!(
                (*min..=*max).contains(&target),
                "seed {seed}, minute {minute}: {id} at {target}, outside [{min}, {max}]"
            );
        }
        most_nodes = most_nodes.max(view.nodes.len());
        // Where the pods that cannot move are now, for the next loop's check.
        pinned_on.clear();
        for pod in view.pods.iter().filter(|p| p.name.starts_with("pinned")) {
            if let Some(node) = &pod.node_name {
                pinned_on
                    .entry(node.to_string())
                    .or_default()
                    .push(pod.key());
            }
        }
        expected = names(&cluster.pods());
        clock.advance(Duration::from_secs(120));
    }
    println!(
        "soak (seed {seed}, {days} days, {loops} loops): {created} pods created ({pinned} unmovable), \
         {deleted_pods} deleted, {scale_ups} nodes asked for, {nodes_removed} removed, {pinned_checks} nodes that had held an unmovable pod removed after it went, \
         at most {most_nodes} nodes; no pod lost, no group out of bounds"
    );
    assert!(
        scale_ups > 0 && nodes_removed > 0 && created > 100,
        "the week was too quiet to prove anything"
    );
}

/// The node is drained (its pods evicted and running elsewhere), then DeleteNodes fails because someone
/// else took the group to its min meanwhile: the node goes back into service, the pods of the node the
/// other actor removed land on it, and no pod is lost on the way.
#[tokio::test]
async fn a_delete_that_fails_after_the_drain_puts_the_node_back_and_loses_nothing() {
    let scenario = "
cluster: drained
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 2, maxSize: 5, desiredSize: 2, provisioningDelay: 30s, deletionDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    let (client, mut once) = acting_quickly(&config, &cluster);
    let clock = server.sim().clock().clone();

    // Two small pods on the first node, a big one on the second, another big one on a third (scaled up
    // for): the first node is underutilized (600m of 1930m) and its pods fit beside the big ones.
    cluster.create_pods(owned("small", 2, 300, 1 << 30));
    cluster.view().await.unwrap();
    cluster.create_pods(owned("big", 2, 1500, 1 << 30));
    let mut expected = names(&cluster.pods());
    let mut drained = None;
    let mut failed = None;
    for loop_number in 0..120 {
        let view = view_losing_nothing(&cluster, &expected, format!("loop {loop_number}")).await;
        let status = once.run(&view, cluster.now()).await.unwrap();
        if drained.is_none()
            && let Some(d) = status
                .scale_down
                .deletions
                .iter()
                .find(|d| d.state == "draining")
        {
            // The drain is under way (its pods evicted: none is left bound to it), and another actor removes
            // a node of the group, which is now at its min.
            let node = d.node.clone();
            assert!(
                cluster
                    .pods()
                    .iter()
                    .all(|p| p.node_name.as_deref() != Some(node.as_str())),
                "{:#?}",
                cluster.pods()
            );
            let other = view
                .nodes
                .iter()
                .find(|n| n.name != node)
                .expect("another node");
            client.refresh().await.unwrap();
            client
                .delete_nodes(
                    "general",
                    &[(other.name.clone(), other.provider_id.clone())],
                )
                .await
                .unwrap();
            drained = Some(node);
        }
        if let Some(d) = status
            .scale_down
            .deletions
            .iter()
            .find(|d| d.state == "failed")
        {
            assert_eq!(Some(&d.node), drained.as_ref(), "{status:#?}");
            assert!(d.detail.contains("min size reached"), "{d:?}");
            failed = Some(loop_number);
        }
        expected = names(&cluster.pods());
        clock.advance(Duration::from_secs(10));
        if failed.is_some_and(|at| loop_number > at + 12) {
            break;
        }
    }
    let drained = drained.expect("no drain started");
    assert!(failed.is_some(), "the delete never failed");
    let view = cluster.view().await.unwrap();
    let node = view
        .nodes
        .iter()
        .find(|n| n.name == drained)
        .expect("the drained node is still in the cluster");
    assert!(!node.tainted(ekscale::model::TO_BE_DELETED_TAINT));
    assert!(
        view.pods.iter().all(|p| p.node_name.is_some()),
        "{:#?}",
        view.pods
    );
    assert!(
        view.pods
            .iter()
            .any(|p| p.node_name.as_deref() == Some(drained.as_str())),
        "the node took pods again: {:#?}",
        view.pods
    );
    assert_eq!(names(&view.pods), expected);
}

/// `view` as a cache that lost every pod shows it: the same nodes and DaemonSets, no pods.
fn without_pods(view: &ekscale::autoscaler::ClusterView) -> ekscale::autoscaler::ClusterView {
    ekscale::autoscaler::ClusterView {
        nodes: view.nodes.clone(),
        daemonsets: view.daemonsets.clone(),
        now: view.now,
        ..Default::default()
    }
}

/// A loop's deletions as (node, state).
fn deletions(status: &ekscale::autoscaler::status::Status) -> Vec<(String, String)> {
    status
        .scale_down
        .deletions
        .iter()
        .map(|d| (d.node.clone(), d.state.clone()))
        .collect()
}

/// A view that lost its pods (a watch that relisted and got an empty answer, a cache not yet synced after a
/// leader change) makes no node look empty: while it lasts nothing is tainted or deleted, and when the pods
/// are back every node and pod is still there. A real drop still scales down, once it has lasted the
/// unneeded time; and no more empty nodes than `--max-empty-bulk-delete` start going in one loop.
#[tokio::test]
async fn a_view_that_lost_its_pods_taints_and_deletes_nothing() {
    let (_server, config, cluster) = general(3).await;
    // Four 400m pods per node: every node is needed.
    cluster.create_pods(owned("web", 12, 400, 1 << 30));
    let (_, mut once) = acting_quickly(&config, &cluster);
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    let t0 = cluster.now();
    let status = once.run(&view, t0).await.unwrap();
    assert!(
        status.scale_down.nodes.is_empty(),
        "{:?}",
        status.scale_down.nodes
    );
    let untouched = |cluster: &SimulatedCluster| {
        let nodes = cluster.nodes();
        assert_eq!(nodes.len(), 3, "a node went");
        for node in &nodes {
            assert!(
                node.taints.is_empty(),
                "{} tainted: {:?}",
                node.name,
                node.taints
            );
        }
    };

    // The view loses every pod for a while (longer than the unneeded time of one minute would need).
    let stale = without_pods(&view);
    for seconds in [10, 30, 50] {
        let status = once
            .run(&stale, t0 + Duration::from_secs(seconds))
            .await
            .unwrap();
        assert!(
            status.scale_down.nodes.is_empty(),
            "{:?}",
            status.scale_down.nodes
        );
        assert!(
            status.scale_down.deletions.is_empty(),
            "{:?}",
            status.scale_down.deletions
        );
        assert_eq!(status.scale_down.unremovable.len(), 3);
        for kept in &status.scale_down.unremovable {
            assert_eq!(kept.reason, "UntrustedClusterView", "{kept:?}");
            assert!(
                kept.detail
                    .contains("holds 0 pods on nodes where the last trusted one held 12")
            );
        }
        untouched(&cluster);
    }
    // The pods are back: nothing was lost, and the nodes are needed as before.
    let view = cluster.view().await.unwrap();
    assert_eq!(view.pods.len(), 12);
    let status = once.run(&view, t0 + Duration::from_secs(70)).await.unwrap();
    assert!(
        status.scale_down.nodes.is_empty(),
        "{:?}",
        status.scale_down.nodes
    );
    untouched(&cluster);

    // A real drop: held for the unneeded time, then believed; the nodes go after their own unneeded time,
    // at most `--max-empty-bulk-delete` (here 2) at once.
    once = {
        let client = ProviderClient::new(&config).unwrap();
        let mut s = settings();
        s.scale_down.unneeded_time = Duration::from_secs(60);
        s.scale_down.max_empty_bulk_delete = 2;
        let mut once = RunOnce::new(client, s).acting_on(cluster.clone());
        once.run(&view, t0 + Duration::from_secs(70)).await.unwrap();
        once
    };
    cluster.delete_pods(|_| true);
    let view = cluster.view().await.unwrap();
    assert!(view.pods.is_empty());
    let at = |s: u64| t0 + Duration::from_secs(70 + s);
    let status = once.run(&view, at(10)).await.unwrap();
    assert_eq!(
        status.scale_down.unremovable[0].reason,
        "UntrustedClusterView"
    );
    untouched(&cluster);
    let status = once.run(&view, at(71)).await.unwrap();
    assert!(
        status
            .scale_down
            .unremovable
            .iter()
            .all(|k| k.reason == "NotUnneededLongEnough"),
        "{:?}",
        status.scale_down.unremovable
    );
    let status = once.run(&view, at(132)).await.unwrap();
    assert_eq!(
        status.scale_down.nodes.len(),
        2,
        "{:?}",
        status.scale_down.nodes
    );
    let capped: Vec<_> = status
        .scale_down
        .unremovable
        .iter()
        .filter(|k| k.reason == "DeletionBudgetReached")
        .collect();
    assert_eq!(capped.len(), 1, "{:?}", status.scale_down.unremovable);
    assert!(
        capped[0].detail.contains("--max-empty-bulk-delete"),
        "{capped:?}"
    );
}

/// A copy of `view` whose nodes `down` says so of are NotReady.
fn with_unready(
    view: &ekscale::autoscaler::ClusterView,
    mut down: impl FnMut(&ekscale::model::Node) -> bool,
) -> ekscale::autoscaler::ClusterView {
    ekscale::autoscaler::ClusterView {
        nodes: view
            .nodes
            .iter()
            .map(|n| {
                Arc::new(ekscale::model::Node {
                    ready: !down(n),
                    ..(**n).clone()
                })
            })
            .collect(),
        pods: view.pods.clone(),
        daemonsets: view.daemonsets.clone(),
        now: view.now,
        ..Default::default()
    }
}

/// A zone's nodes turn NotReady (an outage, a network partition): more than `--ok-total-unready-count` (3)
/// and more than `--max-total-unready-percentage` (45%) of the nodes are unready, so the loop neither scales up
/// nor down, says why, and forgets its unneeded timers; when the nodes are back, scaling resumes.
#[tokio::test]
async fn an_unhealthy_cluster_stops_the_loop_until_its_nodes_are_back() {
    let scenario = "
cluster: outage
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 10, desiredSize: 6}
";
    let (_server, config, cluster) = simulated(scenario).await;
    // One 1500m pod per node, and a seventh that needs a new node.
    cluster.create_pods(owned("web", 7, 1500, 1 << 30));
    let (_, mut once) = acting_quickly(&config, &cluster);
    let view = cluster.view().await.unwrap();
    assert_eq!(view.nodes.len(), 6);
    let zone = |n: &ekscale::model::Node| n.labels[ekscale::model::ZONE_LABEL].clone();
    let zone_b: Vec<_> = view
        .nodes
        .iter()
        .filter(|n| zone(n) == "us-east-1b")
        .collect();
    assert_eq!(zone_b.len(), 3, "the group balances its zones");
    // Zone b and one node of zone a go NotReady, for longer than --max-node-startup-time (15m).
    let first_a = view
        .nodes
        .iter()
        .find(|n| zone(n) == "us-east-1a")
        .unwrap()
        .name
        .clone();
    let outage = with_unready(&view, |n| zone(n) == "us-east-1b" || n.name == first_a);
    let later = cluster.now() + Duration::from_secs(20 * 60);
    for minutes in [0, 2, 4] {
        let status = once
            .run(&outage, later + Duration::from_secs(minutes * 60))
            .await
            .unwrap();
        let health = &status.cluster_health;
        assert!(!health.healthy, "{health:?}");
        assert_eq!((health.ready_nodes, health.unready_nodes), (2, 4));
        assert!(
            health.reason.starts_with("4 of 6 nodes are unready"),
            "{health:?}"
        );
        assert!(status.scale_up.is_empty(), "{:?}", status.scale_up);
        assert!(status.scale_down.nodes.is_empty() && status.scale_down.deletions.is_empty());
        let json: serde_json::Value = serde_json::from_str(&status.to_json()).unwrap();
        assert_eq!(json["clusterHealth"]["healthy"], false);
        assert_eq!(json["clusterHealth"]["unreadyNodes"], 4);
        assert!(
            status
                .to_table()
                .starts_with("Cluster unhealthy: 4 of 6 nodes")
        );
    }
    assert_eq!(cluster.nodes().len(), 6, "nothing deleted");
    assert!(cluster.nodes().iter().all(|n| n.taints.is_empty()));

    // Back: the seventh pod gets its node.
    let status = once
        .run(&view, later + Duration::from_secs(6 * 60))
        .await
        .unwrap();
    assert!(status.cluster_health.healthy);
    assert_eq!(status.cluster_health.ready_nodes, 6);
    assert_eq!(scale_ups(&status), [("general", 1)]);
}

/// A group whose own nodes are mostly unready (a broken AMI, a CNI that never starts) is not scaled up while
/// the cluster as a whole is healthy: the pending pod goes to another group, although the expander would
/// have picked the broken one.
#[tokio::test]
async fn a_group_whose_nodes_are_mostly_unready_is_not_scaled_up() {
    let scenario = "
cluster: broken
region: us-east-1
nodeGroups:
  - {name: broken, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 5}
  - {name: big, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 6}
";
    let (_server, config, cluster) = simulated(scenario).await;
    let view = cluster.view().await.unwrap();
    assert_eq!(view.nodes.len(), 11);
    let later = cluster.now() + Duration::from_secs(20 * 60);
    let groups = |s: &ekscale::autoscaler::status::Status, id: &str| {
        s.node_groups.iter().find(|g| g.id == id).unwrap().clone()
    };
    let pod = || {
        let mut pod = owned("one", 1, 1500, 1 << 30);
        pod[0].unschedulable = true;
        pod
    };
    let mut pending = ekscale::autoscaler::ClusterView {
        nodes: view.nodes.clone(),
        pods: pod().into_iter().map(Arc::new).collect(),
        now: view.now,
        ..Default::default()
    };
    // Every node is taken: no node has room for the pod.
    pending.nodes = pending
        .nodes
        .iter()
        .map(|n| {
            Arc::new(ekscale::model::Node {
                allocatable: Resources::default(),
                ..(**n).clone()
            })
        })
        .collect();
    // Healthy: least-waste would put a 1500m pod on an m5.large of `broken` (planned, not asked for).
    let dry = Settings {
        act: false,
        ..settings()
    };
    let mut planning = RunOnce::new(ProviderClient::new(&config).unwrap(), dry);
    let status = planning.run(&pending, later).await.unwrap();
    assert_eq!(scale_ups(&status), [("broken", 1)], "{status:#?}");

    // Four of broken's five nodes never turned Ready: 4 unready of 11 leaves the cluster healthy.
    let (_, mut once) = acting_quickly(&config, &cluster);
    let mut seen = 0;
    let sick = with_unready(&pending, |n| {
        let mine = n
            .labels
            .get("node.kubernetes.io/instance-type")
            .map(String::as_str)
            == Some("m5.large");
        seen += usize::from(mine);
        mine && seen <= 4
    });
    let status = once.run(&sick, later).await.unwrap();
    assert!(status.cluster_health.healthy, "{:?}", status.cluster_health);
    assert_eq!(status.cluster_health.unready_nodes, 4);
    assert_eq!(
        groups(&status, "broken").skipped.as_deref(),
        Some("not ready for scale-up: 4 of its 5 nodes are unready")
    );
    assert_eq!(scale_ups(&status), [("big", 1)], "{status:#?}");
}

/// Ten pending pods and a node group the priority expander prefers whose instances fail as `how` says; the
/// loop runs every simulated minute for an hour. The broken group must peak at `peak` nodes and be skipped at
/// some point for a reason containing `skipped_for`; every pod must end up on the other group.
async fn an_hour_with_a_broken_group(
    how: ekscale::simulated_cluster::Broken,
    peak: i32,
    skipped_for: &str,
) {
    let scenario = "
cluster: runaway
region: us-east-1
nodeGroups:
  - {name: broken, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 20, desiredSize: 0, provisioningDelay: 30s}
  - {name: good, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 30, desiredSize: 10, provisioningDelay: 30s}
";
    let (server, config, cluster) = simulated(scenario).await;
    // `good`'s ten nodes are full (3800m of 3920m each): ten 400m pods need new nodes, 4 to an m5.large.
    cluster.create_pods(owned("base", 10, 3800, 1 << 30));
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    cluster.break_nodes("broken", how);
    cluster.create_pods(owned("web", 10, 400, 1 << 30));
    let dir = tempfile::tempdir().unwrap();
    let priorities = dir.path().join("priorities.yaml");
    std::fs::write(&priorities, "10: [broken]\n1: [good]\n").unwrap();
    let mut s = settings();
    s.expander = ekscale::autoscaler::scaleup::Expander {
        chain: vec![
            ekscale::autoscaler::scaleup::Strategy::Priority,
            ekscale::autoscaler::scaleup::Strategy::LeastWaste,
        ],
        priorities: Some(priorities),
    };
    let mut once =
        RunOnce::new(ProviderClient::new(&config).unwrap(), s).acting_on(cluster.clone());
    let mut most = 0;
    let mut skipped = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let view = cluster.view().await.unwrap();
        let status = once.run(&view, cluster.now()).await.unwrap();
        let broken = status
            .node_groups
            .iter()
            .find(|g| g.id == "broken")
            .unwrap();
        most = most.max(broken.target_size);
        skipped.extend(broken.skipped.clone());
        server.sim().clock().advance(Duration::from_secs(60));
    }
    // The pods run, on `good`'s new nodes.
    let view = cluster.view().await.unwrap();
    let type_of = |node: &str| {
        let node = view.nodes.iter().find(|n| n.name == node).unwrap();
        node.labels["node.kubernetes.io/instance-type"].clone()
    };
    for pod in view.pods.iter().filter(|p| p.name.starts_with("web-")) {
        let node = pod
            .node_name
            .as_deref()
            .unwrap_or_else(|| panic!("{} still pending", pod.name));
        assert_eq!(type_of(node), "m5.xlarge", "{} on {node}", pod.name);
    }
    assert_eq!(most, peak, "broken grew to {most} nodes");
    assert!(
        skipped.iter().any(|s| s.contains(skipped_for)),
        "{skipped:?}"
    );
}

/// No runaway scale-up: a group whose nodes register but never turn Ready holds what the pods need (3 nodes)
/// plus one more round: once the first 3 are past --max-node-startup-time they count as unready, not upcoming,
/// yet 3 unready nodes do not make a group unhealthy (more than 3 do). With 6 it is skipped as not ready for
/// scale-up, and the other group takes the pods.
#[tokio::test]
async fn nodes_that_never_turn_ready_do_not_run_away_and_another_group_takes_the_pods() {
    use ekscale::simulated_cluster::Broken;
    an_hour_with_a_broken_group(Broken::NeverReady, 6, "not ready for scale-up").await;
}

/// The same when the instances never register: what the pods need is asked once, removed after
/// --max-node-provision-time, the group backed off, and the other group takes the pods.
#[tokio::test]
async fn instances_that_never_register_do_not_run_away_and_another_group_takes_the_pods() {
    use ekscale::simulated_cluster::Broken;
    an_hour_with_a_broken_group(Broken::NeverRegister, 3, "did not register within").await;
}

/// A deletion already under way waits while the view has lost its pods (its drain would find the node empty
/// and delete it before its pods had gone), and goes on once the view is back.
#[tokio::test]
async fn deletions_in_progress_pause_while_the_view_has_lost_its_pods() {
    let (_server, config, cluster) = general(4).await;
    // Three nodes with four 400m pods each; the fourth stays empty.
    cluster.create_pods(owned("web", 12, 400, 1 << 30));
    let (_, mut once) = acting_quickly(&config, &cluster);
    let t0 = cluster.now();
    let view = cluster.view().await.unwrap();
    let empty: Vec<String> = view
        .nodes
        .iter()
        .filter(|n| {
            !view
                .pods
                .iter()
                .any(|p| p.node_name.as_deref() == Some(n.name.as_str()))
        })
        .map(|n| n.name.clone())
        .collect();
    assert_eq!(empty.len(), 1, "{:?}", view.pods);
    once.run(&view, t0).await.unwrap();
    let status = once
        .run(&cluster.view().await.unwrap(), t0 + Duration::from_secs(61))
        .await
        .unwrap();
    assert_eq!(
        deletions(&status),
        [(empty[0].clone(), "started".to_string())]
    );

    // The view loses its pods: the deletion takes no step.
    let view = cluster.view().await.unwrap();
    let stale = without_pods(&view);
    for seconds in [70, 90] {
        let status = once
            .run(&stale, t0 + Duration::from_secs(seconds))
            .await
            .unwrap();
        assert_eq!(
            deletions(&status),
            [(empty[0].clone(), "paused".to_string())]
        );
        assert!(
            status.scale_down.deletions[0]
                .detail
                .contains("holds 0 pods on nodes")
        );
        assert_eq!(cluster.nodes().len(), 4, "nothing deleted");
    }

    // Back: the deletion goes on to the end.
    let mut states = Vec::new();
    for step in 0..10 {
        let view = cluster.view().await.unwrap();
        let status = once
            .run(&view, t0 + Duration::from_secs(100 + 10 * step))
            .await
            .unwrap();
        states.extend(status.scale_down.deletions.iter().map(|d| d.state.clone()));
        if states.iter().any(|s| s == "deleted") {
            break;
        }
    }
    assert!(states.iter().any(|s| s == "deleted"), "{states:?}");
}
