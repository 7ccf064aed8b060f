//! What the scale-down stage (consolidation included) hands back to the loop: its part of the report, and
//! the groups whose failures back them off. Each step returns one; the loop puts them in the status.

use crate::autoscaler::status::{ScaleDownStatus, ScaleUp, Times};

/// A group to back off, and why: a replacement's new node there was refused, failed to launch, or never
/// turned Ready.
pub type BackoffAsked = (String, String);

/// Scale-down's part of the loop's report, with what the loop does beside it.
#[derive(Debug, Default)]
pub struct ScaleDownReport {
    /// What it decided and did, as the status says it.
    pub status: ScaleDownStatus,
    pub errors: Vec<String>,
    /// Its planning times (scale-down's and consolidation's).
    pub times: Times,
    /// The new nodes asked for to replace expired and drifted nodes, each naming the node it replaces.
    pub scale_ups: Vec<ScaleUp>,
    /// Groups to back off: not part of the status, a decision for the loop's backoff.
    pub backoffs: Vec<BackoffAsked>,
}

impl ScaleDownReport {
    /// `other`'s entries after these (its times added).
    pub fn merge(&mut self, other: ScaleDownReport) {
        self.status.merge(other.status);
        self.errors.extend(other.errors);
        self.times.add(other.times);
        self.scale_ups.extend(other.scale_ups);
        self.backoffs.extend(other.backoffs);
    }

    pub fn deletion(&mut self, node: String, node_group: String, state: &str, detail: String) {
        self.status.deletion(node, node_group, state, detail);
    }
}
