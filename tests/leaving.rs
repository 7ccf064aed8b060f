//! Nodes that are going away (issue 60), as the loop sees them: the provider's leaving instances (a small
//! backend over the simulated EKS that says which), the taints other tools put on nodes, and the node
//! monitoring agent's conditions; through `simulate` over snapshots, and through the loop acting on the
//! cluster simulator.

mod common;
#[path = "leaving/home.rs"]
mod home; // the pods of a node that goes now prefer its own group

use async_trait::async_trait;
use common::Server;
use common::cluster::{list, nodes_of, pending, running, scale_ups, simulate_json};
use common::simulated::owned;
use ekscale::autoscaler::{ClusterSource, ProviderClient, ProviderConfig, RunOnce, Settings};
use ekscale::clock::Clock;
use ekscale::cloud::{CloudError, FargateProfile, Instance, NodeGroupBackend, NodeGroupSpec};
use ekscale::cloud::{Scenario, SimulatedEks};
use ekscale::model::{LeavingInstance, LeavingReason, TO_BE_DELETED_TAINT};
use ekscale::simulated_cluster::{Budget, OnDisagreement, SimulatedCluster};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Two Spot m5.large and one on-demand m5.xlarge: for one 1200m pod, least-waste takes a Spot node.
const TWO_GROUPS: &str = "
cluster: leaving
region: us-east-1
nodeGroups:
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 2, capacityType: SPOT, provisioningDelay: 30s}
  - {name: ondemand, instanceType: m5.xlarge, zones: [us-east-1b], minSize: 0, maxSize: 10, desiredSize: 1, provisioningDelay: 30s}
";

/// The snapshot's time: five minutes after its nodes were made (`common::cluster::CREATED`).
const NOW: &str = "2026-11-30T00:05:00Z";

fn now() -> SystemTime {
    humantime::parse_rfc3339(NOW).unwrap()
}

/// The simulated EKS, with the leaving instances a test says and, when asked, a group's capacity
/// rebalancing off.
struct Leaves {
    sim: Arc<SimulatedEks>,
    leaving: Mutex<Vec<LeavingInstance>>,
    no_rebalancing: bool,
}

impl Leaves {
    fn spec(&self, spec: Arc<NodeGroupSpec>) -> Arc<NodeGroupSpec> {
        if !self.no_rebalancing {
            return spec;
        }
        let mut spec = (*spec).clone();
        spec.capacity_rebalance = false;
        Arc::new(spec)
    }
}

#[async_trait]
impl NodeGroupBackend for Leaves {
    fn name(&self) -> &'static str {
        "leaves"
    }
    async fn refresh(&self) -> Result<(), CloudError> {
        self.sim.refresh().await
    }
    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>> {
        let groups = self.sim.node_groups();
        groups.into_iter().map(|g| self.spec(g)).collect()
    }
    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>> {
        self.sim.node_group(id).map(|g| self.spec(g))
    }
    fn node_group_of(&self, instance_id: &str) -> Option<String> {
        self.sim.node_group_of(instance_id)
    }
    fn target_size(&self, id: &str) -> Result<i32, CloudError> {
        self.sim.target_size(id)
    }
    fn instances(&self, id: &str) -> Result<Vec<Instance>, CloudError> {
        self.sim.instances(id)
    }
    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.sim.set_target_size(id, target).await
    }
    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.sim.atomic_increase(id, target).await
    }
    async fn delete_instances(&self, id: &str, instance_ids: &[String]) -> Result<(), CloudError> {
        self.sim.delete_instances(id, instance_ids).await
    }
    fn fargate_profiles(&self) -> Vec<FargateProfile> {
        self.sim.fargate_profiles()
    }
    fn leaving_instances(&self) -> Vec<LeavingInstance> {
        self.leaving.lock().unwrap().clone()
    }
    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64> {
        self.sim.price_of_instance_type(instance_type)
    }
}

/// A provider on `scenario` whose backend says leaving what the test puts in the returned handle.
async fn serve(scenario: &str, no_rebalancing: bool) -> (Server, Arc<Leaves>) {
    let sim = Arc::new(SimulatedEks::new(
        Scenario::parse(scenario).unwrap(),
        Clock::manual(),
    ));
    let leaves = Arc::new(Leaves {
        sim: sim.clone(),
        leaving: Mutex::default(),
        no_rebalancing,
    });
    (Server::serve(leaves.clone(), Some(sim), None).await, leaves)
}

