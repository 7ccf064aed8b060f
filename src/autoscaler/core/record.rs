//! Each stage's value written into the loop's status: the scale-up plan as carried out, scale-down's report,
//! every group as the loop found it, and the loop's whole time.

use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::scaledown::report::ScaleDownReport as Report;
use crate::autoscaler::scaleup::orchestrator as scaleup;
use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::status::{GroupStatus, LoopProblem, LoopStage, ProblemKind, Status};
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
        })
        .collect()
}

/// The status with the loop's whole time.
pub(crate) fn finish(mut status: Status, started: Instant) -> Status {
    status.times.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    status
}
