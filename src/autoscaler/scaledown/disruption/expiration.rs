//! Expiration: a node older than its group's `expireAfter`, from the instant `created + expireAfter` on.
//! Karpenter deletes an expired node outright, whatever its budgets; here expiry waits for its budget as
//! drift does (docs/decisions.md).

use crate::autoscaler::disruption::Reason;
use crate::autoscaler::scaledown::disruption::method::{GroupSight, Method};
use crate::model::Node;

pub(in crate::autoscaler::scaledown) struct Expiration;

impl Method for Expiration {
    fn reason(&self) -> Reason {
        Reason::Expired
    }

    fn disrupts(&self, node: &Node, group: &GroupSight<'_>) -> bool {
        (node.created).is_some_and(|c| group.policy.expired(c, group.now))
    }

    /// `created 31d 2h ago`.
    fn describe(&self, node: &Node, group: &GroupSight<'_>) -> String {
        let Some(age) = node.created.and_then(|c| group.now.duration_since(c).ok()) else {
            return "its creation time is unknown".into();
        };
        let secs = age.as_secs();
        let (days, hours, minutes) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60);
        match (days, hours) {
            (0, 0) => format!("created {minutes}m ago"),
            (0, _) => format!("created {hours}h {minutes}m ago"),
            _ => format!("created {days}d {hours}h ago"),
        }
    }
}
