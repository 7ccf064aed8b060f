//! A removal as the report says it: the node, why it may go, and the pods it evicts and where they go.

use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::scaledown::plan::planner::{Removable, percent};
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
    // Written straight into one string: a 100,000-node loop describes 70,000 removable nodes.
    let mut detail = String::with_capacity(96 + 32 * r.destinations.len().min(8));
    let utilization = &r.utilization;
    let _ = write!(
        detail,
        "utilization {utilization} (threshold {}%); ",
        percent(threshold)
    );
    destinations(&mut detail, view, pods, r);
    ScaleDown {
        node: view.nodes[r.node].name.clone(),
        node_group: groups[r.group].id.clone(),
        reason: if r.empty { "empty" } else { "underutilized" }.into(),
        detail,
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

/// Where a removable node's pods go, for people, after `text`: `default/api-0 -> ip-a` or
/// `12 pods -> ip-a (5), ip-b (7)`.
fn destinations(text: &mut String, view: &ClusterView, pods: PodList<'_>, r: &Removable) {
    match r.destinations.as_slice() {
        [] => text.push_str("no pod needs a new place"),
        [(pod, node)] => {
            let _ = write!(text, "{} -> {}", pods[*pod].key(), view.nodes[*node].name);
        }
        many => {
            // The destinations are counted by index first, so that names are read once per destination.
            let mut at: Vec<usize> = many.iter().map(|&(_, node)| node).collect();
            at.sort_unstable();
            let mut to: Vec<(&str, usize)> = (at.chunk_by(|a, b| a == b))
                .map(|run| (view.nodes[run[0]].name.as_str(), run.len()))
                .collect();
            to.sort_unstable();
            let _ = write!(text, "{} pods -> ", many.len());
            // Two nodes of one name (never in a real cluster) are said once, their pods summed.
            for (i, run) in to.chunk_by(|a, b| a.0 == b.0).enumerate() {
                let comma = if i == 0 { "" } else { ", " };
                let pods: usize = run.iter().map(|&(_, n)| n).sum();
                let _ = write!(text, "{comma}{} ({pods})", run[0].0);
            }
        }
    }
}
