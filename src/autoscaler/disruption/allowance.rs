//! How many of a group's nodes may start being disrupted now, for one reason: Karpenter's
//! `GetAllowedDisruptionsByReason` and `BuildDisruptionBudgetMapping`. The allowed number is the least of the
//! active budgets that apply to the reason, and the nodes already being disrupted (deleting or NotReady, for
//! any reason) use it up: `remaining = max(allowed - disrupting, 0)`. No active budget for the reason means no
//! limit.
//!
//! The loop asks for every group and every reason over clusters of 10,000 nodes, so the work is split: each
//! budget's schedule is evaluated once a loop ([`Evaluated::new`], a cron search of a few microseconds), and
//! each allowance is then a pass over the group's few budgets, with no allocation and no look at any node.

use super::budget::{Budget, Nodes, Reason};
use super::schedule::ScheduleError;
use std::fmt;
use std::time::SystemTime;

/// A budget at the instant it was evaluated.
#[derive(Clone, Debug)]
enum BudgetState {
    /// No schedule: the budget always applies.
    Always,
    /// Inside the window `[start, end)` of its schedule.
    Open(SystemTime, SystemTime),
    /// Outside every window: it limits nothing.
    Closed,
    Failed(ScheduleError),
}

/// A group's budgets, evaluated at one instant: once per loop, then asked for each reason.
#[derive(Clone, Debug)]
pub struct Evaluated<'a> {
    budgets: &'a [Budget],
    states: Vec<BudgetState>,
    /// The first budget whose schedule could not be evaluated. Karpenter then allows nothing for any reason
    /// in the pool: a budget that cannot say whether it is open must not be taken as open, nor as closed.
    failed: Option<usize>,
}

impl<'a> Evaluated<'a> {
    pub fn new(budgets: &'a [Budget], now: SystemTime) -> Evaluated<'a> {
        let states: Vec<BudgetState> = (budgets.iter())
            .map(|budget| match &budget.schedule {
                None => BudgetState::Always,
                Some(schedule) => match schedule.active_window(now) {
                    Ok(Some((start, end))) => BudgetState::Open(start, end),
                    Ok(None) => BudgetState::Closed,
                    Err(e) => BudgetState::Failed(e),
                },
            })
            .collect();
        let failed = states
            .iter()
            .position(|s| matches!(s, BudgetState::Failed(_)));
        Evaluated {
            budgets,
            states,
            failed,
        }
    }

    /// The allowance for `reason` in a group of `total` nodes, `disrupting` of which are being deleted or
    /// are NotReady. `total` counts those too, as Karpenter's does (the percent is of the group as it is).
    pub fn allowance(&self, reason: Reason, total: u64, disrupting: u64) -> Allowance<'_> {
        if let Some(index) = self.failed {
            let BudgetState::Failed(error) = &self.states[index] else {
                unreachable!("failed names a failed budget");
            };
            return Allowance {
                reason,
                total,
                allowed: Some(0),
                disrupting,
                remaining: Some(0),
                binding: Some(Binding {
                    index,
                    budget: &self.budgets[index],
                    allowed: 0,
                    limit: Limit::Failed(error),
                }),
            };
        }
        let mut binding: Option<Binding<'_>> = None;
        for (index, (budget, state)) in self.budgets.iter().zip(&self.states).enumerate() {
            if !budget.reasons.contains(reason) {
                continue;
            }
            let limit = match state {
                BudgetState::Always => Limit::Always,
                BudgetState::Open(start, end) => Limit::Window(*start, *end),
                BudgetState::Closed | BudgetState::Failed(_) => continue,
            };
            let allowed = budget.nodes.of(total);
            // The first of equal budgets binds: the one written first is the one people look for.
            if binding.is_none_or(|b| allowed < b.allowed) {
                binding = Some(Binding {
                    index,
                    budget,
                    allowed,
                    limit,
                });
            }
        }
        let allowed = binding.map(|b| b.allowed);
        Allowance {
            reason,
            total,
            allowed,
            disrupting,
            remaining: allowed.map(|a| a.saturating_sub(disrupting)),
            binding,
        }
    }
}

/// What a group's budgets allow for one reason, at the instant they were evaluated.
#[derive(Clone, Copy, Debug)]
pub struct Allowance<'a> {
    pub reason: Reason,
    /// The group's nodes, as counted for the budgets.
    pub total: u64,
    /// Nodes that may be disrupted at once, before the ones already disrupting and this loop's own
    /// removals are taken off; `None` when no budget limits the reason.
    pub allowed: Option<u64>,
    /// Nodes already being disrupted (deleting or NotReady), for any reason.
    pub disrupting: u64,
    /// `allowed - disrupting`, never below 0: how many this loop may start; `None` when unlimited.
    pub remaining: Option<u64>,
    /// The budget that sets `allowed`; `None` when unlimited.
    pub binding: Option<Binding<'a>>,
}

