//! Graceful degradation, as cluster-autoscaler 1.37 names it: a time budget for placing the pending pods on
//! the nodes there are (`--enable-graceful-degradation`, `--pending-pods-batching-timeout`), and the loop's
//! progress, which `/health-check` reads as activity so that a long loop that keeps working is not taken for
//! a stuck one. Below both the loop (which spends and beats) and the controller (which reads the beat).

use crate::autoscaler::status::DegradationChange;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// When the loop last showed it was working: shared by the loop, which beats it at each stage and every few
/// equivalence groups, and `/health-check`, which counts inactivity from it (upstream's `lastActivity`).
#[derive(Clone, Debug, Default)]
pub struct Progress {
    /// Milliseconds since the Unix epoch of the last beat; 0 before the first.
    at: Arc<AtomicU64>,
}

impl Progress {
    /// The loop is working now.
    pub fn beat(&self) {
        self.beat_at(SystemTime::now());
    }

    /// The loop was working at `at`.
    pub fn beat_at(&self, at: SystemTime) {
        let millis = at
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis();
        self.at
            .fetch_max(u64::try_from(millis).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The last beat, if there was one.
    pub fn last(&self) -> Option<SystemTime> {
        match self.at.load(Ordering::Relaxed) {
            0 => None,
            millis => Some(UNIX_EPOCH + Duration::from_millis(millis)),
        }
    }
}

/// Groups placed between two beats of [`Progress`] (a clock read each is cheap, but 200,000 are not free).
const BEAT_EVERY: u32 = 256;

/// How long placing the pending pods may take this loop (upstream's pending-pods batching timeout), asked
/// at each equivalence group, pass after pass, in the order they are tried. The first group of a loop is
/// always tried, whatever the time: every loop makes progress, however small the budget.
#[derive(Debug)]
pub struct BatchingBudget {
    deadline: Option<Instant>,
    progress: Option<Progress>,
    /// Groups asked about, for the beat.
    asked: u32,
    /// Which pass over the groups is being made (1 the first), counted at each pass's group 0.
    pass: u32,
    /// Where the time ran out: (pass, group).
    stopped: Option<(u32, usize)>,
}

impl BatchingBudget {
    /// No limit and no beat: every group is tried (a ProvisioningRequest's trial, a bench).
    pub fn unlimited() -> BatchingBudget {
        BatchingBudget {
            deadline: None,
            progress: None,
            asked: 0,
            pass: 0,
            stopped: None,
        }
    }

    /// A budget of `timeout` from now (none: no limit), beating `progress` as the groups are tried.
    pub fn starting_now(timeout: Option<Duration>, progress: Progress) -> BatchingBudget {
        BatchingBudget {
            deadline: timeout.map(|t| Instant::now() + t),
            progress: Some(progress),
            ..BatchingBudget::unlimited()
        }
    }

    /// Whether the time is spent before equivalence group `group` (indices from 0 each pass): once it says
    /// so, the caller stops trying groups.
    pub fn spent(&mut self, group: usize) -> bool {
        if group == 0 {
            self.pass += 1;
        }
        self.asked = self.asked.wrapping_add(1);
        if let Some(progress) = self
            .progress
            .as_ref()
            .filter(|_| self.asked.is_multiple_of(BEAT_EVERY))
        {
            progress.beat();
        }
        let Some(deadline) = self.deadline else {
            return false;
        };
        if self.stopped.is_some() {
            return true;
        }
        if (self.pass, group) == (1, 0) || Instant::now() < deadline {
            return false;
        }
        self.stopped = Some((self.pass, group));
        true
    }

    /// The first equivalence group never tried because the time ran out in the first pass: it and every
    /// group after it are left for the next loop. None when every group was tried at least once.
    pub fn left_from(&self) -> Option<usize> {
        match self.stopped {
            Some((1, group)) => Some(group),
            _ => None,
        }
    }
}

/// Graceful degradation as the loop keeps it from one iteration to the next: the batching timeout, the
/// progress it beats, the degraded loops in a row.
#[derive(Debug, Default)]
pub struct Degradation {
    /// `--pending-pods-batching-timeout` when `--enable-graceful-degradation` is set.
    pub timeout: Option<Duration>,
    pub progress: Progress,
    pub loops: DegradedLoops,
}

/// Degraded loops in a row before one that scales down and plans no scale-up (upstream's
/// gracefulDegradationCycle).
const CYCLE: u32 = 4;

/// Upstream's GracefulDegradationLoopCount: how many loops in a row left pods untried. While it is above 0
/// the loop is degraded, and scale-up and scale-down take turns so that neither starves the other: every
/// 4th degraded loop scales down and plans no scale-up, the others scale up and do not scale down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DegradedLoops(pub u32);

impl DegradedLoops {
    /// One more loop, which left `skipped` pods untried; whether graceful degradation started or stopped.
    pub fn after(&mut self, skipped: usize) -> Option<DegradationChange> {
        let was = self.0;
        self.0 = match skipped {
            0 => 0,
            _ => was.saturating_add(1),
        };
        match (was, self.0) {
            (0, 1) => Some(DegradationChange::Started),
            (1.., 0) => Some(DegradationChange::Stopped),
            _ => None,
        }
    }

    /// Whether this loop may plan scale-ups for the pods it tried.
    pub fn scales_up(self) -> bool {
        self.0 == 0 || !self.0.is_multiple_of(CYCLE)
    }

    /// Whether this loop may scale down.
    pub fn scales_down(self) -> bool {
        self.0.is_multiple_of(CYCLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pass as the snapshot makes it: every group asked about in order, stopping at the first refusal.
    fn pass(budget: &mut BatchingBudget, groups: usize) -> usize {
        (0..groups).take_while(|&g| !budget.spent(g)).count()
    }

    #[test]
    fn an_unlimited_budget_tries_every_group_every_pass() {
        let mut budget = BatchingBudget::starting_now(None, Progress::default());
        assert_eq!(pass(&mut budget, 5), 5);
        assert_eq!(pass(&mut budget, 5), 5);
        assert_eq!(budget.left_from(), None);
    }

    #[test]
    fn a_spent_budget_tries_the_first_group_alone_and_leaves_the_rest() {
        let progress = Progress::default();
        let mut budget = BatchingBudget::starting_now(Some(Duration::ZERO), progress);
        assert_eq!(pass(&mut budget, 5), 1);
        // The next pass tries nothing more, and what was left stays as the first pass left it.
        assert_eq!(pass(&mut budget, 5), 0);
        assert_eq!(budget.left_from(), Some(1));
    }

    #[test]
    fn time_running_out_after_the_first_pass_leaves_nothing_untried() {
        let mut budget =
            BatchingBudget::starting_now(Some(Duration::from_secs(3600)), Progress::default());
        assert_eq!(pass(&mut budget, 3), 3);
        budget.deadline = Some(Instant::now());
        assert_eq!(pass(&mut budget, 3), 0);
        assert_eq!(budget.left_from(), None);
    }

    #[test]
    fn degraded_loops_take_turns_three_scaling_up_then_one_scaling_down() {
        let mut loops = DegradedLoops::default();
        assert!(
            loops.scales_up() && loops.scales_down(),
            "not degraded: both"
        );
        assert_eq!(loops.after(0), None);
        assert_eq!(loops.after(10), Some(DegradationChange::Started));
        let mut turns = vec![(loops.scales_up(), loops.scales_down())];
        for _ in 0..4 {
            assert_eq!(loops.after(10), None);
            turns.push((loops.scales_up(), loops.scales_down()));
        }
        let up = (true, false);
        assert_eq!(turns, [up, up, up, (false, true), up]);
        assert_eq!(loops.after(0), Some(DegradationChange::Stopped));
        assert_eq!(loops, DegradedLoops(0));
    }

    #[test]
    fn groups_tried_beat_the_progress() {
        let progress = Progress::default();
        assert_eq!(progress.last(), None);
        let mut budget = BatchingBudget::starting_now(None, progress.clone());
        pass(&mut budget, BEAT_EVERY as usize - 1);
        assert_eq!(progress.last(), None, "no beat before {BEAT_EVERY} groups");
        pass(&mut budget, 1);
        assert!(progress.last().is_some());
        // A beat never moves it back.
        let later = progress.last().unwrap() + Duration::from_secs(60);
        progress.beat_at(later);
        progress.beat_at(UNIX_EPOCH + Duration::from_secs(1));
        assert_eq!(progress.last(), Some(later));
    }
}
