//! The kube-rs cluster source against a fake API server on loopback, at the HTTP layer: lists and watches
//! fill the caches, a pod turning Unschedulable wakes the loop, taints are patched against the version read,
//! evictions get the API server's 201, 429 (a PDB) and 404, a relist that lost the pods makes no node look
//! empty, and a pod the watch has not delivered keeps its node.

mod common;

use common::kube_api::{self, Fake, Objects, node, pod};
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::control::Kube;
use ekscale::autoscaler::{ClusterError, ClusterSource};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::model::{Taint, TaintEffect};
use serde_json::json;
use std::time::Duration;

async fn source(objects: Objects) -> (Kube, Fake) {
    kube_api::connect(objects).await
}

#[tokio::test]
async fn lists_fill_the_view_and_watches_keep_it_current() {
    let objects = Objects {
        nodes: vec![node("a"), node("b")],
        pods: vec![pod("web-0", Some("a")), pod("web-1", None)],
        pdbs: vec![
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}}},
                          "status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 1,
                                     "expectedPods": 2}}),
        ],
        daemonsets: vec![json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node-exporter", "namespace": "monitoring", "uid": "ds-1"},
            "spec": {"selector": {"matchLabels": {"app": "node-exporter"}},
                     "template": {"metadata": {"labels": {"app": "node-exporter"}},
                                  "spec": {"containers": [{"name": "e",
                                           "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                                           "tolerations": [{"operator": "Exists"}]}}}})],
        ..Objects::default()
    };
    let (kube, fake) = source(objects).await;
    let view = kube.view().await.unwrap();
    assert_eq!(view.nodes.len(), 2);
    assert_eq!(view.nodes[0].allocatable.cpu_millis, 2000);
    assert_eq!(view.pods.len(), 2);
    assert_eq!(view.pdbs[0].disruptions_allowed, 1);
    // A DaemonSet stands for the pod it would run on a new node.
    let ds = &view.daemonsets[0];
    assert!(ds.daemonset());
    assert_eq!(ds.key(), "monitoring/node-exporter-template");
    assert_eq!(ds.demand.cpu_millis, 100);

    // web-1 turns Unschedulable: the watch updates the cache and wakes the loop.
    let event = json!({"type": "MODIFIED", "object": kube_api::unschedulable("web-1", "11")});
    fake.send_when_watched(4, "pods", event).await;
    tokio::time::timeout(Duration::from_secs(5), kube.unschedulable_pod())
        .await
        .expect("an unschedulable pod wakes the loop");
    let view = kube.view().await.unwrap();
    let web1 = view.pods.iter().find(|p| p.name == "web-1").unwrap();
    assert!(web1.unschedulable);
    assert!(
        web1.json.is_some(),
        "pending pods keep their JSON for MatchPod"
    );
}

/// The view a source keeps from watch events equals the one a source that lists the same objects from scratch
/// builds: nodes and pods added, changed and deleted (and a pod that cannot be read) leave nothing stale.
#[tokio::test]
async fn the_view_after_a_stream_of_watch_events_equals_one_built_from_scratch() {
    let mut web0 = pod("web-0", Some("a"));
    web0["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let objects = Objects {
        nodes: vec![node("a"), node("b")],
        pods: vec![web0, pod("web-1", None), pod("web-2", Some("b"))],
        ..Objects::default()
    };
    let (kube, fake) = source(objects).await;
    let mut relabelled = node("b");
    relabelled["metadata"]["labels"]["team"] = json!("batch");
    relabelled["metadata"]["resourceVersion"] = json!("8");
    let mut broken = pod("web-2", Some("b"));
    broken["metadata"]["resourceVersion"] = json!("9");
    broken["spec"]["containers"][0]["resources"]["requests"]["cpu"] = json!("lots");
    let mut moved = pod("web-3", Some("c"));
    moved["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let events = [
        ("nodes", json!({"type": "ADDED", "object": node("c")})),
        ("nodes", json!({"type": "DELETED", "object": node("a")})),
        ("nodes", json!({"type": "MODIFIED", "object": relabelled})),
        (
            "pods",
            json!({"type": "DELETED", "object": pod("web-0", Some("a"))}),
        ),
        ("pods", json!({"type": "ADDED", "object": moved})),
        ("pods", json!({"type": "MODIFIED", "object": broken})),
        // Last: the wake-up that says the pods' events are in.
        (
            "pods",
            json!({"type": "MODIFIED", "object": kube_api::unschedulable("web-1", "11")}),
        ),
    ];
    for (resource, event) in events {
        fake.send_when_watched(4, resource, event).await;
    }
    tokio::time::timeout(Duration::from_secs(5), kube.unschedulable_pod())
        .await
        .expect("the last pod event wakes the loop");
    // The nodes' watch is a stream of its own: wait until its three events are in.
    let names = |view: &ekscale::autoscaler::ClusterView| {
        let mut names: Vec<String> = view.nodes.iter().map(|n| n.name.clone()).collect();
        names.sort();
        names
    };
    let updated = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let view = kube.view().await.unwrap();
            if names(&view) == ["b", "c"]
                && view.nodes.iter().any(|n| n.labels.contains_key("team"))
            {
                return view;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the nodes' events arrive");

    let mut relabelled = node("b");
    relabelled["metadata"]["labels"]["team"] = json!("batch");
    let mut moved = pod("web-3", Some("c"));
    moved["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let (fresh, _fresh_fake) = source(Objects {
        nodes: vec![relabelled, node("c")],
        pods: vec![kube_api::unschedulable("web-1", "11"), moved],
        ..Objects::default()
    })
    .await;
    let fresh = fresh.view().await.unwrap();
    let sorted_nodes = |view: &ekscale::autoscaler::ClusterView| {
        let mut nodes: Vec<_> = view.nodes.iter().map(|n| (**n).clone()).collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        nodes
    };
    let sorted_pods = |view: &ekscale::autoscaler::ClusterView| {
        let mut pods: Vec<_> = view.pods.iter().map(|p| (**p).clone()).collect();
        pods.sort_by_key(|p| p.key());
        pods
    };
    assert_eq!(sorted_nodes(&updated), sorted_nodes(&fresh));
    assert_eq!(sorted_pods(&updated), sorted_pods(&fresh));
    assert_eq!(names(&updated), ["b", "c"]);
    let pods: Vec<String> = sorted_pods(&updated).iter().map(|p| p.key()).collect();
    assert_eq!(
        pods,
        ["default/web-1", "default/web-3"],
        "web-2 cannot be read: left out"
    );
}

#[tokio::test]
async fn taints_are_patched_against_the_version_read_and_evictions_answer_as_the_api_does() {
    let objects = Objects {
        nodes: vec![node("a")],
        pods: vec![pod("web-0", Some("a")), pod("web-1", Some("a"))],
        refused: vec!["default/web-1".into()],
        ..Objects::default()
    };
    let (kube, fake) = source(objects).await;
    let taint = Taint {
        key: "ToBeDeletedByClusterAutoscaler".into(),
        value: "1700000000".into(),
        effect: TaintEffect::NoSchedule,
    };
    kube.taint("a", &taint).await.unwrap();
    kube.untaint("a", "ToBeDeletedByClusterAutoscaler")
        .await
        .unwrap();
    // Untainting again changes nothing and sends nothing.
    kube.untaint("a", "ToBeDeletedByClusterAutoscaler")
        .await
        .unwrap();
    let patches = fake.objects.lock().unwrap().patches.clone();
    assert_eq!(patches.len(), 2, "{patches:?}");
    assert_eq!(patches[0].1["metadata"]["resourceVersion"], "7");
    assert_eq!(
        patches[0].1["spec"]["taints"],
        json!([{"key": "team", "value": "web", "effect": "NoSchedule"},
               {"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}])
    );
    assert_eq!(
        patches[1].1["spec"]["taints"],
        json!([{"key": "team", "value": "web", "effect": "NoSchedule"}]),
        "the other taint is kept"
    );
    assert!(matches!(
        kube.taint("gone", &taint).await,
        Err(ClusterError::NoNode(_))
    ));

    kube.evict("default", "web-0", Duration::from_secs(30))
        .await
        .unwrap();
    let evictions = fake.objects.lock().unwrap().evictions.clone();
    assert_eq!(evictions[0].0, "default/web-0");
    assert_eq!(evictions[0].1["kind"], "Eviction");
    assert_eq!(evictions[0].1["deleteOptions"]["gracePeriodSeconds"], 30);
    match kube
        .evict("default", "web-1", Duration::from_secs(30))
        .await
    {
        Err(ClusterError::EvictionRefused { pod, why }) => {
            assert_eq!(pod, "default/web-1");
            assert!(why.contains("disruption budget"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        kube.evict("default", "nobody", Duration::from_secs(30))
            .await,
        Err(ClusterError::NoPod(_))
    ));
}

#[tokio::test]
async fn one_candidate_holds_the_lease_another_takes_it_once_it_expires_and_a_leader_that_cannot_renew_loses_it()
 {
    use ekscale::autoscaler::control::{Election, Elector};
    ekscale::tls::install_crypto_provider();
    let fake = Fake::new(Objects::default());
    let addr = kube_api::serve(fake.clone()).await;
    let client = || {
        let mut config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        config.default_retry = false;
        kube::Client::try_from(config).unwrap()
    };
    let election = |who: &str| Election {
        renew_deadline: Duration::from_millis(300),
        ..Election::new("kube-system", "ekscale-autoscaler", who)
    };
    let mut a = Elector::new(client(), election("a"));
    let mut b = Elector::new(client(), election("b"));
    let now = std::time::SystemTime::now();
    let lease = |fake: &Fake| fake.objects.lock().unwrap().leases["ekscale-autoscaler"].clone();

    // a creates the lease; b sees it held and fresh; a renews.
    assert!(a.try_once(now).await);
    assert!(!b.try_once(now).await);
    assert!(a.try_once(now + Duration::from_secs(2)).await);
    assert_eq!(lease(&fake)["spec"]["holderIdentity"], "a");
    assert_eq!(lease(&fake)["spec"]["leaseTransitions"], 0);
    assert_eq!(lease(&fake)["spec"]["leaseDurationSeconds"], 15);

    // a stops renewing: 15 s after its last renewal b takes over, and a no longer leads.
    assert!(
        !b.try_once(now + Duration::from_secs(16)).await,
        "not yet expired"
    );
    assert!(b.try_once(now + Duration::from_secs(18)).await);
    assert_eq!(lease(&fake)["spec"]["holderIdentity"], "b");
    assert_eq!(lease(&fake)["spec"]["leaseTransitions"], 1);
    assert!(!a.try_once(now + Duration::from_secs(19)).await);
    assert!(!a.leading());

    // The API server fails: b still leads until its renew deadline (300 ms after its renewal at 18 s),
    // then has lost the lease.
    fake.objects.lock().unwrap().lease_outage = true;
    let at = |millis: u64| now + Duration::from_millis(millis);
    assert!(
        b.try_once(at(18_200)).await,
        "a failed renewal keeps the lead"
    );
    assert!(b.check(at(18_200)).is_ok());
    assert!(
        b.check(at(18_300)).is_ok(),
        "the deadline itself is still in time"
    );
    assert!(
        b.try_once(at(18_400)).await,
        "still leading until it checks"
    );
    let lost = b.check(at(18_400)).unwrap_err().to_string();
    assert!(
        lost.starts_with("lost the lease ekscale-autoscaler: not renewed for 300ms"),
        "{lost}"
    );
}

#[tokio::test]
async fn a_loops_decisions_become_events_and_the_status_config_map() {
    use ekscale::autoscaler::control::{Publisher, STATUS_CONFIG_MAP};
    use ekscale::autoscaler::status::{
        DeletionStatus, GroupStatus, NoScaleUp, ScaleDownStatus, ScaleUp, Status,
    };
    ekscale::tls::install_crypto_provider();
    let fake = Fake::new(Objects::default());
    let publisher = Publisher::new(kube_api::client(&fake).await, "kube-system", "pod-a");
    let status = Status {
        scale_up: vec![ScaleUp {
            node_group: "general".into(),
            delta: 2,
            pods: ["default/web-0", "default/web-1", "headroom/buffer-0"]
                .into_iter()
                .collect(),
            reason: "least-waste chose it over spot".into(),
            zones: Default::default(),
            error: None,
            replaces: Vec::new(),
            provisioning_request: None,
        }],
        no_scale_up: vec![NoScaleUp {
            pod: "default/huge".into(),
            reasons: [("general".to_string(), "Insufficient cpu".to_string())].into(),
        }],
        scale_down: ScaleDownStatus {
            deletions: vec![
                DeletionStatus {
                    node: "ip-a".into(),
                    node_group: "general".into(),
                    state: "started".into(),
                    detail: String::new(),
                },
                DeletionStatus {
                    node: "ip-b".into(),
                    node_group: "general".into(),
                    state: "failed".into(),
                    detail: "NodeGroupDeleteNodes failed: min size reached".into(),
                },
            ],
            ..ScaleDownStatus::default()
        },
        node_groups: vec![GroupStatus {
            id: "general".into(),
            min_size: 1,
            max_size: 10,
            target_size: 3,
            registered: 3,
            upcoming: 0,
            ..GroupStatus::default()
        }],
        ..Status::default()
    };
    let now = std::time::SystemTime::now();
    assert!(publisher.publish(&status, now).await.is_empty());
    let events = fake.objects.lock().unwrap().events.clone();
    let seen: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            (
                e["reason"].as_str().unwrap().to_string(),
                e["regarding"]["kind"].as_str().unwrap().to_string(),
                e["regarding"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = |reason: &str, kind: &str, name: &str| {
        (reason.to_string(), kind.to_string(), name.to_string())
    };
    assert_eq!(
        seen,
        [
            expect("ScaledUpGroup", "ConfigMap", STATUS_CONFIG_MAP),
            expect("TriggeredScaleUp", "Pod", "web-0"),
            expect("TriggeredScaleUp", "Pod", "web-1"),
            expect("NotTriggerScaleUp", "Pod", "huge"),
            expect("ScaleDown", "Node", "ip-a"),
            expect("ScaleDownFailed", "Node", "ip-b"),
        ],
        "headroom's virtual pods get no events"
    );
    assert_eq!(
        events[1]["note"],
        "pod triggered scale-up: [{general 3->5 (max: 10)}]"
    );
    assert_eq!(events[5]["type"], "Warning");
    assert_eq!(events[0]["reportingController"], "ekscale-autoscaler");

    // The status ConfigMap is created, then replaced against the version read; repeated events become a
    // series (a patch), not new objects.
    let map = fake.objects.lock().unwrap().config_maps[STATUS_CONFIG_MAP].clone();
    let document: serde_json::Value =
        serde_norway::from_str(map["data"]["status"].as_str().unwrap()).unwrap();
    assert_eq!(document["nodeGroups"][0]["name"], "general");
    assert_eq!(document["nodeGroups"][0]["scaleUp"]["status"], "InProgress");
    assert_eq!(
        document["nodeGroups"][0]["health"]["cloudProviderTarget"],
        3
    );
    assert!(
        map["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/last-updated"].is_string()
    );
    assert!(publisher.publish(&status, now).await.is_empty());
    {
        let objects = fake.objects.lock().unwrap();
        assert_eq!(
            objects.config_maps[STATUS_CONFIG_MAP]["metadata"]["resourceVersion"],
            "2"
        );
        assert_eq!(objects.events.len(), 6, "no new Event objects for repeats");
        assert_eq!(objects.event_patches.len(), 6);
    }

    // An unhealthy cluster: a ClusterUnhealthy warning, and the ConfigMap says why with the node counts.
    let unhealthy = Status {
        cluster_health: ekscale::autoscaler::status::ClusterHealth {
            healthy: false,
            ready_nodes: 2,
            unready_nodes: 4,
            not_started_nodes: 0,
            reason: "4 of 6 nodes are unready".into(),
        },
        node_groups: status.node_groups.clone(),
        ..Status::default()
    };
    assert!(publisher.publish(&unhealthy, now).await.is_empty());
    let objects = fake.objects.lock().unwrap();
    let warning = objects.events.last().unwrap();
    assert_eq!(
        (&warning["reason"], &warning["type"], &warning["note"]),
        (
            &json!("ClusterUnhealthy"),
            &json!("Warning"),
            &json!("4 of 6 nodes are unready")
        )
    );
    let map = &objects.config_maps[STATUS_CONFIG_MAP];
    let document: serde_json::Value =
        serde_norway::from_str(map["data"]["status"].as_str().unwrap()).unwrap();
    let health = &document["clusterWide"]["health"];
    assert_eq!(health["status"], "Unhealthy");
    assert_eq!(health["nodeCounts"]["unready"], 4);
    assert_eq!(health["reason"], "4 of 6 nodes are unready");
}

/// A watch that restarts and relists, and an API server that answers that list with no pods for a moment:
/// the view shows three empty nodes, yet no node is tainted (not even softly), drained or deleted, and when
/// the pods come back with the next relist, every node is still there and needed.
#[tokio::test]
async fn pods_that_vanish_from_one_list_make_no_node_look_empty() {
    let (_provider, client, kube, fake) = three_nodes([4, 4, 4]).await;
    let mut once = acting(&client, &kube);
    let now = std::time::SystemTime::now();
    let view = kube.view().await.unwrap();
    assert_eq!(view.pods.len(), 12);
    let status = once.run(&view, now).await.unwrap();
    assert!(
        status.scale_down.nodes.is_empty(),
        "{:?}",
        status.scale_down.nodes
    );

    // The pods watch expires; the relist is answered without pods.
    fake.objects.lock().unwrap().empty_pod_lists = 1;
    fake.expire_watches("pods").await;
    let stale = kube.view().await.unwrap();
    assert_eq!(stale.pods.len(), 0);
    for minutes in [1, 5, 9] {
        let at = now + Duration::from_secs(minutes * 60);
        let status = once.run(&stale, at).await.unwrap();
        assert!(status.scale_down.nodes.is_empty() && status.scale_down.deletions.is_empty());
        assert!(
            status
                .scale_down
                .unremovable
                .iter()
                .all(|k| k.reason == "UntrustedClusterView"),
            "{:?}",
            status.scale_down.unremovable
        );
    }
    {
        let objects = fake.objects.lock().unwrap();
        assert!(
            objects.patches.is_empty(),
            "nodes tainted: {:?}",
            objects.patches
        );
        assert!(objects.evictions.is_empty());
    }

    // The next relist brings them back: nothing was lost, and the nodes are needed again.
    fake.expire_watches("pods").await;
    let view = kube.view().await.unwrap();
    assert_eq!(view.pods.len(), 12);
    let status = once
        .run(&view, now + Duration::from_secs(11 * 60))
        .await
        .unwrap();
    assert!(
        status.scale_down.nodes.is_empty(),
        "{:?}",
        status.scale_down.nodes
    );
    assert_eq!(fake.objects.lock().unwrap().nodes.len(), 3);
    assert!(fake.objects.lock().unwrap().patches.is_empty());
}

/// A pod bound to a node whose watch event has not arrived: the view shows the node empty and its deletion
/// starts, but its pods are read from the API server right before NodeGroupDeleteNodes, and the pod found
/// there ends the deletion with the node kept.
#[tokio::test]
async fn a_pod_the_watch_has_not_delivered_keeps_its_node() {
    let (_provider, client, kube, fake) = three_nodes([4, 4, 0]).await;
    let mut once = acting(&client, &kube);
    let now = std::time::SystemTime::now();
    let view = kube.view().await.unwrap();
    once.run(&view, now).await.unwrap();
    // Unneeded for longer than --scale-down-unneeded-time: its deletion starts with the ToBeDeleted taint.
    let status = once
        .run(&view, now + Duration::from_secs(11 * 60))
        .await
        .unwrap();
    let started: Vec<(&str, &str)> = (status.scale_down.deletions.iter())
        .map(|d| (d.node.as_str(), d.state.as_str()))
        .collect();
    assert_eq!(started, [("node-2", "started")]);

    // A pod is bound there; the API server has it, the watch has not delivered it.
    fake.objects
        .lock()
        .unwrap()
        .pods
        .push(pod("late-0", Some("node-2")));
    let status = once
        .run(&view, now + Duration::from_secs(12 * 60))
        .await
        .unwrap();
    let ended: Vec<(&str, &str, &str)> = (status.scale_down.deletions.iter())
        .map(|d| (d.node.as_str(), d.state.as_str(), d.detail.as_str()))
        .collect();
    assert_eq!(
        ended,
        [(
            "node-2",
            "failed",
            "pods the cluster view had not shown were on it: default/late-0"
        )]
    );
    assert_eq!(client.target_size("general").await.unwrap(), 3);
    assert_eq!(client.nodes("general").await.unwrap().len(), 3);
}

/// A loop that acts on the kube source, with cluster-autoscaler's defaults.
fn acting(client: &ProviderClient, kube: &std::sync::Arc<Kube>) -> RunOnce {
    let settings = Settings {
        act: true,
        ..Settings::default()
    };
    RunOnce::new(client.clone(), settings).acting_on(kube.clone())
}

/// The provider's three instances as the API server's three nodes, `pods[i]` 500m pods on node `i`, and
/// the kube source over them.
async fn three_nodes(
    pods: [usize; 3],
) -> (common::Server, ProviderClient, std::sync::Arc<Kube>, Fake) {
    let provider = common::Server::start_with(
        "
cluster: relist
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 3}
",
        None,
    )
    .await;
    let config = ProviderConfig::plaintext(provider.addr.to_string());
    let client = ProviderClient::new(&config).unwrap();
    let mut nodes = Vec::new();
    let mut items = Vec::new();
    for (i, instance) in client.nodes("general").await.unwrap().iter().enumerate() {
        let name = format!("node-{i}");
        let mut n = node(&name);
        n["spec"]["providerID"] = json!(instance.id);
        n["spec"]["taints"] = json!([]);
        nodes.push(n);
        items.extend((0..pods[i]).map(|k| pod(&format!("web-{i}-{k}"), Some(&name))));
    }
    let (kube, fake) = source(Objects {
        nodes,
        pods: items,
        ..Objects::default()
    })
    .await;
    (provider, client, std::sync::Arc::new(kube), fake)
}
