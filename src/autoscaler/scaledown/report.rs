//! What the scale-down stage (consolidation included) hands back to the loop: its part of the report, and
//! the groups whose failures back them off. Each step returns one; the loop puts them in the status.

use crate::autoscaler::status::{
    Consolidation, DeletionStatus, KeptNode, ReplacementStatus, ScaleDown,
};

/// A group to back off, and why: a replacement's new node there was refused, failed to launch, or never
/// turned Ready.
pub type Backoff = (String, String);

/// Scale-down's part of the loop's report; each field is the status field of the same name.
#[derive(Debug, Default)]
pub struct Report {
    pub scale_down: Vec<ScaleDown>,
    pub unremovable: Vec<KeptNode>,
    pub deletions: Vec<DeletionStatus>,
    pub consolidation: Vec<Consolidation>,
    pub not_consolidated: Vec<KeptNode>,
    pub replacements: Vec<ReplacementStatus>,
    pub errors: Vec<String>,
    pub scale_down_ms: f64,
    pub consolidation_ms: f64,
    /// Groups to back off: not part of the status, a decision for the loop's backoff.
    pub backoffs: Vec<Backoff>,
}

impl Report {
    /// `other`'s entries after these (its times added).
    pub fn merge(&mut self, other: Report) {
        self.scale_down.extend(other.scale_down);
        self.unremovable.extend(other.unremovable);
        self.deletions.extend(other.deletions);
        self.consolidation.extend(other.consolidation);
        self.not_consolidated.extend(other.not_consolidated);
        self.replacements.extend(other.replacements);
        self.errors.extend(other.errors);
        self.scale_down_ms += other.scale_down_ms;
        self.consolidation_ms += other.consolidation_ms;
        self.backoffs.extend(other.backoffs);
    }

    pub fn deletion(&mut self, node: String, node_group: String, state: &str, detail: String) {
        self.deletions.push(DeletionStatus {
            node,
            node_group,
            state: state.into(),
            detail,
        });
    }
}
