//! Node groups as the companion reads them from its provider, in plain values: the group, its instances
//! and their state, and its autoscaling options. The provider client converts the wire types into these at
//! its edge, so no stage depends on a wire generation.

use std::time::Duration;

/// A node group: its id and size bounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeGroup {
    pub id: String,
    pub min_size: i32,
    pub max_size: i32,
}

/// One instance of a node group, as its provider lists it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Instance {
    /// The providerID its node registers with.
    pub id: String,
    pub state: InstanceState,
    /// Set when the provider could not create it (a stockout, a quota).
    pub error: Option<InstanceError>,
}

/// The lifecycle state of an instance; `Unknown` when the provider does not say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InstanceState {
    #[default]
    Unknown,
    Running,
    Creating,
    Deleting,
}

/// Why an instance could not be created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstanceError {
    pub code: String,
    pub message: String,
    /// cluster-autoscaler's error class: 1 out of resources, 99 other.
    pub class: i32,
}

impl Instance {
    /// Whether the provider is creating it.
    pub fn creating(&self) -> bool {
        self.state == InstanceState::Creating
    }

    /// Whether the provider is deleting it.
    pub fn deleting(&self) -> bool {
        self.state == InstanceState::Deleting
    }
}

/// NodeGroupAutoscalingOptions as plain values: what the provider's GetOptions says over the companion's
/// defaults (`proto::options` reads and writes them on the wire).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupOptions {
    pub utilization: f64,
    pub gpu_utilization: f64,
    pub unneeded: Duration,
    pub unready: Duration,
    pub provision: Duration,
    pub zero_or_max: bool,
    pub ignore_daemon_sets: bool,
    pub startup: Duration,
    pub non_atomic_to_max: bool,
}

impl Default for GroupOptions {
    /// cluster-autoscaler's own defaults.
    fn default() -> GroupOptions {
        let provision = Duration::from_secs(15 * 60);
        GroupOptions {
            utilization: 0.5,
            gpu_utilization: 0.5,
            unneeded: Duration::from_secs(10 * 60),
            unready: Duration::from_secs(20 * 60),
            provision,
            zero_or_max: false,
            ignore_daemon_sets: false,
            startup: provision,
            non_atomic_to_max: false,
        }
    }
}
