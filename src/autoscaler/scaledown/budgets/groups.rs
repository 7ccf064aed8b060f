//! The disruption budgets of each node group this loop (`--disruption-config`): what they allow for each
//! reason, the group's nodes already being disrupted, and the nodes this loop's stages take from them. One
//! count per group is shared by every reason and every stage (expiry and drift, then scale-down's empty and
//! underutilized nodes, then consolidation), as Karpenter's budgets are; across loops, the nodes being
//! deleted carry it.

use crate::autoscaler::disruption::{DisruptionConfig, Evaluated, GroupPolicy, Reason};
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::autoscaler::status::DisruptionBudgetStatus;
use crate::model::Node;
use std::sync::Arc;
use std::time::SystemTime;

/// What holds one more node of a group for a reason: the budget in use, in words (`general: Expired, 1 of 1
/// allowed in use (50% of 2 nodes)`), as the Event `DisruptionBlocked` says it.
#[derive(Debug, thiserror::Error)]
#[error("{detail}")]
pub struct DisruptionBlocked {
    pub detail: String,
}

/// A group's budgets this loop.
struct GroupBudget<'c> {
    id: String,
    policy: &'c GroupPolicy,
    evaluated: Evaluated<'c>,
    /// Its nodes, as the budgets count them (percents are of this).
    total: u64,
    /// Its nodes being deleted (ours, another autoscaler's, a replacement's old nodes) or NotReady.
    disrupting: u64,
    /// Nodes this loop's stages have chosen to disrupt.
    taken: u64,
}

/// Every group's budgets this loop, by group index; a group no entry of the configuration matches has none
/// and is disrupted as it would be without one.
pub struct DisruptionBudgets<'c> {
    groups: Vec<Option<GroupBudget<'c>>>,
}

impl<'c> DisruptionBudgets<'c> {
    /// The budgets over the view's nodes: `node_group` is each node's group, `disrupting` whether a node is
    /// on its way out (or NotReady).
    pub fn new(
        config: Option<&'c DisruptionConfig>,
        groups: &[GroupInfo],
        nodes: &[Arc<Node>],
        node_group: &[Option<usize>],
        disrupting: impl Fn(&Node) -> bool,
        now: SystemTime,
    ) -> DisruptionBudgets<'c> {
        let mut budgets: Vec<Option<GroupBudget<'c>>> = (groups.iter())
            .map(|g| {
                let policy = config?.policy_for(&g.id)?;
                Some(GroupBudget {
                    id: g.id.clone(),
                    policy,
                    evaluated: policy.evaluate(now),
                    total: 0,
                    disrupting: 0,
                    taken: 0,
                })
            })
            .collect();
        if budgets.iter().any(Option::is_some) {
            for (node, g) in nodes.iter().zip(node_group) {
                if let Some(b) = g.and_then(|g| budgets[g].as_mut()) {
                    b.total += 1;
                    b.disrupting += u64::from(disrupting(node));
                }
            }
        }
        DisruptionBudgets { groups: budgets }
    }

    /// Counts `n` more nodes of group `g` as being disrupted: nodes terminated first whose replacement is
    /// not Ready yet (gone from the view, still taken from their group's budgets).
    pub fn also_disrupting(&mut self, g: usize, n: u64) {
        if let Some(b) = &mut self.groups[g] {
            b.total += n;
            b.disrupting += n;
        }
    }

    /// Whether an active budget of group `g` names `reason` (without one, nothing limits it).
    pub fn limits(&self, g: usize, reason: Reason) -> bool {
        (self.groups[g].as_ref()).is_some_and(|b| {
            (b.evaluated.allowance(reason, b.total, b.disrupting).allowed).is_some()
        })
    }

    /// No group has a policy: nothing is limited, nothing expires.
    pub fn none(groups: usize) -> DisruptionBudgets<'c> {
        DisruptionBudgets {
            groups: (0..groups).map(|_| None).collect(),
        }
    }

    /// Whether any group has a policy (without one, nothing here limits anything).
    pub fn any(&self) -> bool {
        self.groups.iter().any(Option::is_some)
    }

    /// The policy of group `g`, if an entry matches it.
    pub fn policy(&self, g: usize) -> Option<&'c GroupPolicy> {
        self.groups[g].as_ref().map(|b| b.policy)
    }

    /// Whether group `g` may have one more node disrupted for `reason` now; the detail of the budget that
    /// holds it when not.
    pub fn check(&self, g: usize, reason: Reason) -> Result<(), DisruptionBlocked> {
        let Some(b) = &self.groups[g] else {
            return Ok(());
        };
        let allowance = b.evaluated.allowance(reason, b.total, b.disrupting);
        if allowance.allows_one_more(b.taken) {
            return Ok(());
        }
        // In use: the nodes disrupting and those this loop already chose.
        let in_use = b
            .evaluated
            .allowance(reason, b.total, b.disrupting + b.taken);
        Err(DisruptionBlocked {
            detail: in_use.describe(&b.id).to_string(),
        })
    }

    /// Takes one node of group `g` for `reason`, if its budgets allow it.
    pub fn take(&mut self, g: usize, reason: Reason) -> Result<(), DisruptionBlocked> {
        self.check(g, reason)?;
        if let Some(b) = &mut self.groups[g] {
            b.taken += 1;
        }
        Ok(())
    }

    /// For the report: each configured group and reason, what the active budgets allow before this loop's
    /// own removals, and its nodes already disrupting.
    pub fn statuses(&self) -> Vec<DisruptionBudgetStatus> {
        let configured = self.groups.iter().flatten();
        let with_budgets = configured.filter(|b| !b.policy.budgets().is_empty());
        with_budgets
            .flat_map(|b| {
                Reason::ALL.map(|reason| {
                    let allowance = b.evaluated.allowance(reason, b.total, b.disrupting);
                    DisruptionBudgetStatus {
                        node_group: b.id.clone(),
                        reason: reason.to_string(),
                        allowed: allowance.allowed,
                        disrupting: b.disrupting,
                    }
                })
            })
            .collect()
    }
}
