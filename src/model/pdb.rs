//! PodDisruptionBudgets, as far as removing nodes needs them.

use super::labels::Labels;
use super::selector::LabelSelector;

#[derive(Clone, Debug, PartialEq)]
pub struct Pdb {
    pub namespace: String,
    pub name: String,
    /// `None`: the budget selects no pods (policy/v1 reads a missing selector so).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`: how many of its pods may be evicted now.
    pub disruptions_allowed: i32,
}

impl Pdb {
    pub fn covers(&self, namespace: &str, labels: &Labels) -> bool {
        self.namespace == namespace && self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}
