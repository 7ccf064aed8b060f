//! The backend's memory of the cloud: each node group's Auto Scaling group as last read (desired capacity,
//! instances, the last launch failure) and the indexes the hot RPCs answer from.

use crate::cloud::backend::CloudError;
use crate::cloud::node_group::{InstanceError, InstanceState, NodeGroupSpec};
use crate::model::FargateProfile;
use aws_sdk_autoscaling::types::{AutoScalingGroup, LifecycleState};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// The cloud as of the last refresh, kept current by our own changes.
#[derive(Default)]
pub(super) struct View {
    pub(super) groups: Vec<ServedGroup>,
    pub(super) by_id: HashMap<String, usize>,
    /// providerID of every instance -> index of its group.
    pub(super) index: HashMap<String, usize>,
    pub(super) fargate: Vec<FargateProfile>,
    pub(super) refreshed_at: Option<Instant>,
}

pub(super) struct ServedGroup {
    pub(super) spec: Arc<NodeGroupSpec>,
    pub(super) asg: String,
    pub(super) zones: Vec<String>,
    pub(super) desired: i32,
    pub(super) instances: Vec<AsgInstance>,
    /// Why the ASG could not launch what it was asked for, from its last scaling activity.
    pub(super) failure: Option<InstanceError>,
    /// The backend's change counter when we last changed or re-read this group (0: never).
    pub(super) changed: u64,
    /// A change AWS did not answer in time may or may not have happened: until the ASG is read back, the
    /// group takes no other change (a retried IncreaseSize must not become a double one).
    pub(super) uncertain: bool,
}

#[derive(Clone)]
pub(super) struct AsgInstance {
    pub(super) provider_id: String,
    pub(super) instance_id: String,
    pub(super) state: InstanceState,
}

impl ServedGroup {
    pub(super) fn live(&self) -> usize {
        self.instances
            .iter()
            .filter(|i| i.state != InstanceState::Deleting)
            .count()
    }

    /// Desired capacity not met by live instances, or instances still launching or terminating.
    pub(super) fn in_flux(&self) -> bool {
        usize::try_from(self.desired).ok() != Some(self.live())
            || self
                .instances
                .iter()
                .any(|i| i.state != InstanceState::Running)
    }

    pub(super) fn placeholders(&self) -> usize {
        usize::try_from(self.desired)
            .unwrap_or(0)
            .saturating_sub(self.live())
    }

    /// Placeholder ids as upstream's AWS provider writes them: `i-placeholder-<asg>-<n>`, first zone.
    pub(super) fn placeholder_id(&self, n: usize) -> String {
        let zone = self.zones.first().map_or("unknown", String::as_str);
        format!("aws:///{zone}/i-placeholder-{}-{n}", self.asg)
    }

    /// Whether `instance_id` is one of this group's placeholders now (`aws:///<zone>/i-placeholder-<asg>-<n>`
    /// with `n` below the number of placeholders). Only ids of that form are placeholders.
    pub(super) fn is_placeholder(&self, instance_id: &str) -> bool {
        instance_id
            .rsplit_once('-')
            .and_then(|(_, n)| n.parse::<usize>().ok())
            .is_some_and(|n| n < self.placeholders() && self.placeholder_id(n) == instance_id)
    }

    /// Takes the ASG's current desired capacity and instances.
    pub(super) fn apply(&mut self, asg: &AutoScalingGroup) {
        self.desired = asg.desired_capacity().unwrap_or(self.desired);
        self.instances = asg
            .instances()
            .iter()
            .filter_map(|i| {
                let instance_id = i.instance_id()?;
                let zone = i.availability_zone()?;
                let state = instance_state(i.lifecycle_state()?)?;
                Some(AsgInstance {
                    provider_id: format!("aws:///{zone}/{instance_id}"),
                    instance_id: instance_id.into(),
                    state,
                })
            })
            .collect();
        if self.placeholders() == 0 {
            self.failure = None;
        }
    }
}

/// ASG lifecycle states as cluster-autoscaler's instance states; warm-pool instances are not capacity.
pub(super) fn instance_state(state: &LifecycleState) -> Option<InstanceState> {
    let name = state.as_str();
    if name.starts_with("Warmed") {
        None
    } else if name.starts_with("Pending") {
        Some(InstanceState::Creating)
    } else if name.starts_with("Terminat") || name.starts_with("Detach") {
        Some(InstanceState::Deleting)
    } else {
        // InService, Standby and the transitions into it: a node that exists.
        Some(InstanceState::Running)
    }
}

impl View {
    pub(super) fn reindex(&mut self) {
        self.by_id = self
            .groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.spec.id.clone(), i))
            .collect();
        self.index = self
            .groups
            .iter()
            .enumerate()
            .flat_map(|(i, g)| {
                g.instances
                    .iter()
                    .map(move |inst| (inst.provider_id.clone(), i))
            })
            .collect();
    }

    pub(super) fn group(&self, id: &str) -> Result<&ServedGroup, CloudError> {
        self.by_id
            .get(id)
            .map(|&i| &self.groups[i])
            .ok_or_else(|| CloudError::NodeGroupNotFound(id.into()))
    }

    pub(super) fn group_mut(&mut self, id: &str) -> Result<&mut ServedGroup, CloudError> {
        let i = *self
            .by_id
            .get(id)
            .ok_or_else(|| CloudError::NodeGroupNotFound(id.into()))?;
        Ok(&mut self.groups[i])
    }
}