/// The budget that binds, and why it applies now.
#[derive(Clone, Copy, Debug)]
pub struct Binding<'a> {
    /// Its place in its entry's `budgets`.
    pub index: usize,
    pub budget: &'a Budget,
    /// What it allows over the group's nodes.
    pub allowed: u64,
    pub limit: Limit<'a>,
}

#[derive(Clone, Copy, Debug)]
pub enum Limit<'a> {
    /// It has no schedule.
    Always,
    /// Its schedule's window `[start, end)` is open.
    Window(SystemTime, SystemTime),
    /// Its schedule could not be evaluated, so nothing is allowed, for any reason.
    Failed(&'a ScheduleError),
}

impl<'a> Allowance<'a> {
    /// Whether one more node may start being disrupted for this reason once `taken` have been chosen in this
    /// loop (Karpenter takes each candidate off the pool's allowance as it chooses it).
    pub fn allows_one_more(&self, taken: u64) -> bool {
        self.remaining.is_none_or(|r| taken < r)
    }

    /// For the report: `general: Underutilized, 1 of 1 allowed in use (20% of 4 nodes)`, and when nothing
    /// is allowed, `general: 0 allowed from 09:00 to 17:00 Europe/Berlin`.
    pub fn describe(self, group: &'a str) -> Description<'a> {
        Description {
            group,
            allowance: self,
        }
    }
}

/// An allowance in words; see [`Allowance::describe`].
pub struct Description<'a> {
    group: &'a str,
    allowance: Allowance<'a>,
}

