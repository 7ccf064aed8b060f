//! The affinity surge at a small size, through the shipped binary's `simulate` against an in-process
//! provider: every small spread replica placed on an existing node, one new node for each big one, and
//! no node holding two replicas of one Deployment (their required hostname anti-affinity).

mod common;
#[path = "common/surge.rs"]
mod surge;

use common::Server;
use common::cluster::{list, nodes_of, simulate_json};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use surge::Shape;

/// The replicas' Deployment: the name up to the pod-template hash.
fn deployment(pod: &str) -> &str {
    let pod = pod.rsplit_once('/').map_or(pod, |(_, name)| name);
    pod.rsplitn(3, '-').nth(2).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_surge_places_every_small_replica_and_asks_a_node_for_each_big_one() {
    let shape = Shape { nodes: 200 };
    let server = Server::start_with(&surge::scenario(shape), None).await;
    let groups = surge::groups();
    let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
    let nodes = nodes_of(server.addr, &groups).await;
    assert_eq!(nodes.len(), shape.nodes);
    let snapshot = list(surge::items(shape, nodes));
    let result = simulate_json(server.addr, &snapshot, &[]);

    let placed = result["placed"].as_array().unwrap();
    let existing: Vec<&Value> = placed.iter().filter(|p| p["node"] != "upcoming").collect();
    assert_eq!(
        existing.len(),
        shape.small_pods(),
        "every small replica fits"
    );
    assert!(
        existing
            .iter()
            .all(|p| deployment(p["pod"].as_str().unwrap()).starts_with("web-")),
        "only small replicas fit existing nodes"
    );
    // Required anti-affinity: one replica of a Deployment a node.
    let mut on_node: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in &existing {
        let fresh = on_node
            .entry(p["node"].as_str().unwrap())
            .or_default()
            .insert(deployment(p["pod"].as_str().unwrap()));
        assert!(fresh, "two replicas of one Deployment on {}", p["node"]);
    }
    let asked: u64 = (result["scaleUp"].as_array().unwrap())
        .iter()
        .map(|s| s["delta"].as_u64().unwrap())
        .sum();
    assert_eq!(
        asked as usize,
        shape.new_nodes(),
        "a new node a big replica"
    );
    assert_eq!(result["noScaleUp"].as_array().unwrap().len(), 0);
}
