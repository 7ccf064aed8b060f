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

/// What the provider says of a node group's lifecycle (`ekscale.v1.NodeGroups/DescribeNodeGroups`): where it
/// is in EKS's lifecycle, and the image its new nodes get.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGroupState {
    pub status: NodeGroupStatus,
    /// The image new nodes launch with (an AMI id on AWS), when the provider knows it. A node's own image is
    /// its `eks.amazonaws.com/nodegroup-image` label ([`super::NODE_GROUP_IMAGE_LABEL`]).
    pub image: Option<String>,
    /// Its Auto Scaling group replaces a Spot instance EC2 recommends rebalancing before it is interrupted
    /// (capacity rebalancing: on for managed node groups of Spot capacity).
    pub capacity_rebalance: bool,
    /// EKS's node auto repair for the group, when the provider says.
    pub node_repair: Option<super::leaving::NodeRepairConfig>,
    /// Its capacity type (EKS's `capacityType`), when the provider says it.
    pub capacity_type: Option<super::capacity::CapacityType>,
    /// The capacity reservations its launch template targets, with their windows and counts now.
    pub reservations: Vec<super::capacity::Reservation>,
}

/// An EKS managed node group's status, as DescribeNodegroup spells it; `Unknown` keeps any other word a
/// provider sends, so that a newer EKS status is shown as it is rather than mistaken for one of these.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum NodeGroupStatus {
    Active,
    /// A managed node group update (new AMI, Kubernetes version or launch template) is replacing its nodes.
    Updating,
    Creating,
    Deleting,
    CreateFailed,
    DeleteFailed,
    /// EKS found a health issue (see the node group's `health.issues`).
    Degraded,
    Unknown(String),
}

impl NodeGroupStatus {
    /// Every status EKS documents, in its order.
    pub const KNOWN: [NodeGroupStatus; 7] = [
        NodeGroupStatus::Active,
        NodeGroupStatus::Updating,
        NodeGroupStatus::Creating,
        NodeGroupStatus::Deleting,
        NodeGroupStatus::CreateFailed,
        NodeGroupStatus::DeleteFailed,
        NodeGroupStatus::Degraded,
    ];

    /// The status EKS's word names (exactly as EKS writes it: `ACTIVE`, `CREATE_FAILED`, ...).
    pub fn parse(word: &str) -> NodeGroupStatus {
        Self::KNOWN
            .into_iter()
            .find(|s| s.as_str() == word)
            .unwrap_or_else(|| NodeGroupStatus::Unknown(word.to_string()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            NodeGroupStatus::Active => "ACTIVE",
            NodeGroupStatus::Updating => "UPDATING",
            NodeGroupStatus::Creating => "CREATING",
            NodeGroupStatus::Deleting => "DELETING",
            NodeGroupStatus::CreateFailed => "CREATE_FAILED",
            NodeGroupStatus::DeleteFailed => "DELETE_FAILED",
            NodeGroupStatus::Degraded => "DEGRADED",
            NodeGroupStatus::Unknown(word) => word,
        }
    }
}

impl std::fmt::Display for NodeGroupStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_back_as_eks_writes_them() {
        for status in NodeGroupStatus::KNOWN {
            assert_eq!(NodeGroupStatus::parse(status.as_str()), status);
        }
        assert_eq!(
            NodeGroupStatus::parse("CREATE_FAILED"),
            NodeGroupStatus::CreateFailed
        );
        // Only EKS's own spelling: anything else is kept, not guessed.
        assert_eq!(
            NodeGroupStatus::parse("active"),
            NodeGroupStatus::Unknown("active".into())
        );
        assert_eq!(NodeGroupStatus::parse("PAUSED").to_string(), "PAUSED");
    }
}
