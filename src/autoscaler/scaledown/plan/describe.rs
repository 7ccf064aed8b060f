//! A removal as the report says it: the node, why it may go, and the pods it evicts and where they go.

use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::scaledown::plan::planner::Removable;
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::autoscaler::status::ScaleDown;
use crate::model::{PodList, PodNames};
use std::fmt::Write as _;

/// The pods a removal evicts from a node, of those `on_node` (those bound there, not pending pods placed there this loop).
pub(in crate::autoscaler::scaledown) fn evicted_from(
    pods: PodList<'_>,
    on_node: &[usize],
) -> PodNames {
    let mut names = PodNames::default();
    for &p in on_node {
        let pod = pods.get(p);
        if pod.node_name.is_some() {
            names.push(pod);
        }
    }
    names
}

/// A removable node as the status reports it: why it may go and where its pods go.
pub(in crate::autoscaler::scaledown) fn describe(
    view: &ClusterView,
    pods: PodList<'_>,
    groups: &[GroupInfo],
    r: &Removable,
) -> ScaleDown {
    let options = &groups[r.group].options;
    let threshold = if r.utilization.gpu.is_some() {
        options.gpu_utilization
    } else {
        options.utilization
    };
    ScaleDown {
        node: view.nodes[r.node].name.clone(),
        node_group: groups[r.group].id.clone(),
        reason: if r.empty { "empty" } else { "underutilized" }.into(),
        detail: format!(
            "utilization {} (threshold {:.0}%); {}",
            r.utilization.describe(),
            threshold * 100.0,
            destinations(view, pods, r)
        ),
        pods: evicted(view, pods, r),
        risky: r.risky,
    }
}

/// The pods a removal evicts, named from the view's packed names (pending pods found room on the node this
/// loop are not on it: nothing to evict).
fn evicted(view: &ClusterView, pods: PodList<'_>, r: &Removable) -> PodNames {
    let mut names = PodNames::with_capacity(r.evicted.len());
    for &p in r.evicted.iter().filter(|&&p| pods[p].node_name.is_some()) {
        names.push_pod(view.pod_keys(), pods, p);
    }
    names
}

/// Where a removable node's pods go, for people: `default/api-0 -> ip-a` or `12 pods -> ip-a (5), ip-b (7)`.
fn destinations(view: &ClusterView, pods: PodList<'_>, r: &Removable) -> String {
    match r.destinations.as_slice() {
        [] => "no pod needs a new place".into(),
        [(pod, node)] => format!("{} -> {}", pods[*pod].key(), view.nodes[*node].name),
        many => {
            // Written straight into one string: a 100,000-node loop describes 70,000 removable nodes.
            let mut to: Vec<&str> = (many.iter())
                .map(|&(_, node)| view.nodes[node].name.as_str())
                .collect();
            to.sort_unstable();
            let mut text = format!("{} pods -> ", many.len());
            for (i, run) in to.chunk_by(|a, b| a == b).enumerate() {
                let comma = if i == 0 { "" } else { ", " };
                let _ = write!(text, "{comma}{} ({})", run[0], run.len());
            }
            text
        }
    }
}
