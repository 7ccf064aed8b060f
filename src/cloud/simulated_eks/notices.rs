//! What EC2 says about a simulated group's instances, and what follows, as an Auto Scaling group lives it:
//! a Spot interruption warning two minutes before EC2 takes the instance back; a rebalance recommendation,
//! on which a group with capacity rebalancing launches a replacement beside its desired capacity (left
//! unchanged, as AWS does) and terminates the old instance once the new one runs, keeping the old one while no
//! replacement can launch, and ending the surge however the old one leaves; a scheduled event (retirement, maintenance) stopping the instance at
//! its time; a stopped instance, replaced when the group's health check finds it. Whatever EC2 takes is
//! terminated with the target unchanged, so the group launches another in its place; an instance the
//! autoscaler deleted first (the target lowered) needs nothing more.

use super::fleet::{Fleet, SimInstance};
use super::leaving_keys::EventKind;
use crate::model::LeavingReason;
use std::time::Duration;

/// How long before the instance goes EC2 warns of a Spot interruption.
pub(super) const SPOT_WARNING: Duration = Duration::from_secs(120);
/// How long after an instance stops its Auto Scaling group's health check finds it and replaces it.
pub(super) const STOPPED_FOUND_AFTER: Duration = Duration::from_secs(120);

/// From when a scenario's event is said: a Spot interruption two minutes before its deadline, a scheduled
/// event from the start (AWS Health tells of one days ahead), the others at their time.
pub(super) fn seen_from(kind: EventKind, at: Duration) -> Duration {
    match kind {
        EventKind::SpotInterruption => at.saturating_sub(SPOT_WARNING),
        EventKind::ScheduledEvent => Duration::ZERO,
        EventKind::Rebalance | EventKind::Stopped => at,
    }
}

/// Whether the group's Auto Scaling group has capacity rebalancing on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Rebalancing {
    On,
    Off,
}

/// One thing EC2 said about one instance, on the simulated EKS's clock.
pub(super) struct InstanceNotice {
    pub(super) instance: String,
    pub(super) kind: EventKind,
    /// From when it is said (served as leaving).
    pub(super) seen: Duration,
    /// The warning's deadline, or the event's time.
    pub(super) at: Duration,
    stage: Stage,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// Nothing done yet.
    Waiting,
    /// Capacity rebalancing wants a replacement launched (beside the target), and none could be yet: no
    /// capacity, or the group is as far past its max size as AWS lets it go.
    WantsReplacement,
    /// The replacement was launched; the old instance goes once it runs.
    Surged {
        replacement: String,
        running: Duration,
    },
    /// All that follows is done (or nothing follows).
    Done,
}

impl InstanceNotice {
    /// When its next step is due, if it has one.
    fn due(&self, rebalancing: Rebalancing) -> Option<Duration> {
        match (&self.stage, self.kind) {
            (Stage::Waiting, EventKind::SpotInterruption | EventKind::ScheduledEvent) => {
                Some(self.at)
            }
            (Stage::Waiting, EventKind::Stopped) => Some(self.at + STOPPED_FOUND_AFTER),
            (Stage::Waiting, EventKind::Rebalance) => {
                (rebalancing == Rebalancing::On).then_some(self.at)
            }
            (Stage::Surged { running, .. }, _) => Some(*running),
            (Stage::WantsReplacement | Stage::Done, _) => None,
        }
    }

    /// Its next step, at `at`.
    fn step(&mut self, at: Duration, fleet: &mut Fleet<'_>) {
        let stage = std::mem::replace(&mut self.stage, Stage::Done);
        self.stage = match (stage, self.kind) {
            (Stage::Waiting, EventKind::Rebalance) if fleet.is_live(&self.instance) => {
                Stage::WantsReplacement
            }
            (Stage::Surged { replacement, .. }, _) => {
                fleet.surges.retain(|id| *id != replacement);
                if fleet.is_live(&replacement) {
                    // In service: the old instance goes, the target unchanged (the replacement counts).
                    fleet.terminate(&self.instance, at);
                    Stage::Done
                } else {
                    // The replacement went first: capacity rebalancing tries again.
                    Stage::WantsReplacement
                }
            }
            (Stage::Waiting, _) => {
                fleet.terminate(&self.instance, at);
                Stage::Done
            }
            (stage, _) => stage,
        };
    }

