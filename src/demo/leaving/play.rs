//! What the entries do: the simulated EKS is told (an interruption, a rebalance recommendation, a scheduled
//! event, an unhealthy instance) and, for `unhealthy`, the simulated cluster's node gets the monitoring
//! agent's condition; a condition whose instance EKS rebooted back to health is cleared again.

use super::entries::{Leaving, Marked, When};
use crate::cloud::{NodeGroupBackend, SimulatedEks};
use crate::demo::error::DemoError;
use crate::simulated_cluster::SimulatedCluster;
use std::collections::HashSet;

/// Plays `entry` now; returns what it did, for the log.
pub fn play(
    entry: &Leaving,
    backend: &SimulatedEks,
    cluster: &SimulatedCluster,
) -> Result<String, DemoError> {
    let cloud = |e: crate::cloud::CloudError| DemoError::Cloud(e.to_string());
    match entry {
        Leaving::Interrupt { node_group, pick } => {
            let ids = backend.interrupt(node_group, *pick).map_err(cloud)?;
            Ok(format!(
                "{node_group}: Spot interruption warning for {} instance(s), gone in 2m",
                ids.len()
            ))
        }
        Leaving::Rebalance { node_group, pick } => {
            let ids = backend.rebalance(node_group, *pick).map_err(cloud)?;
            Ok(format!(
                "{node_group}: rebalance recommendation for {} instance(s)",
                ids.len()
            ))
        }
        Leaving::Maintenance {
            node_group,
            pick,
            when,
        } => {
            let at = match when {
                When::At(at) => *at,
                When::After(after) => backend.wall_now() + *after,
            };
            let ids = (backend.schedule_event(node_group, *pick, at)).map_err(cloud)?;
            Ok(format!(
                "{node_group}: {} instance(s) scheduled for retirement at {}",
                ids.len(),
                humantime::format_rfc3339_seconds(at)
            ))
        }
        Leaving::Unhealthy {
            marked,
            condition,
            reason,
        } => {
            let (instance, node) = resolve(marked, backend, cluster)?;
            (cluster.set_node_condition(&node, condition, reason))
                .map_err(|e| DemoError::Cloud(e.to_string()))?;
            (backend.mark_unhealthy(&instance, condition, reason, cluster.now())).map_err(cloud)?;
            Ok(format!("node {node}: {condition} False ({reason})"))
        }
    }
}

/// The instance and the node an `unhealthy` entry marks.
fn resolve(
    marked: &Marked,
    backend: &SimulatedEks,
    cluster: &SimulatedCluster,
) -> Result<(String, String), DemoError> {
    let nodes = cluster.nodes();
    let node = match marked {
        Marked::Node(position) => nodes.get(*position).ok_or_else(|| {
            DemoError::Cloud(format!(
                "unhealthy: node {position} is beyond the cluster's {} node(s)",
                nodes.len()
            ))
        })?,
        Marked::Instance { node_group, index } => {
            let instances =
                (backend.instances(node_group)).map_err(|e| DemoError::Cloud(e.to_string()))?;
            let instance = instances.get(*index).ok_or_else(|| {
                DemoError::Cloud(format!(
                    "unhealthy: {node_group} has no instance {index} ({} listed)",
                    instances.len()
                ))
            })?;
            (nodes.iter().find(|n| n.provider_id == instance.id)).ok_or_else(|| {
                DemoError::Cloud(format!(
                    "unhealthy: the node of {node_group}'s instance {index} ({}) has not registered",
                    instance.id
                ))
            })?
        }
    };
    Ok((node.provider_id.clone(), node.name.clone()))
}

/// Clears the conditions of nodes whose instance the simulated EKS no longer holds unhealthy (a reboot
/// fixed it), as the monitoring agent would set them True again.
pub fn clear_repaired(backend: &SimulatedEks, cluster: &SimulatedCluster) -> Result<(), DemoError> {
    let marked: HashSet<(String, String)> = backend.unhealthy_instances().into_iter().collect();
    for node in cluster.nodes() {
        for problem in &node.problems {
            if !marked.contains(&(node.provider_id.clone(), problem.condition.clone())) {
                (cluster.clear_node_condition(&node.name, &problem.condition))
                    .map_err(|e| DemoError::Cloud(e.to_string()))?;
            }
        }
    }
    Ok(())
}
