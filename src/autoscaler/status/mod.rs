//! What one RunOnce decided and why: for every pending pod what happened to it, for every node group what
//! it was asked to do. `simulate` prints it (JSON for scripts, a table for people); `/snapshotz` serves it.

mod capacity; // a group's reservations and the scheduled sizes in force
mod problem; // a problem that stopped part of the loop: stage, kind, the message
mod report; // the whole report: each stage's part, the groups, the cluster's health, errors, times
mod reservations; // headroom, CapacityBuffers, ProvisioningRequests
mod scale_down; // nodes that go, nodes that stay, deletions and replacements
mod scale_up; // scale-ups, pods placed, pods no group helps, Fargate pods
mod table; // the same facts for people, a section at a time

pub use crate::autoscaler::leaving::{LeavingAction, LeavingStatus};
pub use crate::autoscaler::quotas::QuotaReport;
pub use capacity::{ReservationStatus, ScheduleStatus};
pub use problem::{LoopProblem, LoopStage, ProblemKind};
pub use report::{ClusterHealth, GroupStatus, Status, Times};
pub use reservations::{
    CapacityBufferStatus, ConditionStatus, HeadroomStatus, ProvisioningRequestStatus,
    RequestScaleUp, Shape,
};
pub use scale_down::{
    Consolidation, DeletionStatus, DisruptionBudgetStatus, DisruptionStatus, KeptNode,
    ReplacementStatus, ScaleDown, ScaleDownStatus,
};
pub use scale_up::{
    DEGRADED_SCALE_DOWN_TURN, DegradationChange, FargatePod, NoScaleUp, Placed,
    SKIPPED_BATCHING_TIMEOUT, ScaleUp, UPCOMING, describe_reasons,
};
