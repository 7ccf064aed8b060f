//! Scheduled: a node over its group's scheduled max (`schedules:` in the disruption configuration; which
//! nodes, and in what order, `autoscaler/schedules/` decides). It goes within its group's budget for
//! `Scheduled`, PodDisruptionBudgets and `karpenter.sh/do-not-disrupt` respected: its pods move where they
//! fit, and those that fit nowhere stay pending (scale-up's reason names the schedule) until the window
//! closes. It is never replaced (the window wants the group smaller), and a node with a pod no controller
//! recreates waits, with why: a schedule loses nothing.

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::scaledown::disruption::method::{GroupSight, Method, Order};
use crate::autoscaler::schedules::ScheduledFate;
use crate::model::Node;

pub(in crate::autoscaler::scaledown) struct Scheduled;

impl Method for Scheduled {
    fn reason(&self) -> Reason {
        Reason::Scheduled
    }

    fn disrupts(&self, _: &Node, group: &GroupSight<'_>) -> bool {
        group.scheduled.is_some()
    }

    /// `over its scheduled maxSize: batch is held at maxSize 0 by schedules[0] until ...`.
    fn describe(&self, _: &Node, group: &GroupSight<'_>) -> String {
        match group.scheduled.map(|o| &o.fate) {
            Some(ScheduledFate::Goes(why) | ScheduledFate::Waits(why)) => why.clone(),
            None => String::new(),
        }
    }

    fn holds(&self, _: &Node, group: &GroupSight<'_>) -> Option<String> {
        match group.scheduled.map(|o| &o.fate) {
            Some(ScheduledFate::Waits(why)) => Some(why.clone()),
            _ => None,
        }
    }

    /// The emptiest, then the newest first, as `autoscaler/schedules/` ranks them.
    fn rank(&self, _: &Node, group: &GroupSight<'_>) -> usize {
        group.scheduled.map_or(0, |o| o.rank)
    }

    fn order(&self) -> Order {
        Order::RemoveWhatFits
    }
}