impl fmt::Display for Description<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Description { group, allowance } = self;
        let Some(binding) = allowance.binding else {
            return write!(f, "{group}: {}, no budget limits", allowance.reason);
        };
        if let Limit::Failed(error) = binding.limit {
            let cron = binding.budget.schedule.as_ref().map_or("", |s| s.cron());
            return write!(
                f,
                "{group}: 0 allowed: the schedule {cron:?} of budgets[{}] {error}",
                binding.index
            );
        }
        if binding.allowed == 0 {
            write!(f, "{group}: 0 allowed")?;
        } else {
            write!(
                f,
                "{group}: {}, {} of {} allowed in use",
                allowance.reason, allowance.disrupting, binding.allowed
            )?;
        }
        if let Nodes::Percent(p) = binding.budget.nodes {
            let total = allowance.total;
            let nodes = if total == 1 { "node" } else { "nodes" };
            write!(f, " ({p}% of {total} {nodes})")?;
        }
        if let (Limit::Window(start, end), Some(schedule)) =
            (binding.limit, &binding.budget.schedule)
        {
            write!(f, " {}", schedule.describe_window(start, end))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::budget::Reasons;
    use super::super::schedule::Schedule;
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    const H: Duration = Duration::from_secs(3600);

    fn at(text: &str) -> SystemTime {
        SystemTime::from(text.parse::<jiff::Timestamp>().unwrap())
    }

    /// Monday 2024-06-10, 12:00 in Berlin.
    fn monday_noon() -> SystemTime {
        at("2024-06-10T10:00:00Z")
    }

    fn office_hours(nodes: Nodes, reasons: &[Reason]) -> Budget {
        Budget {
            nodes,
            schedule: Some(Schedule::new("0 9 * * mon-fri", 8 * H, Some("Europe/Berlin")).unwrap()),
            reasons: Reasons::of(reasons),
        }
    }

    #[test]
    fn the_least_active_budget_binds() {
        let budgets = [
            Budget::always(Nodes::Percent(50)),
            Budget::always(Nodes::Count(3)),
            Budget::always(Nodes::Percent(20)),
        ];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        // Of 10 nodes: 5, 3 and 2.
        let a = evaluated.allowance(Reason::Underutilized, 10, 0);
        assert_eq!((a.allowed, a.remaining), (Some(2), Some(2)));
        assert_eq!(a.binding.unwrap().index, 2);
        // Of 40 nodes: 20, 3 and 8.
        let a = evaluated.allowance(Reason::Underutilized, 40, 0);
        assert_eq!((a.allowed, a.binding.unwrap().index), (Some(3), 1));
    }

    #[test]
    fn the_first_of_equal_budgets_binds() {
        let budgets = [
            Budget::always(Nodes::Count(2)),
            Budget::always(Nodes::Percent(20)),
        ];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        let a = evaluated.allowance(Reason::Empty, 10, 0);
        assert_eq!((a.allowed, a.binding.unwrap().index), (Some(2), 0));
    }

    #[test]
    fn percents_round_up_over_the_group() {
        let budgets = [Budget::always(Nodes::Percent(20))];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        let allowed = |total| evaluated.allowance(Reason::Drifted, total, 0).allowed;
        assert_eq!(
            [0, 1, 4, 5, 6].map(allowed),
            [Some(0), Some(1), Some(1), Some(1), Some(2)]
        );
    }

    #[test]
    fn nodes_already_disrupting_use_the_allowance_up() {
        let budgets = [Budget::always(Nodes::Count(3))];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        let remaining = |disrupting| {
            evaluated
                .allowance(Reason::Expired, 20, disrupting)
                .remaining
        };
        assert_eq!(
            [0, 1, 3, 7].map(remaining),
            [Some(3), Some(2), Some(0), Some(0)]
        );
        let a = evaluated.allowance(Reason::Expired, 20, 7);
        assert_eq!((a.allowed, a.disrupting), (Some(3), 7));
        assert!(!a.allows_one_more(0));
        let a = evaluated.allowance(Reason::Expired, 20, 1);
        assert!(a.allows_one_more(0) && a.allows_one_more(1) && !a.allows_one_more(2));
    }

    #[test]
    fn a_budget_applies_to_the_reasons_it_names_only() {
        let budgets = [
            Budget {
                reasons: Reasons::of(&[Reason::Drifted]),
                ..Budget::always(Nodes::Count(1))
            },
            Budget {
                reasons: Reasons::of(&[Reason::Underutilized, Reason::Empty]),
                ..Budget::always(Nodes::Count(2))
            },
            Budget::always(Nodes::Count(5)),
        ];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        let allowed = |reason| evaluated.allowance(reason, 100, 0).allowed;
        assert_eq!(allowed(Reason::Drifted), Some(1));
        assert_eq!(allowed(Reason::Underutilized), Some(2));
        assert_eq!(allowed(Reason::Empty), Some(2));
        assert_eq!(allowed(Reason::Expired), Some(5));
    }

    #[test]
    fn no_budget_for_the_reason_is_no_limit() {
        let budgets = [Budget {
            reasons: Reasons::of(&[Reason::Drifted]),
            ..Budget::always(Nodes::Count(0))
        }];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        let a = evaluated.allowance(Reason::Empty, 10, 4);
        assert_eq!((a.allowed, a.remaining, a.disrupting), (None, None, 4));
        assert!(a.binding.is_none() && a.allows_one_more(1_000_000));
        assert_eq!(
            a.describe("general").to_string(),
            "general: Empty, no budget limits"
        );
        let none = Evaluated::new(&[], monday_noon());
        assert_eq!(none.allowance(Reason::Drifted, 10, 0).allowed, None);
    }

    #[test]
    fn a_scheduled_budget_limits_inside_its_window_only() {
        let budgets = [
            Budget::always(Nodes::Percent(20)),
            office_hours(Nodes::Count(0), &[Reason::Underutilized, Reason::Empty]),
        ];
        let during = Evaluated::new(&budgets, monday_noon());
        let a = during.allowance(Reason::Underutilized, 4, 0);
        assert_eq!((a.allowed, a.remaining), (Some(0), Some(0)));
        assert!(matches!(a.binding.unwrap().limit, Limit::Window(..)));
        assert_eq!(
            a.describe("general").to_string(),
            "general: 0 allowed from 09:00 to 17:00 Europe/Berlin"
        );
        // Drift is not in the scheduled budget's reasons: 20% applies.
        assert_eq!(during.allowance(Reason::Drifted, 4, 0).allowed, Some(1));
        // At 18:00 in Berlin the window is closed: 20% applies to every reason.
        let after = Evaluated::new(&budgets, at("2024-06-10T16:00:00Z"));
        let a = after.allowance(Reason::Underutilized, 4, 1);
        assert_eq!((a.allowed, a.remaining), (Some(1), Some(0)));
        assert_eq!(
            a.describe("general").to_string(),
            "general: Underutilized, 1 of 1 allowed in use (20% of 4 nodes)"
        );
        // On Saturday too.
        let saturday = Evaluated::new(&budgets, at("2024-06-15T10:00:00Z"));
        assert_eq!(saturday.allowance(Reason::Empty, 4, 0).allowed, Some(1));
    }

    #[test]
    fn descriptions_name_the_count_the_percent_and_the_window() {
        let budgets = [office_hours(Nodes::Percent(10), &[])];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        assert_eq!(
            evaluated
                .allowance(Reason::Drifted, 30, 2)
                .describe("gpu")
                .to_string(),
            "gpu: Drifted, 2 of 3 allowed in use (10% of 30 nodes) from 09:00 to 17:00 Europe/Berlin"
        );
        assert_eq!(
            evaluated
                .allowance(Reason::Drifted, 1, 0)
                .describe("gpu")
                .to_string(),
            "gpu: Drifted, 0 of 1 allowed in use (10% of 1 node) from 09:00 to 17:00 Europe/Berlin"
        );
        assert_eq!(
            evaluated
                .allowance(Reason::Drifted, 0, 0)
                .describe("gpu")
                .to_string(),
            "gpu: 0 allowed (10% of 0 nodes) from 09:00 to 17:00 Europe/Berlin"
        );
        let budgets = [Budget::always(Nodes::Count(2))];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        assert_eq!(
            evaluated
                .allowance(Reason::Empty, 30, 0)
                .describe("gpu")
                .to_string(),
            "gpu: Empty, 0 of 2 allowed in use"
        );
        let budgets = [Budget::always(Nodes::Count(0))];
        let evaluated = Evaluated::new(&budgets, monday_noon());
        assert_eq!(
            evaluated
                .allowance(Reason::Empty, 30, 0)
                .describe("gpu")
                .to_string(),
            "gpu: 0 allowed"
        );
    }

    #[test]
    fn a_schedule_that_cannot_be_evaluated_allows_nothing_for_any_reason() {
        // Past the year 9999 no calendar answers: Karpenter's rule for a budget that errs is to freeze the pool,
        // even for the reasons the budget does not name.
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(400_000 * 365 * 24 * 3600);
        let budgets = [
            Budget::always(Nodes::Count(5)),
            office_hours(Nodes::Count(3), &[Reason::Drifted]),
        ];
        let evaluated = Evaluated::new(&budgets, far);
        for reason in Reason::ALL {
            let a = evaluated.allowance(reason, 10, 0);
            assert_eq!((a.allowed, a.remaining), (Some(0), Some(0)), "{reason}");
            assert_eq!(a.binding.unwrap().index, 1);
            assert!(!a.allows_one_more(0));
        }
        let text = evaluated
            .allowance(Reason::Empty, 10, 0)
            .describe("general")
            .to_string();
        assert!(
            text.starts_with(
                r#"general: 0 allowed: the schedule "0 9 * * mon-fri" of budgets[1] could not be evaluated at "#
            ),
            "{text}"
        );
    }

    fn budget() -> impl Strategy<Value = Budget> {
        let nodes = prop_oneof![
            (0u64..50).prop_map(Nodes::Count),
            (0u32..=100).prop_map(Nodes::Percent),
        ];
        let reasons = proptest::sample::subsequence(Reason::ALL.to_vec(), 0..=Reason::ALL.len());
        (nodes, reasons, any::<bool>()).prop_map(|(nodes, reasons, scheduled)| Budget {
            nodes,
            reasons: Reasons::of(&reasons),
            schedule: scheduled
                .then(|| Schedule::new("0 9 * * mon-fri", 8 * H, Some("Europe/Berlin")).unwrap()),
        })
    }

    proptest! {
        #[test]
        fn allowed_grows_with_the_group_and_remaining_never_passes_it(
            budgets in proptest::collection::vec(budget(), 0..6),
            reason in proptest::sample::select(Reason::ALL.to_vec()),
            total in 0u64..20_000,
            disrupting in 0u64..20_000,
            hours in 0u64..(24 * 14),
        ) {
            let now = at("2024-06-10T00:00:00Z") + Duration::from_secs(hours * 3600);
            let evaluated = Evaluated::new(&budgets, now);
            let a = evaluated.allowance(reason, total, disrupting);
            let bigger = evaluated.allowance(reason, total + 1, disrupting);
            prop_assert!(bigger.allowed.is_none_or(|b| a.allowed.is_some_and(|a| a <= b)));
            prop_assert_eq!(a.remaining, a.allowed.map(|x| x.saturating_sub(disrupting)));
            prop_assert_eq!(a.allowed, a.binding.map(|b| b.allowed));
            // Budgets only restrict: one more never allows more.
            let mut more = budgets.clone();
            more.push(Budget::always(Nodes::Percent(50)));
            let fewer = Evaluated::new(&more, now).allowance(reason, total, disrupting).allowed;
            prop_assert!(a.allowed.is_none_or(|x| fewer.is_some_and(|y| y <= x)));
        }
    }
}
