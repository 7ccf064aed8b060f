//! The leaving instances as the queue said them, by providerID: each an instance of a served node group,
//! the strongest reason said so far kept, and forgotten once the instance has left its group.
//!
//! Strength, strongest first: spotInterruption > scheduledEvent > instanceStopped > rebalance. A reason
//! that says when the instance goes and why (a warning's two-minute deadline, a scheduled change's start)
//! is not overwritten by what follows from it: a warned Spot instance is then stopped or terminated, and
//! a retirement stops the instance, and the companion acts on the deadline and the cause, not on the
//! state change they bring. A rebalance recommendation only says the risk is higher: anything else is
//! stronger. A message of the same strength replaces the last (a rescheduled event, `stopping` then
//! `terminated`).

use super::messages::{Notice, Says};
use crate::model::LeavingInstance;
use std::collections::HashMap;
use std::sync::Mutex;

/// Where the record finds which served node group an EC2 instance is in: the backend's view.
pub trait Membership: Send + Sync {
    /// The instance's providerID (`aws:///<az>/<id>`) and node group id, if it is in a served group.
    fn locate(&self, instance_id: &str) -> Option<(String, String)>;
}

/// What taking one notice did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// This many of its instances are recorded leaving (others of no served group dropped).
    Recorded(usize),
    /// It said nothing (an instance running again): nothing changed.
    NothingSaid,
    /// None of its instances is in a served node group: nothing changed.
    UnknownInstance(Vec<String>),
}

/// The leaving instances, by providerID.
#[derive(Default)]
pub struct Record {
    leaving: Mutex<HashMap<String, LeavingInstance>>,
}

impl Record {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, LeavingInstance>> {
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
        for (id, node_group) in &located {
            if map
                .get(id)
                .is_some_and(|known| known.reason.strength() > notice.kind.strength())
            {
                continue;
            }
            let leaving = LeavingInstance {
                id: id.clone(),
                node_group: node_group.clone(),
                reason: notice.kind,
                at: notice.at,
                detail: notice.detail.clone(),
            };
            map.insert(id.clone(), leaving);
        }
        Taken::Recorded(located.len())
    }

    /// Every leaving instance, in no order.
    pub fn list(&self) -> Vec<LeavingInstance> {
        self.map().values().cloned().collect()
    }

    /// Forgets the instances `keep` says are no longer in their group.
    pub fn retain(&self, keep: impl Fn(&LeavingInstance) -> bool) {
        self.map().retain(|_, leaving| keep(leaving));
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
        }
    }

    fn reasons(record: &Record) -> Vec<(String, String, LeavingReason)> {
        let mut all: Vec<_> = (record.list().into_iter())
            .map(|l| (l.id, l.node_group, l.reason))
            .collect();
        all.sort();
        all
    }

    #[test]
    fn a_stronger_reason_replaces_a_weaker_never_the_other_way() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let record = Record::default();
        let rebalance = notice(LeavingReason::Rebalance, &["i-1"], now);
        assert_eq!(record.take(&rebalance, &Groups), Taken::Recorded(1));
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
        record.take(&stopped, &Groups);
        record.take(&rebalance, &Groups);
        let listed = record.list();
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
        record.take(
            &notice(LeavingReason::ScheduledEvent, &["i-2", "i-3"], now),
            &Groups,
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
        assert_eq!(record.take(&both, &Groups), Taken::Recorded(1));
        record.retain(|l| l.node_group != "web");
        assert_eq!(reasons(&record).len(), 1);
        assert_eq!(reasons(&record)[0].1, "spot");
    }
}
