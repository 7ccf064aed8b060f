//! Asking the provider for more nodes of a group, plainly or all or nothing, for the loop's plan and for a
//! ProvisioningRequest alike: a refusal backs the group off, as upstream backs off a failed scale-up; an
//! all-or-nothing increase is remembered, so that one the provider later sets back backs the group off too.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::clusterstate::state::ClusterState;
use crate::autoscaler::group::Group;
use std::time::SystemTime;

/// What an increase reads and changes of the loop's state.
pub struct Increaser<'a> {
    pub client: &'a ProviderClient,
    pub state: &'a mut ClusterState,
    /// When the loop last scaled up (scale-down waits `--scale-down-delay-after-add` after it).
    pub last_scale_up: &'a mut Option<SystemTime>,
}

impl Increaser<'_> {
    /// Asks for `delta` more nodes of `group`, all or nothing when `atomic`; a refusal is returned as why.
    pub async fn increase(
        &mut self,
        group: &Group,
        delta: u64,
        atomic: bool,
        now: SystemTime,
    ) -> Result<(), String> {
        let (id, delta) = (&group.id, i32::try_from(delta).unwrap_or(i32::MAX));
        let asked = match atomic {
            true => self.client.atomic_increase_size(id, delta).await,
            false => self.client.increase_size(id, delta).await,
        };
        match asked {
            Ok(()) => {
                if atomic {
                    let target = group.target_size.saturating_add(delta);
                    self.state.increased_atomically(id, target, now);
                }
                *self.last_scale_up = Some(now);
                Ok(())
            }
            Err(error) => {
                let why = error.to_string();
                self.state.backoff.fail(id, why.clone(), now);
                Err(why)
            }
        }
    }
}
