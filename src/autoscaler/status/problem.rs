//! A problem that stopped part of one loop, typed: the stage it stopped, what kind of step failed, and the
//! message as the report has always said it (the report and the table print the detail alone, unchanged).

use serde::{Serialize, Serializer};
use std::fmt;

/// The part of the loop a problem stopped, in the loop's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LoopStage {
    /// CapacityQuotas' statuses, written at the loop's start.
    Quotas,
    /// Scheduled sizes: a group's `schedules:` window that could not be evaluated (it keeps its own sizes).
    Schedules,
    /// Leaving nodes: the provider's leaving instances, the drains of those that go now.
    Leaving,
    /// Grouping pending pods: Fargate's profiles and the pods it takes.
    Fargate,
    /// The expander, before scale-up: prices for the price expander.
    Expander,
    /// Scale-up: a group's increase.
    ScaleUp,
    /// Scale-down and consolidation, deletions in progress, instances that never registered.
    ScaleDown,
    /// Headroom's, CapacityBuffers' and ProvisioningRequests' statuses, written at the loop's end.
    Statuses,
}

/// What kind of step failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ProblemKind {
    /// A call to the cloud provider (a read: profiles, prices) failed.
    ProviderCall,
    /// An action the loop took (an increase, a deletion, a taint) failed or was refused.
    Action,
    /// A status the loop writes back to an object failed to be written.
    StatusWrite,
    /// A rule of the configuration could not be evaluated at the loop's instant (a scheduled window).
    Evaluation,
}

/// One problem of the loop. Serializes as its detail alone: the JSON report's `errors` stay a list of strings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopProblem {
    pub stage: LoopStage,
    pub kind: ProblemKind,
    /// The message, whole, as the report says it (`scale-up of ng-a: ...`).
    pub detail: String,
}

impl LoopProblem {
    pub fn new(stage: LoopStage, kind: ProblemKind, detail: impl Into<String>) -> LoopProblem {
        LoopProblem {
            stage,
            kind,
            detail: detail.into(),
        }
    }

    /// Each of `details`, found in `stage` by a step of `kind`.
    pub fn all(
        stage: LoopStage,
        kind: ProblemKind,
        details: impl IntoIterator<Item = String>,
    ) -> impl Iterator<Item = LoopProblem> {
        details
            .into_iter()
            .map(move |detail| LoopProblem::new(stage, kind, detail))
    }

    /// Whether the message says `needle`.
    pub fn contains(&self, needle: &str) -> bool {
        self.detail.contains(needle)
    }

    /// Whether the message begins with `prefix`.
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.detail.starts_with(prefix)
    }
}

impl fmt::Display for LoopProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl Serialize for LoopProblem {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.detail)
    }
}

#[cfg(test)]
mod tests {
    use super::{LoopProblem, LoopStage, ProblemKind};

    #[test]
    fn it_reads_and_serializes_as_its_message() {
        let problem =
            LoopProblem::new(LoopStage::ScaleUp, ProblemKind::Action, "scale-up of a: no");
        assert_eq!(problem.to_string(), "scale-up of a: no");
        assert_eq!(
            serde_json::to_string(&vec![problem.clone()]).unwrap(),
            r#"["scale-up of a: no"]"#
        );
        assert!(problem.starts_with("scale-up of") && problem.contains("a: no"));
    }
}
