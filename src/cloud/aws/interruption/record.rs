//! The leaving instances as the queue said them, by providerID: each an instance of a served node group,
//! the strongest reason said so far kept, and forgotten once the instance has left its group, or once the
//! scheduled reboot or maintenance it comes back from has ended.
//!
//! Strength, strongest first: spotInterruption > scheduledEvent > instanceStopped > rebalance. A reason
//! that says when the instance goes and why (a warning's two-minute deadline, a scheduled change's start)
//! is not overwritten by what follows from it: a warned Spot instance is then stopped or terminated, and
//! a retirement stops the instance, and the companion acts on the deadline and the cause, not on the
//! state change they bring. A rebalance recommendation only says the risk is higher: anything else is
//! stronger. A message of the same strength replaces the last (a rescheduled event, `stopping` then
//! `terminated`), its end with it. A weaker message kept out still makes the entry last as long as it
//! would have: a reboot's end no longer ends it once the instance is said stopped during the window.

use super::messages::{Notice, Says};
use crate::model::LeavingInstance;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Where the record finds which served node group an EC2 instance is in: the backend's view.
pub trait Membership: Send + Sync {
    /// The instance's providerID (`aws:///<az>/<id>`) and node group id, if it is in a served group.
    fn locate(&self, instance_id: &str) -> Option<(String, String)>;
}

/// What taking one notice did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Of its instances in served node groups (others dropped), `taken` are now recorded with its reason
    /// and `kept_stronger` kept the stronger reason they had.
    Recorded { taken: usize, kept_stronger: usize },
    /// It said nothing (an instance running again): nothing changed.
    NothingSaid,
    /// None of its instances is in a served node group: nothing changed.
    UnknownInstance(Vec<String>),
}

/// One leaving instance and, for a reboot or maintenance it comes back from, when that ends.
struct Entry {
    leaving: LeavingInstance,
    until: Option<SystemTime>,
}

/// The leaving instances, by providerID.
#[derive(Default)]
pub struct Record {
    leaving: Mutex<HashMap<String, Entry>>,
}

impl Record {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.leaving.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records what a notice says of the instances of served node groups.
    pub fn take(&self, notice: &Notice, members: &dyn Membership) -> Taken {
        let located: Vec<(String, String)> = notice
            .instances
            .iter()
            .filter_map(|id| members.locate(id))
            .collect();
        if located.is_empty() {
            return Taken::UnknownInstance(notice.instances.clone());
        }
        if notice.says == Says::Nothing {
            return Taken::NothingSaid;
        }
        let mut map = self.map();
        let (mut taken, mut kept_stronger) = (0, 0);
        for (id, node_group) in &located {
            if let Some(known) = map.get_mut(id)
                && known.leaving.reason.strength() > notice.kind.strength()
            {
                // The stronger reason stays, for as long as the weaker one would have.
                known.until = known.until.zip(notice.until).map(|(a, b)| a.max(b));
                kept_stronger += 1;
                continue;
            }
            let leaving = LeavingInstance {
                id: id.clone(),
                node_group: node_group.clone(),
                reason: notice.kind,
                at: notice.at,
                detail: notice.detail.clone(),
            };
            let until = notice.until;
            map.insert(id.clone(), Entry { leaving, until });
            taken += 1;
        }
        Taken::Recorded {
            taken,
            kept_stronger,
        }
    }

    /// Every leaving instance at `now`, in no order; a reboot or maintenance that has ended by then is
    /// forgotten.
    pub fn list(&self, now: SystemTime) -> Vec<LeavingInstance> {
        let mut map = self.map();
        map.retain(|_, entry| entry.until.is_none_or(|until| until > now));
        map.values().map(|entry| entry.leaving.clone()).collect()
    }