    /// The reason the provider serves.
    pub(super) fn reason(&self) -> LeavingReason {
        match self.kind {
            EventKind::SpotInterruption => LeavingReason::SpotInterruption,
            EventKind::Rebalance => LeavingReason::Rebalance,
            EventKind::ScheduledEvent => LeavingReason::ScheduledEvent,
            EventKind::Stopped => LeavingReason::InstanceStopped,
        }
    }

    /// What EC2 said, in words.
    pub(super) fn detail(&self, rebalancing: Rebalancing) -> String {
        match (self.kind, rebalancing) {
            (EventKind::SpotInterruption, _) => {
                "EC2 Spot Instance Interruption Warning: the instance is terminated at the deadline".into()
            }
            (EventKind::Rebalance, Rebalancing::On) => {
                "EC2 Instance Rebalance Recommendation: capacity rebalancing launches a replacement, \
                 then terminates the instance"
                    .into()
            }
            (EventKind::Rebalance, Rebalancing::Off) => {
                "EC2 Instance Rebalance Recommendation: the group has no capacity rebalancing".into()
            }
            (EventKind::ScheduledEvent, _) => {
                "AWS Health scheduled change: instance retirement, the instance is stopped then".into()
            }
            (EventKind::Stopped, _) => {
                "EC2 Instance State-change Notification: stopped; the Auto Scaling group replaces it".into()
            }
        }
    }
}

/// What EC2 said about a group's instances.
#[derive(Default)]
pub(super) struct Notices {
    list: Vec<InstanceNotice>,
}

impl Notices {
    /// Records that EC2 says `kind` about `instance`, from `seen`, for `at`.
    pub(super) fn add(&mut self, instance: &str, kind: EventKind, seen: Duration, at: Duration) {
        self.list.push(InstanceNotice {
            instance: instance.to_string(),
            kind,
            seen,
            at,
            stage: Stage::Waiting,
        });
    }

    /// When the next step of any notice is due.
    pub(super) fn next_at(&self, rebalancing: Rebalancing) -> Option<Duration> {
        self.list.iter().filter_map(|n| n.due(rebalancing)).min()
    }

    /// Takes every step due by `at`, ends the surges of old instances that left, and forgets the notices of
    /// instances that are gone.
    pub(super) fn step(&mut self, at: Duration, fleet: &mut Fleet<'_>, rebalancing: Rebalancing) {
        for notice in &mut self.list {
            if notice.due(rebalancing).is_some_and(|due| due <= at) {
                notice.step(at, fleet);
            }
        }
        self.end_surges(fleet.instances, fleet.surges);
        self.list.retain(|n| fleet.holds(&n.instance));
    }

    /// Ends the rebalancing of every old instance that left before its replacement ran (an interruption, a
    /// repair, the autoscaler): its replacement, if launched, is one of the group's like any other, and none
    /// is wanted any more. True when one ended with its replacement launched.
    pub(super) fn end_surges(
        &mut self,
        instances: &[SimInstance],
        surges: &mut Vec<String>,
    ) -> bool {
        let mut kept = false;
        for notice in &mut self.list {
            let left = !instances
                .iter()
                .any(|i| i.id == notice.instance && i.is_live());
            match &notice.stage {
                Stage::Surged { replacement, .. } if left => {
                    surges.retain(|id| id != replacement);
                    kept = true;
                }
                Stage::WantsReplacement if left => {}
                _ => continue,
            }
            notice.stage = Stage::Done;
        }
        kept
    }

    /// Launches the replacements capacity rebalancing wants, each with `launch` (its id and when it runs;
    /// `None` when it cannot launch one now, so the rest wait too).
    pub(super) fn launch_replacements(
        &mut self,
        mut launch: impl FnMut() -> Option<(String, Duration)>,
    ) {
        for notice in &mut self.list {
            if notice.stage != Stage::WantsReplacement {
                continue;
            }
            let Some((replacement, running)) = launch() else {
                return;
            };
            notice.stage = Stage::Surged {
                replacement,
                running,
            };
        }
    }

    /// The notices said by `now` of instances the group still lists (being deleted included), in the
    /// order they were said.
    pub(super) fn said<'a>(
        &'a self,
        now: Duration,
        instances: &'a [SimInstance],
    ) -> impl Iterator<Item = &'a InstanceNotice> + 'a {
        (self.list.iter())
            .filter(move |n| n.seen <= now && instances.iter().any(|i| i.id == n.instance))
    }

    /// Whether `instance` already has a notice of `kind`.
    pub(super) fn has(&self, instance: &str, kind: EventKind) -> bool {
        self.list
            .iter()
            .any(|n| n.instance == instance && n.kind == kind)
    }
}
