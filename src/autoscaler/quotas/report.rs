//! CapacityQuotas in the report: each quota's limits, what its nodes use before this loop's scale-ups and
//! after them, and the node groups whose templates it matches; a quota that is not enforced, with why.

use crate::autoscaler::quotas::ledger::amount;
use serde::Serialize;
use std::collections::BTreeMap;

/// One CapacityQuota this loop. Figures are integers in the units the limits are read in: `cpu` in cores,
/// `memory` in bytes, `nodes` a count, any other resource in its own units.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QuotaReport {
    pub name: String,
    /// Why it is not enforced (its selector or limits are invalid, or its version is not one of ours); its
    /// figures are empty then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    pub limits: BTreeMap<String, u64>,
    /// What the nodes it matches use: registered nodes and those requested, not registered yet.
    pub used: BTreeMap<String, u64>,
    /// The same once this loop's scale-ups (ProvisioningRequests' included) are added.
    pub after_scale_up: BTreeMap<String, u64>,
    /// The node groups whose template it matches: new nodes of these are held to it.
    pub node_groups: Vec<String>,
}

impl QuotaReport {
    /// One line: `gpu-pool: nodes 3 of 4 (4 after scale-up), nvidia.com/gpu 6 of 8 (8 after scale-up);
    /// node groups gpu-a, gpu-b`.
    pub fn describe(&self) -> String {
        if let Some(problem) = &self.problem {
            return format!("{}: not enforced: {problem}", self.name);
        }
        let figures: Vec<String> = (self.limits.iter())
            .map(|(resource, &limit)| {
                let used = self.used.get(resource).copied().unwrap_or(0);
                let after = self.after_scale_up.get(resource).copied().unwrap_or(used);
                let show = |n: u64| amount(resource, n);
                let (used, limit, after) = (show(used), show(limit), show(after));
                format!("{resource} {used} of {limit} ({after} after scale-up)")
            })
            .collect();
        let groups = if self.node_groups.is_empty() {
            "no node group".to_string()
        } else {
            format!("node groups {}", self.node_groups.join(", "))
        };
        format!("{}: {}; {groups}", self.name, figures.join(", "))
    }
}
