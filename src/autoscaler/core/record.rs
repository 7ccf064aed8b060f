//! Each stage's value written into the loop's status: the scale-up plan as carried out, scale-down's report,
//! every group as the loop found it, and the loop's whole time; and what the cluster-state stage read, which
//! the stages after it share (the snapshot's inputs and the quota report are made of it).

use crate::autoscaler::client::{ClientError, Profiles};
use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::clustersnapshot::snapshot::{
    self as cluster_snapshot, ClusterSnapshot, Fitted,
};
use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::core::classify::Sorted;
use crate::autoscaler::degradation::{BatchingBudget, Degradation};
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::planning::planning;
use crate::autoscaler::quotas::{QuotaBefore, QuotaReport, QuotaStage};
use crate::autoscaler::scaledown::report::ScaleDownReport as Report;
use crate::autoscaler::scaleup::orchestrator as scaleup;
use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::schedules::SizesInForce;
use crate::autoscaler::status::{
    DEGRADED_SCALE_DOWN_TURN, GroupStatus, LoopProblem, LoopStage, NoScaleUp, ProblemKind,
    SKIPPED_BATCHING_TIMEOUT, Status,
};
use crate::model::{LabelProjection, PodList};
use crate::simulator::EquivalenceGroup;
use std::collections::{BTreeMap, HashSet};
use std::time::Instant;

/// A scale-up plan, carried out, in the status: each scale-up with its outcome, and why no group helps each
/// pod left.
pub(crate) fn scale_up(status: &mut Status, plan: scaleup::ScaleUpPlan, pending: &Pending) {
    status.times.estimate_ms = plan.estimate_time.as_secs_f64() * 1000.0;
    for failed in &plan.scale_ups {
        if let Some(why) = &failed.error {
            let group = &failed.node_group;
            let detail = format!("scale-up of {group}: {why}");
            (status.errors).push(LoopProblem::new(
                LoopStage::ScaleUp,
                ProblemKind::Action,
                detail,
            ));
        }
    }
    status.scale_up = plan.scale_ups;
    let reasons = plan.reasons;
    (status.no_scale_up).extend(pending.left_over(|e| reasons[e].clone()));
}

