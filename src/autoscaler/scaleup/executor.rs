//! Asking the provider for more nodes of a group, plainly or all or nothing, for the loop's plan and for a
//! ProvisioningRequest alike (upstream's scale-up executor): a refusal backs the group off, as upstream backs
//! off a failed scale-up; an all-or-nothing increase is remembered, so that one the provider later sets back
//! backs the group off too.

use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::clusterstate::state::ClusterState;
use crate::autoscaler::group::Group;
use crate::autoscaler::status::ScaleUp;
use std::time::SystemTime;

/// How a group is asked for more nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Increase {
    /// NodeGroupIncreaseSize: whatever the cloud can launch.
    Plain,
    /// AtomicIncreaseSize: every node or none (a zero-or-max group, a best-effort-atomic request).
    AllOrNothing,
}

/// What an increase reads and changes of the loop's state.
pub struct Executor<'a> {
    pub client: &'a ProviderClient,
    pub state: &'a mut ClusterState,
    /// When the loop last scaled up (scale-down waits `--scale-down-delay-after-add` after it).
    pub last_scale_up: &'a mut Option<SystemTime>,
}

impl Executor<'_> {
    /// Asks for `delta` more nodes of `group`; a refusal is returned, and backs the group off.
    pub async fn increase(
        &mut self,
        group: &Group,
        delta: u64,
        how: Increase,
        now: SystemTime,
    ) -> Result<(), ClientError> {
        let (id, delta) = (&group.id, i32::try_from(delta).unwrap_or(i32::MAX));
        let asked = match how {
            Increase::AllOrNothing => self.client.atomic_increase_size(id, delta).await,
            Increase::Plain => self.client.increase_size(id, delta).await,
        };
        match asked {
            Ok(()) => {
                if how == Increase::AllOrNothing {
                    let target = group.target_size.saturating_add(delta);
                    self.state.increased_atomically(id, target, now);
                }
                *self.last_scale_up = Some(now);
                Ok(())
            }
            Err(error) => {
                self.state.backoff.fail(id, error.to_string(), now);
                Err(error)
            }
        }
    }

    /// Asks for each scale-up of a plan; a refusal is recorded in its scale-up.
    pub async fn execute(&mut self, scale_ups: &mut [ScaleUp], groups: &[Group], now: SystemTime) {
        for scale_up in scale_ups {
            let Some(group) = groups.iter().find(|g| g.id == scale_up.node_group) else {
                continue;
            };
            // A zero-or-max group is grown to its max or not at all: all of it in one all-or-nothing
            // increase, as upstream's executor asks for it.
            let how = match group.zero_or_max {
                true => Increase::AllOrNothing,
                false => Increase::Plain,
            };
            if let Err(error) = self.increase(group, scale_up.delta, how, now).await {
                scale_up.error = Some(error.to_string());
            }
        }
    }
}