/// `group`'s instance ids (each a node's providerID) and node names, as `nodes_of` names them.
fn instances(leaves: &Leaves, group: &str) -> Vec<(String, String)> {
    (leaves.sim.instances(group).unwrap().into_iter())
        .map(|i| {
            let name = format!("ip-{}", i.id.rsplit('/').next().unwrap());
            (i.id, name)
        })
        .collect()
}

fn leaving(id: &str, group: &str, reason: LeavingReason, at: SystemTime) -> LeavingInstance {
    LeavingInstance {
        id: id.into(),
        node_group: group.into(),
        reason,
        at,
        detail: format!("EC2 said {reason}"),
    }
}

fn simulate(server: &Server, items: Vec<Value>, extra: &[&str]) -> Value {
    let mut args = vec!["--now", NOW];
    args.extend_from_slice(extra);
    simulate_json(server.addr, &list(items), &args)
}

fn leaving_list(result: &Value) -> Vec<(String, String, String)> {
    (result["leaving"].as_array().unwrap().iter())
        .map(|l| {
            let field = |k: &str| l[k].as_str().unwrap().to_string();
            (field("node"), field("reason"), field("action"))
        })
        .collect()
}

fn placed_on(result: &Value, pod: &str) -> Option<String> {
    (result["placed"].as_array().unwrap().iter())
        .find(|p| p["pod"] == pod)
        .map(|p| p["node"].as_str().unwrap().to_string())
}