/// FilterOutSchedulable over the snapshot, the pending pods placed while the batching timeout lasts: the
/// groups it left untried leave `help` (said in `status`), and the degraded loops are counted.
pub(crate) fn fit_pending(
    (snapshot, pods, groups): (&mut ClusterSnapshot, PodList<'_>, &[Group]),
    help: &mut Vec<EquivalenceGroup>,
    degradation: &mut Degradation,
    status: &mut Status,
) -> Fitted {
    let progress = degradation.progress.clone();
    let mut budget = BatchingBudget::starting_now(degradation.timeout, progress);
    let mut fitted = planning(|| snapshot.place_pending(pods, help, groups, &mut budget));
    status.placed = std::mem::take(&mut fitted.placed);
    skip_untried(status, pods, (help, &mut fitted), budget.left_from());
    status.degradation_change = degradation.loops.after(status.skipped_pods);
    status.graceful_degradation_loops = degradation.loops.0;
    degradation.progress.beat();
    fitted
}

/// Graceful degradation: the equivalence groups from `left_from` on were not tried before the pending pods'
/// batching timeout. They leave `help` and `fitted` (no scale-up is planned for pods that may fit where nodes
/// are) and wait for the next loop, each pod said in the status, as upstream's filter-out processor drops its
/// unprocessed pods from the ones it hands to scale-up.
pub(crate) fn skip_untried(
    status: &mut Status,
    pods: PodList<'_>,
    (help, fitted): (&mut Vec<EquivalenceGroup>, &mut Fitted),
    left_from: Option<usize>,
) {
    let Some(from) = left_from.filter(|&from| from < help.len()) else {
        return;
    };
    fitted.terms.truncate(from);
    fitted.done.truncate(from);
    let why = BTreeMap::from([(String::new(), SKIPPED_BATCHING_TIMEOUT.to_string())]);
    for eg in help.drain(from..) {
        status.skipped_pods += eg.pods.len();
        (status.no_scale_up).extend(eg.pods.iter().map(|&p| NoScaleUp {
            pod: pods[p].key(),
            reasons: why.clone(),
        }));
    }
    tracing::info!(
        skipped = status.skipped_pods,
        "pods were skipped due to exceeding pending pod batching timeout"
    );
}

/// A degraded loop whose turn is scale-down's: no scale-up is planned, each pod left says why.
pub(crate) fn scale_down_turn(pending: &mut Pending, said: &mut Vec<NoScaleUp>) {
    let why = BTreeMap::from([(String::new(), DEGRADED_SCALE_DOWN_TURN.to_string())]);
    said.extend(pending.left_over(|_| why.clone()));
    pending.done = pending.groups.iter().map(|g| g.pods.len()).collect();
}

/// Scale-down's part of the report in the status.
pub(crate) fn scale_down(status: &mut Status, report: Report) {
    status.scale_down.merge(report.status);
    status.scale_up.extend(report.scale_ups);
    let errors = LoopProblem::all(LoopStage::ScaleDown, ProblemKind::Action, report.errors);
    status.errors.extend(errors);
    status.times.add(report.times);
}

/// Each group as the loop found it: sizes, nodes registered and coming, and why it could not grow.
pub(crate) fn group_statuses(
    facts: &[GroupFacts],
    counts: &[Counts],
    groups: &[Group],
) -> Vec<GroupStatus> {
    (facts.iter().zip(counts).zip(groups))
        .map(|((f, c), g)| GroupStatus {
            id: f.group.id.clone(),
            min_size: f.group.min_size,
            max_size: f.group.max_size,
            target_size: f.target,
            registered: c.registered,
            upcoming: c.upcoming,
            skipped: g.skip.clone(),
            eks_status: f.state.as_ref().map(|s| s.status.to_string()),
            image: f.image().map(str::to_string),
            capacity_type: (f.state.as_ref())
                .and_then(|s| s.capacity_type)
                .map(|c| c.to_string()),
            reservations: (f.state.iter())
                .flat_map(|s| &s.reservations)
                .map(Into::into)
                .collect(),
            schedule: None,
        })
        .collect()
}

/// The status with the loop's whole time.
pub(crate) fn finish(mut status: Status, started: Instant) -> Status {
    status.times.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    status
}

/// What the cluster-state stage read and decided: the groups as the provider says them, which group each
/// node is in, the nodes on their way out, and what happened to the deletions in progress.
pub struct Read {
    pub facts: Vec<GroupFacts>,
    pub profiles: Result<Option<Profiles>, ClientError>,
    pub node_group: Vec<Option<usize>>,
    pub deleting: HashSet<String>,
    pub counts: Vec<Counts>,
    pub report: Report,
    /// The scheduled sizes in force this loop, already written over the groups' sizes.
    pub schedules: SizesInForce,
}

/// Every CapacityQuota of the view in the report, with the enforced ones' figures `before` this loop's
/// scale-ups and after them (committed into `snapshot`); none when quotas are not kept.
pub fn quota_report(
    before: Option<QuotaBefore>,
    view: &ClusterView,
    snapshot: &ClusterSnapshot,
    groups: &[Group],
) -> Vec<QuotaReport> {
    let Some(before) = before else {
        return Vec::new();
    };
    let after = (&snapshot.quotas, &snapshot.places[..]);
    before.report(&view.quotas, after, |g| groups[g].id.clone())
}

/// What the snapshot is built from, out of the earlier stages' values.
pub fn snapshot_inputs<'a>(
    view: &'a ClusterView,
    pods: PodList<'a>,
    sorted: &'a Sorted,
    read: &'a Read,
    projection: &'a LabelProjection,
    quotas: QuotaStage,
) -> cluster_snapshot::Inputs<'a> {
    cluster_snapshot::Inputs {
        view,
        pods,
        bound: &sorted.bound,
        daemonsets: &sorted.daemonsets,
        node_group: &read.node_group,
        facts: &read.facts,
        counts: &read.counts,
        deleting: &read.deleting,
        projection,
        last_dra: None,
        quotas: quotas.enforced(view),
    }
}
