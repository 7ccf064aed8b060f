//! An entry's `repair:`: ekscale's node repair for groups whose EKS auto repair is off (Karpenter's node
//! repair, paced per group): how long a node monitoring agent's problem must last before the node is
//! replaced, in general and per condition.
//!
//! ```yaml
//! repair:
//!   after: 10m
//!   conditions:
//!     AcceleratedHardwareReady: 5m
//! ```

use super::duration;
use crate::model::{Invalid, NODE_MONITORING_CONDITIONS, NodeProblem};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// `repair:` as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct RepairText {
    after: String,
    #[serde(default)]
    conditions: BTreeMap<String, String>,
}

/// When a node's problem has lasted long enough to repair it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRepair {
    after: Duration,
    /// Per condition type, instead of `after`.
    conditions: BTreeMap<String, Duration>,
}

/// The condition types a repair may name: the monitoring agent's, and kubelet's `Ready`.
fn known(condition: &str) -> bool {
    condition == "Ready" || NODE_MONITORING_CONDITIONS.contains(&condition)
}

impl NodeRepair {
    /// Reads `repair:`, naming the key that is wrong (`repair.after`, `repair.conditions.KernelReady`).
    pub(super) fn read(text: RepairText) -> Result<NodeRepair, Invalid> {
        let parse = |field: String, text: &str| {
            duration::parse(text).map_err(|e| Invalid::new(field, e.to_string()))
        };
        let after = parse("repair.after".into(), &text.after)?;
        let mut conditions = BTreeMap::new();
        for (condition, wait) in text.conditions {
            let field = format!("repair.conditions.{condition}");
            if !known(&condition) {
                let known = NODE_MONITORING_CONDITIONS.join(", ");
                let rule = format!("not a node condition ekscale repairs: one of {known}, Ready");
                return Err(Invalid::new(field, rule));
            }
            let wait = parse(field, &wait)?;
            conditions.insert(condition, wait);
        }
        Ok(NodeRepair { after, conditions })
    }

    /// How long `condition` must last before its node is repaired.
    pub fn wait(&self, condition: &str) -> Duration {
        self.conditions
            .get(condition)
            .copied()
            .unwrap_or(self.after)
    }

    /// When the first of `problems` is due for repair (its start plus its wait); `None` while no problem has a
    /// known start.
    pub fn due(&self, problems: &[NodeProblem]) -> Option<SystemTime> {
        (problems.iter())
            .filter_map(|p| Some(p.since? + self.wait(&p.condition)))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(yaml: &str) -> Result<NodeRepair, Invalid> {
        NodeRepair::read(serde_norway::from_str(yaml).unwrap())
    }

    #[test]
    fn a_condition_waits_its_own_time_and_the_others_after() {
        let repair = read("{after: 10m, conditions: {AcceleratedHardwareReady: 5m}}").unwrap();
        let min = Duration::from_secs(60);
        assert_eq!(repair.wait("AcceleratedHardwareReady"), 5 * min);
        assert_eq!(repair.wait("KernelReady"), 10 * min);
        let t0 = SystemTime::UNIX_EPOCH + 1000 * min;
        let problem = |condition: &str, since| NodeProblem {
            condition: condition.into(),
            reason: "X".into(),
            since,
        };
        let problems = [
            problem("KernelReady", Some(t0)),
            problem("AcceleratedHardwareReady", Some(t0 + min)),
        ];
        assert_eq!(repair.due(&problems), Some(t0 + 6 * min));
        assert_eq!(repair.due(&[problem("KernelReady", None)]), None);
    }

    #[test]
    fn a_wrong_key_is_named() {
        let wrong = read("{after: 10m, conditions: {KernelReady: soon}}").unwrap_err();
        assert_eq!(wrong.field, "repair.conditions.KernelReady");
        let unknown = read("{after: 10m, conditions: {DiskFull: 5m}}").unwrap_err();
        assert_eq!(unknown.field, "repair.conditions.DiskFull");
        assert!(
            unknown.rule.contains("AcceleratedHardwareReady"),
            "{unknown}"
        );
        assert_eq!(read("{after: x}").unwrap_err().field, "repair.after");
        let extra: Result<RepairText, _> = serde_norway::from_str("{after: 1m, every: 2m}");
        assert!(extra.is_err(), "unknown keys are refused");
    }
}
