//! Node groups and their instances as a backend knows them.

use crate::model::NodeGroupStatus;
use std::sync::Arc;
use std::time::Duration;

/// What a backend knows about one node group that does not change between refreshes.
///
/// The group's lifecycle status and image are here rather than behind a backend method of their own because
/// they change when the rest of the spec does: the AWS backend builds every spec anew from one refresh's
/// DescribeNodegroup and Auto Scaling group, and the image is also a label of the template, so that one spec
/// never pairs a template with another image than the one DescribeNodeGroups reports.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeGroupSpec {
    /// The node group id: the EKS node group name.
    pub id: String,
    pub min_size: i32,
    pub max_size: i32,
    /// Informational text for NodeGroup.debug; cluster-autoscaler never parses it.
    pub debug: String,
    /// The template node for scale-from-zero, built and checked when the group was loaded.
    pub template: Arc<k8s_pb::api::core::v1::Node>,
    /// The ResourceSlices a new node of the group will publish (DRA drivers' devices), node-local to the
    /// template node: pool and node name are the template's name. Empty when its nodes run no DRA driver.
    pub resource_slices: Vec<crate::model::ResourceSlice>,
    /// What a new node of the group offers to pods (the template's allocatable).
    pub allocatable: crate::model::Resources,
    /// On-demand (or spot) price of one instance, when known.
    pub price_per_hour: Option<f64>,
    /// Per-group autoscaling options; `None` means "use the caller's defaults".
    pub options: Option<OptionOverrides>,
    /// The Availability Zones its instances launch in (the Auto Scaling group's), sorted; the template's
    /// zone is the first.
    pub zones: Vec<String>,
    /// EKS's status of the node group (ACTIVE, UPDATING, ...).
    pub status: NodeGroupStatus,
    /// The image its new instances launch with (an AMI id, or EKS's release version when the AMI is not
    /// known), when known.
    pub image: Option<String>,
    /// Its Auto Scaling group replaces a Spot instance EC2 recommends rebalancing (capacity rebalancing).
    pub capacity_rebalance: bool,
    /// EKS's node auto repair for the group (`nodeRepairConfig`), when it has one.
    pub node_repair: Option<crate::model::NodeRepairConfig>,
    /// EKS's capacity type of the group.
    pub capacity_type: crate::model::CapacityType,
    /// The capacity reservations its launch template targets, as loaded (their counts now are the
    /// backend's [`crate::cloud::NodeGroupBackend::reservations`]).
    pub reservations: Vec<crate::model::Reservation>,
}

/// Per-group overrides of cluster-autoscaler's options; unset fields keep the caller's defaults.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OptionOverrides {
    pub scale_down_utilization_threshold: Option<f64>,
    pub scale_down_gpu_utilization_threshold: Option<f64>,
    pub scale_down_unneeded_time: Option<Duration>,
    pub scale_down_unready_time: Option<Duration>,
    pub max_node_provision_time: Option<Duration>,
    pub zero_or_max_node_scaling: Option<bool>,
    pub ignore_daemon_sets_utilization: Option<bool>,
    pub max_node_startup_time: Option<Duration>,
    pub allow_non_atomic_scale_up_to_max: Option<bool>,
}

/// An instance of a node group, as cluster-autoscaler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Instance {
    /// `aws:///<az>/<instance-id>`, byte for byte the node's `spec.providerID`.
    pub id: String,
    pub state: InstanceState,
    /// A placeholder stands for requested capacity that has no machine yet (still launching, or that the
    /// cloud cannot provide): cancelling it never removes a node.
    pub placeholder: bool,
    /// Why the cloud could not provide this capacity, when it said so.
    pub error: Option<InstanceError>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InstanceState {
    Creating,
    Running,
    Deleting,
}

impl InstanceState {
    pub fn as_str(self) -> &'static str {
        match self {
            InstanceState::Creating => "creating",
            InstanceState::Running => "running",
            InstanceState::Deleting => "deleting",
        }
    }
}

/// Why an instance could not be created, in cluster-autoscaler's terms.
#[derive(Clone, Debug, PartialEq)]
pub struct InstanceError {
    pub class: InstanceErrorClass,
    pub code: String,
    pub message: String,
}

/// cluster-autoscaler's error classes (unchanged since 1.25).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InstanceErrorClass {
    /// Stockout or quota.
    OutOfResources = 1,
    Other = 99,
}
