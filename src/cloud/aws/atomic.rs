//! All-or-nothing increases on AWS. An Auto Scaling group tells only later whether it could launch what it
//! was asked for, so an atomic increase is remembered (the instances the group had, how many it adds, until
//! when) and checked whenever the group is read again; when the group's provisioning time passes before
//! every added instance is in service, the desired capacity is set back and the instances launched for the
//! increase are terminated. Until it ends, the group takes no other size change: each instance that is not
//! one of the group's earlier ones is the increase's.

use super::state::{AwsState, Increase};
use crate::cloud::backend::CloudError;
use crate::cloud::node_group::NodeGroupSpec;
use crate::model::GroupOptions;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// What a check found an increase to be.
enum Verdict {
    Whole,
    SetBack,
}

/// The group's own provisioning time, else cluster-autoscaler's `--max-node-provision-time` default.
fn provision_time(spec: &NodeGroupSpec) -> Duration {
    spec.options
        .as_ref()
        .and_then(|o| o.max_node_provision_time)
        .unwrap_or_else(|| GroupOptions::default().provision)
}

impl AwsState {
    /// Refuses a change to a group whose last change has an unknown outcome, or with an all-or-nothing
    /// increase in flight.
    pub(super) fn settled(&self, id: &str) -> Result<(), CloudError> {
        self.no_increase_in_flight(id)?;
        if self.read().group(id)?.uncertain {
            return Err(CloudError::Unavailable(format!(
                "node group {id}: an earlier change went unanswered by AWS and its outcome is still being \
                 read back; try again after the next refresh"
            )));
        }
        Ok(())
    }

    fn increases(&self) -> std::sync::MutexGuard<'_, HashMap<String, Increase>> {
        self.atomic
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Refuses a size change to a group with an increase in flight.
    pub(super) fn no_increase_in_flight(&self, id: &str) -> Result<(), CloudError> {
        match self.increases().get(id) {
            Some(increase) => Err(CloudError::FailedPrecondition(format!(
                "node group {id}: an all-or-nothing increase of {} is in flight until its instances are \
                 in service or its provisioning time ends (in {:.0?}); no other size change until then",
                increase.delta,
                increase.deadline.saturating_duration_since(Instant::now())
            ))),
            None => Ok(()),
        }
    }

