//! The leaving nodes in the report (`leaving` in `simulate --format json`, the table's "Leaving nodes", the
//! status ConfigMap), and what the metrics count of them.

use crate::autoscaler::leaving::action::LeavingAction;
use crate::model::LeavingReason;
use serde::Serialize;

/// One leaving node, as the report lists it (sorted by node).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeavingStatus {
    pub node: String,
    /// Its node group; empty for a node in none.
    pub node_group: String,
    /// `spotInterruption`, `rebalance`, `scheduledEvent`, `instanceStopped` or `unhealthy`.
    pub reason: String,
    /// When it goes, or since when it is so (RFC 3339).
    pub at: String,
    pub action: LeavingAction,
    /// What its source said, and what is done for its pods.
    pub detail: String,
}

impl LeavingStatus {
    /// One line: `ip-10-0-1-5 (spot): spotInterruption at 2026-...: drain: ...`.
    pub fn describe(&self) -> String {
        let group = match self.node_group.as_str() {
            "" => String::new(),
            g => format!(" ({g})"),
        };
        format!(
            "{}{group}: {} at {}: {}: {}",
            self.node, self.reason, self.at, self.action, self.detail
        )
    }
}

/// What the metrics count of leaving nodes this loop: how the pods of each newly seen node were planned for,
/// and, for each whose pods all found room since, how long that took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeavingReplaced {
    /// Once per node, the loop that first saw it: `existingRoom`, `scaleUp`, `nodeGroup` (its group replaces
    /// it), `unmet` (some pods fit nowhere) or `later` (nothing is moved yet).
    pub outcomes: Vec<(LeavingReason, &'static str)>,
    /// Seconds from the loop that first saw the node leaving to the loop where none of its pods is pending.
    pub seconds: Vec<(LeavingReason, f64)>,
}
