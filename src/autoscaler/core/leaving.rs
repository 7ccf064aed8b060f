//! The loop's part of leaving nodes (`autoscaler/leaving/`), one stage after health: the provider's leaving
//! instances asked once, the nodes found and what is done for each decided, and what that changes for the
//! stages after it (no room, pods to help, replacements coming, Spot capacity out for a while); after
//! scale-up, the drains of the nodes that go now started (when the loop acts), and their part of the report.

use crate::autoscaler::capacity;
use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::clusterstate::backoff::GroupBackoff;
use crate::autoscaler::core::classify::Sorted;
use crate::autoscaler::core::record::Read;
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::Group;
use crate::autoscaler::leaving::effects::SPOT_UNAVAILABLE;
use crate::autoscaler::leaving::memory::Planned;
use crate::autoscaler::leaving::nodes::LeavingSources;
use crate::autoscaler::leaving::{
    LeavingAction, LeavingEffects, LeavingHandling, LeavingMemory, LeavingNodes,
};
use crate::autoscaler::scaledown::act::actuation::{Cause, DeletionOrder};
use crate::autoscaler::scaledown::plan::planner::DeletionKind;
use crate::autoscaler::scaledown::policy::ScaleDownPolicy;
use crate::autoscaler::status::Status;
use crate::model::PodList;
use std::sync::Arc;
use std::time::SystemTime;

/// What the stage changes for the stages after it: the pods sorted (those moved off leaving nodes go from
/// `bound` to `to_help`), what the cluster state read (every leaving node joins the nodes on their way out,
/// the groups' replacements join their upcoming nodes), the groups and their backoff.
pub struct Changes<'a> {
    pub sorted: &'a mut Sorted,
    pub read: &'a mut Read,
    pub groups: &'a mut [Group],
    pub backoff: &'a mut GroupBackoff,
}

/// The leaving nodes this loop, and what could not be read of them; with `handling` off, they are only
/// listed and nothing is changed for them. `disruption` says each group's `drainLead` (its Capacity Block's
/// nodes leave that long before EKS scales it in).
pub async fn read(
    (client, memory, down, handling): (
        &ProviderClient,
        &LeavingMemory,
        &ScaleDownPolicy,
        LeavingHandling,
    ),
    (view, pods): (&ClusterView, PodList<'_>),
    changes: Changes<'_>,
    disruption: Option<&DisruptionConfig>,
    now: SystemTime,
) -> (LeavingEffects, Vec<String>) {
    let Changes {
        sorted,
        read,
        groups,
        backoff,
    } = changes;
    let mut problems = Vec::new();
    let leaving = match client.leaving_instances().await {
        Ok(leaving) => leaving,
        Err(e) => {
            problems.push(format!("leaving instances: {e}"));
            None
        }
    };
    let instances = leaving
        .as_deref()
        .map(|l| &l.instances[..])
        .unwrap_or_default();
    if let Some(l) = &leaving {
        problems.extend(
            l.refused
                .iter()
                .map(|r| format!("leaving instance refused: {r}")),
        );
    }
    let endings = capacity::endings(&read.facts, disruption, now);
    let sources = LeavingSources {
        nodes: &view.nodes,
        node_group: &read.node_group,
        facts: &read.facts,
        instances,
        endings: &endings,
    };
    let found = LeavingNodes::find(&sources, |n| memory.first_seen(n), now);
    if found.is_empty() {
        return (LeavingEffects::default(), problems);
    }
    if handling == LeavingHandling::Ignore {
        return (LeavingEffects::ignored(found), problems);
    }
    let at = (&view.nodes[..], &read.node_group[..]);
    let mut effects = LeavingEffects::new(found, at, pods, &mut sorted.bound);
    effects.replacing(&view.nodes, |n| down.replacing(n));
    sorted.to_help.extend_from_slice(&effects.moved);
    sorted.to_help.sort_unstable();
    read.deleting.extend(effects.no_room.iter().cloned());
    effects.count_replacements(&read.facts, &mut read.counts);
    for &g in &effects.interrupted {
        let id = &read.facts[g].group.id;
        let why =
            "a Spot interruption came from it: no new Spot capacity there for a while".to_string();
        backoff.unavailable(id, why.clone(), now + SPOT_UNAVAILABLE);
        groups[g].skip.get_or_insert(why);
    }
    (effects, problems)
}

/// Starts the drains of the leaving nodes that go now (action `drain`) on `cluster` (when the loop acts),
/// each held by its pods' budgets no later than its deadline, and holds the groups' new nodes from
/// scale-down. Returns what could not be started.
pub async fn drain(
    down: &mut ScaleDownPolicy,
    cluster: Option<Arc<dyn ClusterSource>>,
    (effects, view, read): (&LeavingEffects, &ClusterView, &mut Read),
    now: SystemTime,
) -> Vec<String> {
    // The groups' newest nodes, held while the nodes they replace drain, join scale-down's nodes on their way
    // out (after the snapshot, which gives them pods).
    read.deleting.extend(effects.held.iter().cloned());
    let read = &*read;
    let orders: Vec<DeletionOrder<'_>> = (effects.each())
        .filter(|(_, action)| *action == LeavingAction::Drain)
        .filter_map(|(l, _)| {
            let group = &read.facts[l.group?].group.id;
            Some(DeletionOrder {
                node: &view.nodes[l.node],
                group,
                kind: DeletionKind::Drain,
                cause: Cause::Leaving {
                    reason: l.reason.as_str(),
                    at: l.deadline,
                },
            })
        })
        .collect();
    match cluster {
        Some(cluster) if !orders.is_empty() => down.drain_leaving(&*cluster, orders, now).await.1,
        _ => Vec::new(),
    }
}

/// The leaving nodes into the report (and out of the nodes scale-down kept), and what the metrics count of
/// them (how their pods were planned for, how long until none is pending), from where this loop's plan put
/// pods (`status`).
pub fn report(
    (memory, effects): (&mut LeavingMemory, &LeavingEffects),
    (view, pods, read): (&ClusterView, PodList<'_>, &Read),
    status: &mut Status,
    now: SystemTime,
) {
    status.leaving = effects.statuses(&view.nodes, &read.facts);
    let decided = (status.scale_down.disruptions.iter())
        .map(|d| (&d.node[..], &d.reason[..], &d.action[..], &d.detail[..]));
    LeavingEffects::decided(&mut status.leaving, decided);
    if effects.handling == LeavingHandling::Ignore {
        return; // nothing was planned for them: no outcome to count
    }
    // Scale-down kept them as nodes on their way out: the leaving list says what is done for them.
    (status.scale_down.unremovable).retain(|k| !effects.no_room.contains(&k.node));
    let planned = Planned {
        placed: status.placed.iter().map(|p| p.pod.as_str()).collect(),
        unmet: status.no_scale_up.iter().map(|p| p.pod.as_str()).collect(),
    };
    let at = (&view.nodes[..], pods);
    status.leaving_replaced = memory.follow(effects, at, &planned, now);
}
