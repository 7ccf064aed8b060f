//! One loop, as cluster-autoscaler's core runs it: whether the cluster is healthy enough to act, the pods
//! sorted by what the loop does with them, and RunOnce, which runs the stages in order and assembles the
//! report.

pub(crate) mod claim_needs; // what each pod's claims ask of its node, found once a loop
pub(crate) mod classify; // pods by what the loop does with them; batching of new pods
pub(crate) mod disruption_source; // the disruption configuration a loop keeps: the cluster's, the file's, the last good
pub(crate) mod features; // this loop's features (headroom and CapacityBuffers, ProvisioningRequests) as one list at the seam
pub(crate) mod health; // cluster and node group health: unready nodes stop the loop or a group's scale-up
pub(crate) mod leaving; // the loop's part of leaving nodes: found after health, their drains started, their report
pub(crate) mod record; // each stage's value written into the loop's status; what the cluster state read
pub(crate) mod runonce; // one iteration: the stages in order, each returning its decisions and its part of the report
pub(crate) mod stages; // the values the stages hand on: pods grouped, what scale-down plans over, its context