fn in_list(result: &Value, list: &str, node: &str) -> bool {
    (result[list].as_array().into_iter().flatten()).any(|e| e["node"] == node)
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spot_interruptions_pods_get_a_new_node_in_the_same_loop_from_another_group() {
    let (server, leaves) = serve(TWO_GROUPS, false).await;
    let spot = instances(&leaves, "spot");
    let ondemand = instances(&leaves, "ondemand");
    let mut items = nodes_of(server.addr, &["spot", "ondemand"]).await;
    items.push(running(&spot[0].1, "web-0", "web", "1200m", "1Gi"));
    items.push(running(&spot[1].1, "web-1", "web", "1200m", "1Gi"));
    items.push(running(&ondemand[0].1, "big-0", "big", "3500m", "1Gi"));
    // Nothing leaves: nothing to do, and the list says so.
    let calm = simulate(&server, items.clone(), &[]);
    assert!(scale_ups(&calm).is_empty(), "{calm:#}");
    assert_eq!(calm["leaving"], json!([]));
    // A pod like web-0 with nowhere to go gets a Spot node: least-waste prefers the m5.large.
    let mut wanting = items.clone();
    wanting.push(pending("default", "extra-0", "extra", "1200m", "1Gi"));
    let chosen = simulate(&server, wanting, &[]);
    assert_eq!(scale_ups(&chosen), [("spot".to_string(), 1)], "{chosen:#}");

    let at = now() + Duration::from_secs(120);
    let warning = leaving(&spot[0].0, "spot", LeavingReason::SpotInterruption, at);
    leaves.leaving.lock().unwrap().push(warning);
    let result = simulate(&server, items, &[]);
    let drain = (spot[0].1.clone(), "spotInterruption".into(), "drain".into());
    assert_eq!(leaving_list(&result), [drain], "{result:#}");
    assert_eq!(result["leaving"][0]["nodeGroup"], "spot");
    assert_eq!(result["leaving"][0]["at"], "2026-11-30T00:07:00Z");
    // Its pod is planned now, and the interrupted group gets no new Spot capacity for a while.
    assert_eq!(
        scale_ups(&result),
        [("ondemand".to_string(), 1)],
        "{result:#}"
    );
    let pods = result["scaleUp"][0]["pods"].to_string();
    assert!(pods.contains("default/web-0"), "{result:#}");
    let spot_group = (result["nodeGroups"].as_array().unwrap().iter())
        .find(|g| g["id"] == "spot")
        .unwrap();
    assert!(
        spot_group["skipped"]
            .as_str()
            .unwrap()
            .contains("Spot interruption"),
        "{result:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_nodes_pods_take_existing_room_and_no_pending_pod_goes_onto_it() {
    let (server, leaves) = serve(TWO_GROUPS, false).await;
    let spot = instances(&leaves, "spot");
    let ondemand = instances(&leaves, "ondemand");
    let mut items = nodes_of(server.addr, &["spot", "ondemand"]).await;
    items.push(running(&spot[0].1, "web-0", "web", "500m", "512Mi"));
    items.push(running(&spot[1].1, "web-1", "web", "1200m", "1Gi"));
    items.push(pending("default", "new-0", "new", "1200m", "1Gi"));
    let at = now() + Duration::from_secs(120);
    let warning = leaving(&spot[0].0, "spot", LeavingReason::SpotInterruption, at);
    leaves.leaving.lock().unwrap().push(warning);
    let result = simulate(&server, items.clone(), &[]);
    assert!(scale_ups(&result).is_empty(), "room is there: {result:#}");
    // web-0 fits beside web-1; new-0, which the interrupted node had room for, goes to the on-demand one.
    assert_eq!(placed_on(&result, "default/web-0"), Some(spot[1].1.clone()));
    assert_eq!(
        placed_on(&result, "default/new-0"),
        Some(ondemand[0].1.clone())
    );
    let onto_it =
        (result["placed"].as_array().unwrap().iter()).any(|p| p["node"] == spot[0].1.as_str());
    assert!(!onto_it, "{result:#}");
    // Without the warning, the first Spot node takes new-0 and web-0 stays.
    leaves.leaving.lock().unwrap().clear();
    let calm = simulate(&server, items, &[]);
    assert_eq!(
        placed_on(&calm, "default/new-0"),
        Some(spot[0].1.clone()),
        "{calm:#}"
    );
    assert_eq!(placed_on(&calm, "default/web-0"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_node_is_no_candidate_of_scale_down_or_expiry() {
    let (server, leaves) = serve(TWO_GROUPS, false).await;
    let spot = instances(&leaves, "spot");
    let mut items = nodes_of(server.addr, &["spot", "ondemand"]).await;
    items.push(running(&spot[1].1, "web-1", "web", "1200m", "1Gi"));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("disruption.yaml");
    std::fs::write(
        &config,
        "nodeGroups:\n  - match: spot\n    expireAfter: 1m\n",
    )
    .unwrap();
    let args = ["--disruption-config", config.to_str().unwrap()];
    // Empty and expired, the first Spot node would go.
    let calm = simulate(&server, items.clone(), &args);
    let named =
        |r: &Value| in_list(r, "scaleDown", &spot[0].1) || in_list(r, "disruptions", &spot[0].1);
    assert!(named(&calm), "{calm:#}");
    let at = now() + Duration::from_secs(3600);
    let event = leaving(&spot[0].0, "spot", LeavingReason::ScheduledEvent, at);
    leaves.leaving.lock().unwrap().push(event);
    let result = simulate(&server, items, &args);
    assert!(!named(&result), "{result:#}");
    assert!(!in_list(&result, "unremovable", &spot[0].1), "{result:#}");
    assert_eq!(leaving_list(&result)[0].2, "drain");
}

/// Three Spot nodes: two busy, the newest empty.
async fn three_spot(server: &Server, leaves: &Leaves) -> (Vec<(String, String)>, Vec<Value>) {
    let spot = instances(leaves, "spot");
    let mut items = nodes_of(server.addr, &["spot"]).await;
    let newest = items
        .iter_mut()
        .find(|n| n["metadata"]["name"] == spot[2].1.as_str())
        .unwrap();
    newest["metadata"]["creationTimestamp"] = json!("2026-11-30T00:03:00Z");
    items.push(running(&spot[0].1, "web-0", "web", "1200m", "1Gi"));
    items.push(running(&spot[1].1, "web-1", "web", "1200m", "1Gi"));
    (spot, items)
}

const THREE_SPOT: &str = "
cluster: rebalance
region: us-east-1
nodeGroups:
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 3, capacityType: SPOT}
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_the_group_handles_adds_nothing_and_its_new_node_is_not_unneeded() {
    let (server, leaves) = serve(THREE_SPOT, false).await;
    let (spot, items) = three_spot(&server, &leaves).await;
    let calm = simulate(&server, items.clone(), &[]);
    assert!(in_list(&calm, "scaleDown", &spot[2].1), "{calm:#}");
    let advice = leaving(&spot[0].0, "spot", LeavingReason::Rebalance, now());
    leaves.leaving.lock().unwrap().push(advice);
    let result = simulate(&server, items, &[]);
    assert_eq!(leaving_list(&result)[0].2, "none", "{result:#}");
    assert!(
        result["leaving"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("capacity rebalancing"),
        "{result:#}"
    );
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    assert!(!in_list(&result, "scaleDown", &spot[2].1), "{result:#}");
    // Its pods go where the group's replacement is.
    assert!(placed_on(&result, "default/web-0").is_some(), "{result:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_the_group_does_not_handle_waits_and_moves_nothing_yet() {
    let (server, leaves) = serve(THREE_SPOT, true).await;
    let (spot, items) = three_spot(&server, &leaves).await;
    let advice = leaving(&spot[0].0, "spot", LeavingReason::Rebalance, now());
    leaves.leaving.lock().unwrap().push(advice);
    let result = simulate(&server, items, &[]);
    assert_eq!(leaving_list(&result)[0].2, "wait", "{result:#}");
    assert_eq!(placed_on(&result, "default/web-0"), None, "{result:#}");
    assert!(!in_list(&result, "scaleDown", &spot[0].1), "{result:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_termination_handlers_taint_and_a_monitoring_agents_condition_are_read_as_leaving() {
    let (server, leaves) = serve(TWO_GROUPS, false).await;
    let spot = instances(&leaves, "spot");
    let ondemand = instances(&leaves, "ondemand");
    let mut items = nodes_of(server.addr, &["spot", "ondemand"]).await;
    let taint = json!({"key": "aws-node-termination-handler/spot-itn", "value": "", "effect": "NoSchedule"});
    let condition = json!({"type": "KernelReady", "status": "False", "reason": "KernelBug",
                           "lastTransitionTime": "2026-11-30T00:01:00Z"});
    for node in items.iter_mut() {
        if node["metadata"]["name"] == spot[0].1.as_str() {
            node["spec"]["taints"]
                .as_array_mut()
                .unwrap()
                .push(taint.clone());
        }
        if node["metadata"]["name"] == ondemand[0].1.as_str() {
            node["status"]["conditions"]
                .as_array_mut()
                .unwrap()
                .push(condition.clone());
        }
    }
    items.push(running(&spot[0].1, "web-0", "web", "500m", "512Mi"));
    let result = simulate(&server, items.clone(), &[]);
    let mut expected = vec![
        (
            spot[0].1.clone(),
            "spotInterruption".to_string(),
            "drain".to_string(),
        ),
        (ondemand[0].1.clone(), "unhealthy".into(), "wait".into()),
    ];
    expected.sort();
    assert_eq!(leaving_list(&result), expected, "{result:#}");
    let sick = (result["leaving"].as_array().unwrap().iter())
        .find(|l| l["reason"] == "unhealthy")
        .unwrap();
    assert_eq!(sick["at"], "2026-11-30T00:01:00Z");
    // web-0 moves off the tainted node, not onto the unhealthy one: onto the other Spot node.
    assert_eq!(
        placed_on(&result, "default/web-0"),
        Some(spot[1].1.clone()),
        "{result:#}"
    );
    // The table says them in a section of their own.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, list(items).to_string()).unwrap();
    let table = common::cluster::simulate(server.addr, &path, &["--now", NOW, "--format", "table"]);
    let table = String::from_utf8(table.stdout).unwrap();
    let section = table.split("\nLeaving nodes\n").nth(1).expect(&table);
    let line = format!(
        "  {} (spot): spotInterruption at 2026-11-30T00:07:00Z: drain: tainted",
        spot[0].1
    );
    assert!(
        section.lines().take(2).any(|l| l.starts_with(&line)),
        "{table}"
    );
}

// The loop acting on the cluster simulator.

/// One Spot m5.large and one on-demand m5.xlarge, nodes a little slow to come.
const ACTING: &str = "
cluster: drain
region: us-east-1
nodeGroups:
  - {name: spot, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 1, capacityType: SPOT, provisioningDelay: 30s, deletionDelay: 10s}
  - {name: ondemand, instanceType: m5.xlarge, zones: [us-east-1b], minSize: 0, maxSize: 4, desiredSize: 1, provisioningDelay: 30s}
";

#[tokio::test]
async fn the_drain_deletes_the_node_through_the_provider_by_its_deadline_whatever_its_budget() {
    let (server, leaves) = serve(ACTING, false).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let clock = server.sim().clock().clone();
    let cluster = Arc::new(
        SimulatedCluster::new(&config, clock.clone())
            .unwrap()
            .on_disagreement(OnDisagreement::Panic),
    );
    let client = ProviderClient::new(&config).unwrap();
    let settings = Settings {
        act: true,
        ..Settings::default()
    };
    let mut once = RunOnce::new(client, settings).acting_on(cluster.clone());
    // One 1200m pod, on whichever node the scheduler took, under a budget that lets none go.
    cluster.create_pods(owned("api", 1, 1200, 1 << 30));
    cluster.create_pdb(Budget {
        namespace: "default".into(),
        name: "api".into(),
        selector: ekscale::model::LabelSelector {
            match_labels: [("app".to_string(), "api".to_string())].into(),
            expressions: vec![],
        },
        max_unavailable: 0,
    });
    let view = cluster.view().await.unwrap();
    let on = view.pods[0].node_name.clone().expect("the pod runs");
    let node = view.nodes.iter().find(|n| *n.name == *on).unwrap().clone();
    let group = leaves.sim.node_group_of(&node.provider_id).unwrap();
    let at = cluster.now() + Duration::from_secs(120);
    let warning = leaving(
        &node.provider_id,
        &group,
        LeavingReason::SpotInterruption,
        at,
    );
    leaves.leaving.lock().unwrap().push(warning);
    let target_before = leaves.sim.target_size(&group).unwrap();
    let mut tainted_at = None;
    let mut gone_at = None;
    for i in 0..40 {
        let view = cluster.view().await.unwrap();
        let here = view.nodes.iter().find(|n| n.name == node.name);
        match here {
            Some(n) if n.tainted(TO_BE_DELETED_TAINT) => {
                tainted_at.get_or_insert(cluster.now());
            }
            None => {
                gone_at = Some(cluster.now());
                break;
            }
            _ => {}
        }
        let status = once.run(&view, cluster.now()).await.unwrap();
        if i == 0 {
            assert_eq!(status.leaving.len(), 1, "{:?}", status.leaving);
            assert_eq!(status.leaving[0].action.as_str(), "drain");
        }
        assert_eq!(cluster.pods().len(), 1, "loop {i}: the pod was lost");
        clock.advance(Duration::from_secs(10));
    }
    let tainted_at = tainted_at.expect("tainted");
    assert!(
        tainted_at <= at - Duration::from_secs(100),
        "tainted in the loop after the warning"
    );
    let gone_at = gone_at.expect("the node went");
    // The budget held the drain until the instance's deadline, never past it (a loop and the deletion's
    // own delay after it).
    assert!(gone_at >= at, "the budget held until the deadline");
    assert!(gone_at <= at + Duration::from_secs(30), "not held past it");
    assert_eq!(
        leaves.sim.target_size(&group).unwrap(),
        target_before - 1,
        "through DeleteNodes"
    );
}

// ekscale's own replacements: a rebalance its group does not handle, a repair its group's EKS repair does not
// do (`--disruption-config`).

fn with_config(server: &Server, items: Vec<Value>, config: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("disruption.yaml");
    std::fs::write(&path, config).unwrap();
    simulate(
        server,
        items,
        &["--disruption-config", path.to_str().unwrap()],
    )
}

fn disruption<'r>(result: &'r Value, node: &str) -> Option<&'r Value> {
    (result["disruptions"].as_array().into_iter().flatten()).find(|d| d["node"] == node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebalance_its_group_does_not_handle_is_replaced_new_node_first_within_its_budget() {
    let (server, leaves) = serve(THREE_SPOT, true).await;
    let (spot, items) = three_spot(&server, &leaves).await;
    let advice = leaving(&spot[0].0, "spot", LeavingReason::Rebalance, now());
    leaves.leaving.lock().unwrap().push(advice);
    let config =
        "nodeGroups:\n  - match: spot\n    budgets: [{nodes: \"1\", reasons: [Rebalance]}]\n";
    let result = with_config(&server, items.clone(), config);
    assert_eq!(leaving_list(&result)[0].2, "replace", "{result:#}");
    let replaces: Vec<&Value> = (result["scaleUp"].as_array().unwrap().iter())
        .filter(|s| s["replaces"] == json!([spot[0].1]))
        .collect();
    assert_eq!(replaces.len(), 1, "{result:#}");
    assert_eq!(replaces[0]["nodeGroup"], "spot");
    let decided = disruption(&result, &spot[0].1).unwrap();
    assert_eq!(
        (&decided["reason"], &decided["action"]),
        (&json!("rebalance"), &json!("replace"))
    );
    // Its pods fit on the empty node, yet a rebalance replaces it first: the node is at risk, not its room.
    assert!(!in_list(&result, "scaleDown", &spot[0].1), "{result:#}");
    // A budget of none for the reason holds it.
    let closed =
        "nodeGroups:\n  - match: spot\n    budgets: [{nodes: \"0\", reasons: [Rebalance]}]\n";
    let held = with_config(&server, items, closed);
    assert_eq!(leaving_list(&held)[0].2, "wait", "{held:#}");
    let detail = held["leaving"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("ekscale's rebalance replacement waits"),
        "{held:#}"
    );
    assert!(
        !scale_ups(&held).iter().any(|(g, _)| g == "spot"),
        "{held:#}"
    );
}

/// Five on-demand nodes, each running a small pod.
const FIVE: &str = "
cluster: repair
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 5}
";

/// The five nodes, the first `sick` of them with KernelReady False for the last 20 minutes, the first also
/// annotated `annotations`.
async fn five(server: &Server, sick: usize, annotations: Value) -> (Vec<String>, Vec<Value>) {
    let mut items = nodes_of(server.addr, &["general"]).await;
    let names: Vec<String> = (items.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let condition = json!({"type": "KernelReady", "status": "False", "reason": "KernelBug",
                           "lastTransitionTime": "2026-11-29T23:45:00Z"});
    for node in items.iter_mut().take(sick) {
        node["status"]["conditions"]
            .as_array_mut()
            .unwrap()
            .push(condition.clone());
    }
    items[0]["metadata"]["annotations"] = annotations;
    for (i, name) in names.iter().enumerate() {
        items.push(running(name, &format!("web-{i}"), "web", "1200m", "1Gi"));
    }
    (names, items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_node_is_repaired_after_its_wait_unless_the_group_is_widely_sick_or_it_is_annotated()
 {
    let (server, _leaves) = serve(FIVE, false).await;
    let repair = "nodeGroups:\n  - match: general\n    repair: {after: 10m}\n";
    let (names, items) = five(&server, 1, json!({})).await;
    let result = with_config(&server, items.clone(), repair);
    assert_eq!(leaving_list(&result)[0].2, "replace", "{result:#}");
    let decided = disruption(&result, &names[0]).unwrap();
    assert_eq!(
        (&decided["reason"], &decided["action"]),
        (&json!("unhealthy"), &json!("replace"))
    );
    assert!(
        scale_ups(&result).contains(&("general".to_string(), 1)),
        "{result:#}"
    );
    // Without `repair:`, or before the condition's own wait, it waits.
    let plain = "nodeGroups:\n  - match: general\n";
    let result = with_config(&server, items.clone(), plain);
    assert_eq!(leaving_list(&result)[0].2, "wait", "{result:#}");
    assert!(disruption(&result, &names[0]).is_none(), "{result:#}");
    let later = "nodeGroups:\n  - match: general\n    repair: {after: 10m, conditions: {KernelReady: 30m}}\n";
    let result = with_config(&server, items, later);
    assert_eq!(leaving_list(&result)[0].2, "wait", "{result:#}");
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    // Two of five unhealthy: a cluster-wide problem, repaired by no one.
    let (_, items) = five(&server, 2, json!({})).await;
    let result = with_config(&server, items, repair);
    assert!(
        leaving_list(&result).iter().all(|l| l.2 == "wait"),
        "{result:#}"
    );
    assert!(
        result["leaving"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("cluster-wide")
    );
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    // Annotated do-not-disrupt: never repaired by ekscale.
    let annotated = json!({"karpenter.sh/do-not-disrupt": "true"});
    let (_, items) = five(&server, 1, annotated).await;
    let result = with_config(&server, items, repair);
    assert_eq!(leaving_list(&result)[0].2, "wait", "{result:#}");
    assert!(scale_ups(&result).is_empty(), "{result:#}");
}

#[test]
fn a_repair_with_a_wrong_key_is_refused_naming_it() {
    let bad =
        "nodeGroups:\n  - match: general\n    repair: {after: 10m, conditions: {DiskFull: 5m}}\n";
    let error = ekscale::autoscaler::DisruptionConfig::parse(bad)
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "nodeGroups[0] (match \"general\"): repair.conditions.DiskFull: not a node"
        ),
        "{error}"
    );
    let unknown = "nodeGroups:\n  - match: general\n    repair: {after: 10m, every: 5m}\n";
    let error = ekscale::autoscaler::DisruptionConfig::parse(unknown)
        .unwrap_err()
        .to_string();
    assert!(error.contains("every"), "{error}");
}

#[test]
fn the_readme_example_is_what_simulate_prints() {
    let provider = common::Binary::start(&[]);
    let args = ["--now", "2026-11-30T10:00:00Z"];
    let snapshot = "tests/data/leaving-taint.yaml";
    let lines = common::cluster::readme_shows(provider.grpc, snapshot, &args, "Leaving nodes");
    assert_eq!(lines, 4, "Leaving nodes and Nodes kept");
}

/// `--leaving-nodes ignore`: the behaviour before issue 60. The interrupted node is room like any node (the
/// pending pod goes onto it), its pod stays, nothing is scaled up or backed off for it; it is still listed,
/// action `none`, saying handling is off. A bad value is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ignored_leaving_nodes_are_room_and_only_listed() {
    let (server, leaves) = serve(TWO_GROUPS, false).await;
    let spot = instances(&leaves, "spot");
    let mut items = nodes_of(server.addr, &["spot", "ondemand"]).await;
    items.push(running(&spot[0].1, "web-0", "web", "500m", "512Mi"));
    items.push(running(&spot[1].1, "web-1", "web", "1200m", "1Gi"));
    items.push(pending("default", "new-0", "new", "1200m", "1Gi"));
    let at = now() + Duration::from_secs(120);
    let warning = leaving(&spot[0].0, "spot", LeavingReason::SpotInterruption, at);
    leaves.leaving.lock().unwrap().push(warning);
    let result = simulate(&server, items.clone(), &["--leaving-nodes", "ignore"]);
    let none = (spot[0].1.clone(), "spotInterruption".into(), "none".into());
    assert_eq!(leaving_list(&result), [none], "{result:#}");
    let detail = result["leaving"][0]["detail"].as_str().unwrap();
    assert!(
        detail.contains("handling of leaving nodes is off"),
        "{detail}"
    );
    assert_eq!(
        placed_on(&result, "default/new-0"),
        Some(spot[0].1.clone()),
        "{result:#}"
    );
    assert_eq!(placed_on(&result, "default/web-0"), None, "{result:#}");
    assert!(scale_ups(&result).is_empty(), "{result:#}");
    let skipped = (result["nodeGroups"].as_array().unwrap().iter()).any(|g| {
        g["skipped"]
            .as_str()
            .is_some_and(|s| s.contains("Spot interruption"))
    });
    assert!(!skipped, "{result:#}");
    // `handle`, the default, said explicitly: the node is no room.
    let handled = simulate(&server, items, &["--leaving-nodes", "handle"]);
    assert_eq!(leaving_list(&handled)[0].2, "drain", "{handled:#}");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args([
            "simulate",
            "--provider",
            "127.0.0.1:1",
            "--leaving-nodes",
            "sometimes",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--leaving-nodes") && stderr.contains("sometimes"),
        "{stderr}"
    );
}
