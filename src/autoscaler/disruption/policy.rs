//! What one entry of the disruption document says of the node groups it matches: its budgets, when a node
//! expires (Karpenter's `expireAfter`), how long a drain for expiry or drift may be blocked before it is
//! forced (Karpenter's `terminationGracePeriod`), and when ekscale repairs an unhealthy node (`repair:`).

use super::allowance::Evaluated;
use super::budget::Budget;
use super::repair::NodeRepair;
use super::sizes::SizeSchedule;
use crate::model::DEFAULT_DRAIN_LEAD;
use std::time::{Duration, SystemTime};

#[derive(Clone, Debug, Default)]
pub struct GroupPolicy {
    budgets: Vec<Budget>,
    expire_after: Option<Duration>,
    termination_grace_period: Option<Duration>,
    /// ekscale's node repair for the group, when the entry asks for it.
    repair: Option<NodeRepair>,
    /// `schedules:`: the sizes in force while each window is open.
    schedules: Vec<SizeSchedule>,
    /// `drainLead:`: how long before EKS scales a Capacity Block group in its pods are planned elsewhere.
    drain_lead: Option<Duration>,
    /// `scaleDownReserved:`: whether nodes on reserved capacity may be scaled down for low utilization.
    scale_down_reserved: bool,
}

impl GroupPolicy {
    /// `expire_after` and `termination_grace_period` are `None` for never (`Never`, or left out).
    pub fn new(
        budgets: Vec<Budget>,
        expire_after: Option<Duration>,
        termination_grace_period: Option<Duration>,
    ) -> GroupPolicy {
        GroupPolicy {
            budgets,
            expire_after,
            termination_grace_period,
            repair: None,
            schedules: Vec::new(),
            drain_lead: None,
            scale_down_reserved: false,
        }
    }

    /// The same policy, with the entry's scheduled sizes, Capacity Block drain lead and whether reserved
    /// nodes may be scaled down.
    pub fn with_capacity(
        self,
        schedules: Vec<SizeSchedule>,
        drain_lead: Option<Duration>,
        scale_down_reserved: bool,
    ) -> GroupPolicy {
        GroupPolicy {
            schedules,
            drain_lead,
            scale_down_reserved,
            ..self
        }
    }

    /// The scheduled sizes, in the order written.
    pub fn schedules(&self) -> &[SizeSchedule] {
        &self.schedules
    }

    /// How long before EKS scales a Capacity Block group in its pods are planned elsewhere (10 minutes when
    /// the entry does not say).
    pub fn drain_lead(&self) -> Duration {
        self.drain_lead.unwrap_or(DEFAULT_DRAIN_LEAD)
    }

    /// Whether its nodes on reserved capacity may be scaled down for low utilization.
    pub fn scale_down_reserved(&self) -> bool {
        self.scale_down_reserved
    }

    /// The same policy, with ekscale's node repair as `repair:` says (none: not repaired by ekscale).
    pub fn with_repair(self, repair: Option<NodeRepair>) -> GroupPolicy {
        GroupPolicy { repair, ..self }
    }

    /// ekscale's node repair for the group, when its entry asks for it.
    pub fn repair(&self) -> Option<&NodeRepair> {
        self.repair.as_ref()
    }

    /// The budgets in the order written; none means no limit on disruption.
    pub fn budgets(&self) -> &[Budget] {
        &self.budgets
    }

    /// The budgets at `now`: once per loop, then [`Evaluated::allowance`] for each reason.
    pub fn evaluate(&self, now: SystemTime) -> Evaluated<'_> {
        Evaluated::new(&self.budgets, now)
    }

    /// How old a node may grow before it is replaced; `None` for never.
    pub fn expire_after(&self) -> Option<Duration> {
        self.expire_after
    }

    /// When a node created at `created` expires; `None` if it never does.
    pub fn expires_at(&self, created: SystemTime) -> Option<SystemTime> {
        created.checked_add(self.expire_after?)
    }

    /// Whether a node created at `created` has expired at `now`: from the instant `created + expireAfter`
    /// on, as Karpenter's expiration controller decides (it waits while `now < expiration`).
    pub fn expired(&self, created: SystemTime, now: SystemTime) -> bool {
        self.expires_at(created).is_some_and(|at| now >= at)
    }

    /// How long a drain for expiry or drift may be blocked (by a PodDisruptionBudget, or a pod that must not
    /// be disrupted) before the node's pods are deleted anyway; `None` to wait for as long as it takes.
    pub fn termination_grace_period(&self) -> Option<Duration> {
        self.termination_grace_period
    }

    /// When a drain that started at `started` is forced; `None` if it never is.
    pub fn drain_deadline(&self, started: SystemTime) -> Option<SystemTime> {
        started.checked_add(self.termination_grace_period?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::budget::{Nodes, Reason};
    use super::*;

    const H: Duration = Duration::from_secs(3600);

    #[test]
    fn a_node_expires_from_creation_plus_expire_after_on() {
        let policy = GroupPolicy::new(Vec::new(), Some(720 * H), None);
        let created = SystemTime::UNIX_EPOCH + 1000 * H;
        let expiry = created + 720 * H;
        assert_eq!(policy.expires_at(created), Some(expiry));
        assert!(!policy.expired(created, expiry - Duration::from_secs(1)));
        assert!(policy.expired(created, expiry));
        assert!(policy.expired(created, expiry + H));
        // A node created after `now` (clocks disagree) has not expired.
        assert!(!policy.expired(created, created - H));
    }

    #[test]
    fn never_is_none_and_nothing_expires() {
        let policy = GroupPolicy::default();
        let created = SystemTime::UNIX_EPOCH;
        assert_eq!(policy.expire_after(), None);
        assert_eq!(policy.expires_at(created), None);
        assert!(!policy.expired(created, created + 1_000_000 * H));
        assert_eq!(policy.termination_grace_period(), None);
        assert_eq!(policy.drain_deadline(created), None);
    }

    #[test]
    fn its_budgets_are_evaluated_as_written() {
        let policy = GroupPolicy::new(
            vec![
                Budget::always(Nodes::Percent(10)),
                Budget::always(Nodes::Count(2)),
            ],
            None,
            None,
        );
        assert_eq!(policy.budgets()[1].nodes, Nodes::Count(2));
        let evaluated = policy.evaluate(SystemTime::UNIX_EPOCH);
        assert_eq!(evaluated.allowance(Reason::Empty, 5, 0).allowed, Some(1));
        assert_eq!(evaluated.allowance(Reason::Empty, 50, 0).allowed, Some(2));
        let none = GroupPolicy::default();
        let evaluated = none.evaluate(SystemTime::UNIX_EPOCH);
        assert_eq!(evaluated.allowance(Reason::Empty, 50, 0).allowed, None);
    }

    #[test]
    fn a_drain_is_forced_a_grace_period_after_it_started() {
        let policy = GroupPolicy::new(Vec::new(), None, Some(2 * H));
        let started = SystemTime::UNIX_EPOCH + 5 * H;
        assert_eq!(policy.termination_grace_period(), Some(2 * H));
        assert_eq!(policy.drain_deadline(started), Some(started + 2 * H));
    }
}
