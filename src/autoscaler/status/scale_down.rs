//! What scale-down and consolidation decided and did: the nodes that go, the nodes that stay and why, the
//! deletions and replacements in progress.

use crate::model::PodNames;
use serde::Serialize;

/// What scale-down (consolidation included) decided and did this loop. In the report its fields stand
/// among the others', under these names.
#[derive(Clone, Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDownStatus {
    /// The nodes that go.
    #[serde(rename = "scaleDown")]
    pub nodes: Vec<ScaleDown>,
    /// Nodes of the cluster that stay, with why (every node not in `nodes` and not being deleted).
    pub unremovable: Vec<KeptNode>,
    /// Deletions in progress or finished this loop.
    pub deletions: Vec<DeletionStatus>,
    /// Replacements by cheaper nodes (`--consolidation replace`): planned (`simulate`), or started this loop.
    pub consolidation: Vec<Consolidation>,
    /// With `--consolidation replace`: the nodes not replaced, with why.
    pub not_consolidated: Vec<KeptNode>,
    /// Replacements in progress, and those that ended this loop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub replacements: Vec<ReplacementStatus>,
    /// Nodes past their group's `expireAfter` or drifted from its image (`--disruption-config`), each with
    /// what happens to it this loop.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disruptions: Vec<DisruptionStatus>,
    /// For each group a disruption configuration names, and each reason: what its active budgets allow.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disruption_budgets: Vec<DisruptionBudgetStatus>,
}

impl ScaleDownStatus {
    /// `other`'s entries after these.
    pub fn merge(&mut self, other: ScaleDownStatus) {
        self.nodes.extend(other.nodes);
        self.unremovable.extend(other.unremovable);
        self.deletions.extend(other.deletions);
        self.consolidation.extend(other.consolidation);
        self.not_consolidated.extend(other.not_consolidated);
        self.replacements.extend(other.replacements);
        self.disruptions.extend(other.disruptions);
        self.disruption_budgets.extend(other.disruption_budgets);
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

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleDown {
    pub node: String,
    pub node_group: String,
    /// `empty` (no pod needs a new place) or `underutilized`.
    pub reason: String,
    /// Utilization against the threshold, and where its pods go.
    pub detail: String,
    /// The pods its removal evicts.
    pub pods: PodNames,
    /// Evicting them all at once exceeds a PodDisruptionBudget: the drain waits for replacements.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub risky: bool,
}

/// Nodes replaced by one cheaper node.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consolidation {
    pub nodes: Vec<String>,
    pub from_node_groups: Vec<String>,
    /// Where the new node launches, and as what.
    pub node_group: String,
    pub instance_type: String,
    /// The pods that move to it.
    pub pods: Vec<String>,
    pub price_per_hour_before: f64,
    pub price_per_hour_after: f64,
    pub saving_per_hour: f64,
    /// Set when the provider refused the new node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Consolidation {
    /// `ip-a, ip-b (general, general) -> a new spot node (m5.xlarge): $0.1920/h -> $0.0672/h`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({}) -> a new {} node ({}): ${:.4}/h -> ${:.4}/h",
            self.nodes.join(", "),
            self.from_node_groups.join(", "),
            self.node_group,
            self.instance_type,
            self.price_per_hour_before,
            self.price_per_hour_after
        )
    }

    /// ` (FAILED: why)` when the provider refused the new node.
    pub fn failure(&self) -> String {
        (self.error.as_ref()).map_or(String::new(), |e| format!(" (FAILED: {e})"))
    }
}

/// A replacement in progress, or one that ended this loop.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplacementStatus {
    /// The nodes it replaces.
    pub nodes: Vec<String>,
    pub node_group: String,
    /// The new node, once it is Ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_node: Option<String>,
    /// `single` (one node replaced) or `multi` (several merged into one) for a consolidation; `expired` or
    /// `drifted` for a node replaced surge-first (`--disruption-config`).
    pub kind: String,
    /// `launching` (waiting for the new node to be Ready), `replacing` (it is: the old nodes' drains start),
    /// `draining` (they go on), `done` (the old nodes are gone), `abandoned` (the new node never turned
    /// Ready, or the pods no longer fit: the old nodes stay) or `failed` (a drain failed: the old node
    /// stays).
    pub state: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
    pub saving_per_hour: f64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptNode {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_group: Option<String>,
    /// cluster-autoscaler's name for the reason (`NotUnderutilized`, `BlockedByPod`, `NoPlaceToMovePods`, ...).
    pub reason: String,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeletionStatus {
    pub node: String,
    pub node_group: String,
    /// `started`, `draining`, `paused` (the view lost its pods), `deleted`, `failed`, `stopped` (its group
    /// started a managed node group update: it stays, nothing failed) or `restored`.
    pub state: String,
    /// What it waits for, why it failed, or, once deleted, why it went (`empty` or `underutilized`).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// An expired or drifted node, and what happens to it this loop.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionStatus {
    pub node: String,
    pub node_group: String,
    /// `expired` (older than its group's `expireAfter`) or `drifted` (its image is not its group's).
    pub reason: String,
    /// `remove` (its pods fit on the other nodes: it is drained and removed), `replace` (a new node of its
    /// group comes first; it drains once that node is Ready), `terminateFirst` (its group has no room to
    /// surge: it is drained and removed first, its group's replacement asked once it is gone), `cordon` (a
    /// drifted node cordoned ahead of its turn while a budget or the lack of room holds it) or `wait` (a
    /// budget, a do-not-disrupt pod or a PodDisruptionBudget holds it, or its group cannot grow for a
    /// replacement).
    pub action: String,
    pub detail: String,
}

/// What a group's active disruption budgets allow for one reason this loop.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DisruptionBudgetStatus {
    pub node_group: String,
    /// `Empty`, `Underutilized`, `Drifted` or `Expired`.
    pub reason: String,
    /// How many of its nodes may be disrupted at once for this reason, before this loop's own removals;
    /// null when no active budget names the reason.
    pub allowed: Option<u64>,
    /// Its nodes being disrupted already: being deleted, or NotReady.
    pub disrupting: u64,
}