    /// Raises the ASG's desired capacity to `target` and keeps the increase until it is whole or set back.
    pub(super) async fn increase_atomically(
        &self,
        id: &str,
        target: i32,
    ) -> Result<(), CloudError> {
        self.settled(id)?;
        let (asg, increase) = {
            let view = self.read();
            let group = view.group(id)?;
            let increase = Increase {
                before: group
                    .instances
                    .iter()
                    .map(|i| i.provider_id.clone())
                    .collect(),
                desired_before: group.desired,
                delta: usize::try_from(target - group.desired).unwrap_or(0),
                deadline: Instant::now() + provision_time(&group.spec),
            };
            (group.asg.clone(), increase)
        };
        let deadline = increase.deadline;
        // In place before AWS is asked, so that a refresh meanwhile knows whose the new instances are.
        self.increases().insert(id.to_string(), increase);
        if let Err(error) = self.set_desired(id, &asg, target, self.deadline()).await {
            let uncertain = self.read().group(id).is_ok_and(|g| g.uncertain);
            let mut increases = self.increases();
            if uncertain {
                // AWS may have taken it: set back at the first check after the group is read back.
                if let Some(increase) = increases.get_mut(id) {
                    increase.deadline = Instant::now();
                }
            } else {
                increases.remove(id);
            }
            return Err(error);
        }
        let state = self.me.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline.into()).await;
            if let Some(state) = state.upgrade() {
                state.check_increases().await;
            }
        });
        Ok(())
    }

    /// Ends the increases in flight that are whole or past their provisioning time; the others wait.
    /// Called after every read of the groups and at each increase's deadline.
    pub(super) async fn check_increases(&self) {
        if self.increases().is_empty() {
            return;
        }
        let _one_at_a_time = self.atomic_checks.lock().await;
        let verdicts: Vec<(String, Verdict)> = {
            let view = self.read();
            let now = Instant::now();
            let mut increases = self.increases();
            // A group no longer served has nothing left to set back.
            increases.retain(|id, _| view.group(id).is_ok());
            increases
                .iter()
                .filter_map(|(id, increase)| {
                    let group = view.group(id).ok()?;
                    if group.uncertain {
                        return None;
                    }
                    if increase.whole(group) {
                        Some((id.clone(), Verdict::Whole))
                    } else if now >= increase.deadline {
                        Some((id.clone(), Verdict::SetBack))
                    } else {
                        None
                    }
                })
                .collect()
        };
        for (id, verdict) in verdicts {
            match verdict {
                Verdict::Whole => self.ended(&id, None),
                Verdict::SetBack => {
                    let why = "not launched whole within its provisioning time";
                    if let Err(error) = self.give_up(&id, why).await {
                        // Kept in flight: the next check tries again.
                        tracing::warn!(node_group = id, %error, "setting back an all-or-nothing increase failed");
                    }
                }
            }
        }
        self.atomic_ended.send_modify(|n| *n += 1);
    }

    /// Sets the group's increase back (unless, read again, it is whole), saying `why`; the increase ends
    /// either way, unless setting back failed. Returns whether it was set back.
    async fn give_up(&self, id: &str, why: &str) -> Result<bool, CloudError> {
        let terminated = self.set_back(id).await?;
        self.ended(id, terminated.map(|n| (n, why)));
        Ok(terminated.is_some())
    }

    /// Forgets the group's increase and counts how it ended: whole, or set back (`terminated` instances,
    /// and why).
    fn ended(&self, id: &str, set_back: Option<(usize, &str)>) {
        self.increases().remove(id);
        match set_back {
            None => {
                self.metrics.observe_atomic_increase("whole");
                tracing::info!(node_group = id, "all-or-nothing increase launched whole");
            }
            Some((terminated, why)) => {
                self.metrics.observe_atomic_increase("set_back");
                tracing::warn!(
                    node_group = id,
                    terminated,
                    "all-or-nothing increase {why}: desired capacity set back, the instances launched for \
                     it terminated"
                );
            }
        }
    }

    /// Cancelling capacity an increase in flight has not launched yet (DeleteNodes of its placeholders, as a
    /// client does when the ASG reports a failed launch) gives the increase up: a part of it is no use, so it
    /// is set back whole now rather than at its deadline. Returns whether the request was that.
    pub(super) async fn cancels_increase(
        &self,
        id: &str,
        instance_ids: &[String],
    ) -> Result<bool, CloudError> {
        let cancels = self.increases().contains_key(id) && {
            let view = self.read();
            let group = view.group(id)?;
            instance_ids.iter().all(|i| group.is_placeholder(i))
        };
        if !cancels {
            return Ok(false);
        }
        let _one_at_a_time = self.atomic_checks.lock().await;
        if !self.increases().contains_key(id) {
            // Ended while this waited: the deletion is an ordinary one now.
            return Ok(false);
        }
        let set_back = self
            .give_up(id, "cancelled before it was launched whole")
            .await?;
        self.atomic_ended.send_modify(|n| *n += 1);
        // Whole after all: what was to be cancelled has launched, which the ordinary deletion says.
        Ok(set_back)
    }

    /// Terminates what launched for the group's increase and sets the desired capacity back; returns how
    /// many instances were terminated, or `None` when the group, read again, has the whole increase.
    async fn set_back(&self, id: &str) -> Result<Option<usize>, CloudError> {
        // Decide on what AWS has now, not on the last read.
        self.reread(id).await?;
        let deadline = self.deadline();
        let (asg, launched, desired_before) = {
            let view = self.read();
            let group = view.group(id)?;
            let increases = self.increases();
            let Some(increase) = increases.get(id) else {
                return Ok(Some(0));
            };
            if increase.whole(group) {
                return Ok(None);
            }
            let launched: Vec<String> = increase
                .launched(group)
                .map(|i| i.instance_id.clone())
                .collect();
            (group.asg.clone(), launched, increase.desired_before)
        };
        self.terminate(id, &launched, deadline).await?;
        if self.read().group(id)?.desired > desired_before {
            self.set_desired(id, &asg, desired_before, deadline).await?;
        }
        Ok(Some(launched.len()))
    }

    /// Changes each time a check of the increases in flight has ended (for tests that wait on one).
    pub fn atomic_checks_done(&self) -> tokio::sync::watch::Receiver<u64> {
        self.atomic_ended.subscribe()
    }
}
