//! A node as decisions see it: what it offers and what it demands of pods.

use super::labels::Labels;
use super::leaving::NodeProblem;
use super::resources::Resources;
use super::taint::Taint;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

/// The label EKS puts on GPU nodes, naming the accelerator; also the answer to GPULabel.
pub const GPU_LABEL: &str = "k8s.amazonaws.com/accelerator";

pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// The node group of a managed node group's nodes (and of our templates).
pub const NODE_GROUP_LABEL: &str = "eks.amazonaws.com/nodegroup";
/// The image (AMI id) a managed node group's node was launched with; an update replaces the nodes whose image is
/// not the group's.
pub const NODE_GROUP_IMAGE_LABEL: &str = "eks.amazonaws.com/nodegroup-image";
/// `fargate` on the node EKS runs each Fargate pod on (also a NoSchedule taint's key there).
pub const FARGATE_COMPUTE_LABEL: &str = "eks.amazonaws.com/compute-type";
/// The instance type, on real and template nodes alike.
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";
/// On a node ekscale cordoned (`spec.unschedulable`), why it did (`drift`): only such a node is ever
/// uncordoned by ekscale, never one someone else cordoned.
pub const CORDONED_ANNOTATION: &str = "ekscale.io/cordoned";
/// [`CORDONED_ANNOTATION`]'s value on a drifted node cordoned ahead of its turn.
pub const CORDONED_FOR_DRIFT: &str = "drift";
/// `ON_DEMAND` or `SPOT` on a managed node group's nodes.
pub const CAPACITY_TYPE_LABEL: &str = "eks.amazonaws.com/capacityType";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    pub name: String,
    /// `aws:///<az>/<instance-id>` on EKS; empty until the cloud controller sets it.
    pub provider_id: String,
    pub labels: Labels,
    pub taints: Vec<Taint>,
    pub capacity: Resources,
    pub allocatable: Resources,
    /// Allocatable extended resources besides GPUs, by name.
    pub extended: BTreeMap<String, u64>,
    /// The Ready condition is True.
    pub ready: bool,
    /// `spec.unschedulable` (cordoned).
    pub unschedulable: bool,
    /// Its [`CORDONED_ANNOTATION`]: why ekscale cordoned it; `None` when ekscale did not.
    pub cordoned_by_ekscale: Option<String>,
    pub created: Option<SystemTime>,
    /// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`: never removed by scale-down.
    pub scale_down_disabled: bool,
    /// `karpenter.sh/do-not-disrupt: "true"`: never removed, replaced or expired by us (Karpenter's
    /// annotation, kept as scale-down-disabled is).
    pub do_not_disrupt: bool,
    /// The node monitoring agent's conditions that say it has a problem (`KernelReady` False, ...): an
    /// unhealthy node is leaving (`super::leaving`).
    pub problems: Vec<NodeProblem>,
}

impl Node {
    /// Whether it carries a taint with this key.
    pub fn tainted(&self, key: &str) -> bool {
        self.taints.iter().any(|t| t.key == key)
    }

    /// Not Ready and younger than `startup` (`--max-node-startup-time`) at `now`: still starting, neither
    /// ready nor unready, as upstream's NotStarted.
    pub fn starting(&self, now: SystemTime, startup: Duration) -> bool {
        !self.ready
            && self
                .created
                .and_then(|c| now.duration_since(c).ok())
                .is_some_and(|age| age < startup)
    }

    /// Whether the scheduler would place new pods here at all.
    pub fn accepts_pods(&self) -> bool {
        self.ready && !self.unschedulable
    }
}
