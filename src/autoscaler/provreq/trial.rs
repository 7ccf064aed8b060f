//! A request's pods tried on a fork of the loop's snapshot, all or nothing, as upstream tries them on a
//! forked ClusterSnapshot: the fork is kept only when every pod found a place. check-capacity looks only
//! at the cluster as it is (and the nodes already coming); best-effort-atomic places what fits there and
//! plans one scale-up of one node group for the rest, within the group's and the cluster's limits.

use crate::autoscaler::clustersnapshot::snapshot::ClusterSnapshot;
use crate::autoscaler::degradation::BatchingBudget;
use crate::autoscaler::group::Group;
use crate::autoscaler::provreq::requests::Class;
use crate::autoscaler::scaleup::expander::{Expander, ExpanderError};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::autoscaler::scaleup::orchestrator as planner;
use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::status::{ScaleUp, describe_reasons};
use crate::model::{PodList, PodNames};
use crate::simulator::{EquivalenceGroup, explain};

/// At most this many requests are tried a loop, oldest first (the rest wait their turn, their status as it
/// was): each trial copies the snapshot, so a queue of requests that do not fit must not make every loop cost
/// the cluster times the queue. Upstream checks at most 10 check-capacity requests a batch and one
/// best-effort-atomic request a loop.
pub const MAX_TRIALS_PER_LOOP: usize = 10;

/// Where a request's pods went on the fork.
pub enum Tried {
    /// All fit in the cluster as it is: the fork holds them.
    InCluster(ClusterSnapshot),
    /// All fit once this one group grows: the fork holds them on its planned nodes.
    ScaleUp(ClusterSnapshot, ScaleUp),
    /// Not all fit: why, for the `Provisioned=False` message.
    NotFound(String),
}

/// What a trial reads of the loop.
pub struct TrialWorld<'a> {
    pub pods: PodList<'a>,
    pub keys: &'a PodNames,
    pub groups: &'a [Group],
    pub limits: &'a ClusterLimits,
    pub expander: &'a Expander,
}

/// Tries the request of `class` whose pods are `pending` (equivalence groups of the loop's pod list) on a
/// fork of `snapshot`.
pub fn try_on(
    snapshot: &ClusterSnapshot,
    class: Class,
    pending: &[EquivalenceGroup],
    world: &TrialWorld<'_>,
) -> Result<Tried, ExpanderError> {
    let total: usize = pending.iter().map(|eg| eg.pods.len()).sum();
    let mut fork = snapshot.clone();
    let fitted = fork.place_pending(
        world.pods,
        pending,
        world.groups,
        &mut BatchingBudget::unlimited(),
    );
    let fit: usize = fitted.done.iter().sum();
    if fit == total {
        return Ok(Tried::InCluster(fork));
    }
    if class == Class::CheckCapacity {
        // Why the first pod left fits nowhere, in the scheduler's words, beside the pods placed before it.
        let why = first_left(pending, &fitted.done).map_or(String::new(), |e| {
            let pod = &world.pods[pending[e].pods[fitted.done[e]]];
            let terms = &fitted.terms[e];
            let why = explain(&fork.topology, &fork.places, pod, terms, |_| false);
            format!(" The next: {why}.")
        });
        return Ok(Tried::NotFound(format!(
            "{fit} of {total} pods fit in the cluster as it is.{why}"
        )));
    }
    let mut pending = Pending {
        pods: world.pods,
        keys: world.keys,
        groups: pending.to_vec(),
        terms: fitted.terms,
        done: fitted.done,
        prices: vec![None; pending.len()],
        device_prices: Default::default(),
        stabilizer: 0.0,
        homes: Vec::new(),
    };
    // All of it in one group's increase: balancing would split it over groups whose increases are not one.
    let limits = ClusterLimits {
        balance_similar_node_groups: false,
        ..world.limits.clone()
    };
    let totals = fork.totals();
    let ClusterSnapshot {
        topology, places, ..
    } = &mut fork;
    let expander = world.expander.without_price();
    let orchestrator = planner::ScaleUpOrchestrator {
        groups: world.groups,
        limits: &limits,
        expander: &expander,
        totals,
    };
    let plan = orchestrator.plan(topology, places, &mut pending)?;
    if let Some(first) = first_left(&pending.groups, &pending.done) {
        // Which limit or predicate stops the first pods left, by node group.
        let left = total - pending.done.iter().sum::<usize>();
        let why = plan.reasons.get(first).map(describe_reasons);
        let why = why.filter(|w| !w.is_empty());
        let why = why.unwrap_or_else(|| "no node group".into());
        return Ok(Tried::NotFound(format!(
            "{left} of {total} pods fit in no scale-up ({why})."
        )));
    }
    let mut scale_ups = plan.scale_ups;
    if scale_ups.len() > 1 {
        let ids: Vec<&str> = scale_ups.iter().map(|s| s.node_group.as_str()).collect();
        return Ok(Tried::NotFound(format!(
            "its pods need more than one node group ({}): an all-or-nothing increase is made in one.",
            ids.join(", ")
        )));
    }
    match scale_ups.pop() {
        Some(scale_up) => Ok(Tried::ScaleUp(fork, scale_up)),
        // Placed by the plan without a new node (on nodes it had already planned): as in the cluster.
        None => Ok(Tried::InCluster(fork)),
    }
}

/// The first equivalence group with pods left unplaced (`done` of each placed, from the front).
fn first_left(groups: &[EquivalenceGroup], done: &[usize]) -> Option<usize> {
    (groups.iter().zip(done)).position(|(eg, &done)| done < eg.pods.len())
}
