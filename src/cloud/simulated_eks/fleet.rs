//! A simulated group's instances as its Auto Scaling group holds them, and what is done to them from
//! outside the autoscaler: an instance terminated (EC2 taking it back, a repair) with the target unchanged,
//! and the rebalancing replacements launched beside the target (its surge). The backend launches what the
//! target and the surge then ask for.

use crate::cloud::node_group::InstanceState;
use std::time::Duration;

/// One real instance of a group.
pub(super) struct SimInstance {
    pub(super) id: String,
    pub(super) zone: usize,
    pub(super) running_at: Duration,
    pub(super) deleting_since: Option<Duration>,
}

impl SimInstance {
    pub(super) fn state(&self, now: Duration) -> InstanceState {
        match self.deleting_since {
            Some(_) => InstanceState::Deleting,
            None if now >= self.running_at => InstanceState::Running,
            None => InstanceState::Creating,
        }
    }

    /// Not being deleted.
    pub(super) fn is_live(&self) -> bool {
        self.deleting_since.is_none()
    }
}

/// A group's instances, lent to what acts on them from outside the autoscaler.
pub(super) struct Fleet<'a> {
    pub(super) instances: &'a mut [SimInstance],
    /// The capacity rebalancing replacements launched beside the target, until their old instance goes.
    pub(super) surges: &'a mut Vec<String>,
    /// How long a new instance takes to run.
    pub(super) provisioning_delay: Duration,
}

impl Fleet<'_> {
    /// Whether instance `id` is there and not being deleted.
    pub(super) fn is_live(&self, id: &str) -> bool {
        self.instances.iter().any(|i| i.id == id && i.is_live())
    }

    /// Whether instance `id` is still listed (being deleted included).
    pub(super) fn holds(&self, id: &str) -> bool {
        self.instances.iter().any(|i| i.id == id)
    }

    /// Terminates instance `id` at `at` without lowering the target, so that the group launches another
    /// in its place; false when it is not a live instance (already deleted, by whoever).
    pub(super) fn terminate(&mut self, id: &str, at: Duration) -> bool {
        match (self.instances.iter_mut()).find(|i| i.id == id && i.is_live()) {
            Some(instance) => {
                instance.deleting_since = Some(at);
                true
            }
            None => false,
        }
    }
}