    /// Forgets the instances `keep` says are no longer in their group.
    pub fn retain(&self, keep: impl Fn(&LeavingInstance) -> bool) {
        self.map().retain(|_, entry| keep(&entry.leaving));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LeavingReason;
    use std::time::{Duration, SystemTime};

    /// Instances i-1 and i-2 in group `spot`, i-3 in `web`.
    struct Groups;

    impl Membership for Groups {
        fn locate(&self, instance_id: &str) -> Option<(String, String)> {
            let group = match instance_id {
                "i-1" | "i-2" => "spot",
                "i-3" => "web",
                _ => return None,
            };
            Some((format!("aws:///us-east-1a/{instance_id}"), group.into()))
        }
    }

    fn notice(kind: LeavingReason, instances: &[&str], at: SystemTime) -> Notice {
        Notice {
            kind,
            instances: instances.iter().map(|i| i.to_string()).collect(),
            at,
            detail: kind.to_string(),
            says: Says::Leaving,
            until: None,
        }
    }

    fn reasons(record: &Record) -> Vec<(String, String, LeavingReason)> {
        let mut all: Vec<_> = (record.list(SystemTime::UNIX_EPOCH).into_iter())
            .map(|l| (l.id, l.node_group, l.reason))
            .collect();
        all.sort();
        all
    }

    fn recorded(taken: usize, kept_stronger: usize) -> Taken {
        Taken::Recorded {
            taken,
            kept_stronger,
        }
    }

    #[test]
    fn a_stronger_reason_replaces_a_weaker_never_the_other_way() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let record = Record::default();
        let rebalance = notice(LeavingReason::Rebalance, &["i-1"], now);
        assert_eq!(record.take(&rebalance, &Groups), recorded(1, 0));
        let warning = notice(
            LeavingReason::SpotInterruption,
            &["i-1"],
            now + Duration::from_secs(120),
        );
        record.take(&warning, &Groups);
        // The warned instance is then terminated: the warning and its deadline stay.
        let stopped = notice(
            LeavingReason::InstanceStopped,
            &["i-1"],
            now + Duration::from_secs(130),
        );
        assert_eq!(record.take(&stopped, &Groups), recorded(0, 1));
        assert_eq!(record.take(&rebalance, &Groups), recorded(0, 1));
        let listed = record.list(now);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].reason, LeavingReason::SpotInterruption);
        assert_eq!(listed[0].at, now + Duration::from_secs(120));
        assert_eq!(listed[0].node_group, "spot");

        // scheduledEvent > instanceStopped > rebalance.
        record.take(
            &notice(LeavingReason::InstanceStopped, &["i-2"], now),
            &Groups,
        );
        record.take(&notice(LeavingReason::Rebalance, &["i-2"], now), &Groups);
        // i-2 was said stopped (weaker), i-3 nothing: both taken.
        assert_eq!(
            record.take(
                &notice(LeavingReason::ScheduledEvent, &["i-2", "i-3"], now),
                &Groups,
            ),
            recorded(2, 0)
        );
        record.take(
            &notice(LeavingReason::InstanceStopped, &["i-2"], now),
            &Groups,
        );
        let expected = |id: &str, group: &str, reason| {
            (format!("aws:///us-east-1a/{id}"), group.to_string(), reason)
        };
        assert_eq!(
            reasons(&record),
            [
                expected("i-1", "spot", LeavingReason::SpotInterruption),
                expected("i-2", "spot", LeavingReason::ScheduledEvent),
                expected("i-3", "web", LeavingReason::ScheduledEvent),
            ]
        );
    }

    #[test]
    fn unknown_instances_and_running_ones_change_nothing() {
        let now = SystemTime::UNIX_EPOCH;
        let record = Record::default();
        let stranger = notice(LeavingReason::SpotInterruption, &["i-9"], now);
        assert_eq!(
            record.take(&stranger, &Groups),
            Taken::UnknownInstance(vec!["i-9".into()])
        );
        record.take(
            &notice(LeavingReason::InstanceStopped, &["i-3"], now),
            &Groups,
        );
        let running = Notice {
            says: Says::Nothing,
            ..notice(LeavingReason::InstanceStopped, &["i-3"], now)
        };
        assert_eq!(record.take(&running, &Groups), Taken::NothingSaid);
        assert_eq!(reasons(&record).len(), 1);
        // Of an event naming a served and an unknown instance, the served one is recorded.
        let both = notice(LeavingReason::ScheduledEvent, &["i-9", "i-1"], now);
        assert_eq!(record.take(&both, &Groups), recorded(1, 0));
        record.retain(|l| l.node_group != "web");
        assert_eq!(reasons(&record).len(), 1);
        assert_eq!(reasons(&record)[0].1, "spot");
    }

    #[test]
    fn a_reboot_is_forgotten_at_its_end_unless_the_instance_was_said_to_leave_meanwhile() {
        // The test's own clock: a fixed start, and every `now` read from it.
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let end = start + Duration::from_secs(2 * 3600);
        let record = Record::default();
        let reboot = |instances: &[&str]| Notice {
            until: Some(end),
            ..notice(LeavingReason::ScheduledEvent, instances, start)
        };
        assert_eq!(
            record.take(&reboot(&["i-1", "i-2"]), &Groups),
            recorded(2, 0)
        );
        let ids = |now| {
            let mut ids: Vec<_> = record.list(now).into_iter().map(|l| l.id).collect();
            ids.sort();
            ids
        };
        let both = [
            "aws:///us-east-1a/i-1".to_string(),
            "aws:///us-east-1a/i-2".to_string(),
        ];
        assert_eq!(ids(start), both);
        assert_eq!(ids(end - Duration::from_secs(1)), both);
        // i-2 is stopped during the window: the reboot's reason stays, and lasts past its end.
        let stopped = notice(LeavingReason::InstanceStopped, &["i-2"], start);
        assert_eq!(record.take(&stopped, &Groups), recorded(0, 1));
        assert_eq!(ids(end), ["aws:///us-east-1a/i-2"]);
        assert_eq!(record.list(end)[0].reason, LeavingReason::ScheduledEvent);
        // i-1, forgotten at the end, is recorded again by the next thing said of it.
        let rebalance = notice(LeavingReason::Rebalance, &["i-1"], end);
        assert_eq!(record.take(&rebalance, &Groups), recorded(1, 0));
        assert_eq!(ids(end + Duration::from_secs(3600)).len(), 2);
    }
}
