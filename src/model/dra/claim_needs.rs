//! What a pod's claims ask of the node it goes on, as the loop finds it ([`super::claims::ClaimIndex`]) and
//! the simulation reads it from the pod: claims to allocate there, allocations that pin the pod, a claim the
//! cluster lacks.

use super::objects::{Allocation, ClaimSpec, Name};
use std::fmt;
use std::sync::Arc;

/// One claim a pod needs allocated where it goes.
#[derive(Clone, Debug, PartialEq)]
pub struct NeededClaim {
    /// How reasons name it: `namespace/claim`, or for a claim still to be made, `namespace/template
    /// (template)`.
    pub name: Name,
    pub spec: Arc<ClaimSpec>,
    /// A claim the pod names itself (`resourceClaimName`), which other pods may name too: allocated once,
    /// by the first of them placed, and the others go where that allocation is usable.
    pub shared: bool,
}

/// A claim of the pod that is allocated.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocatedClaim {
    pub name: Name,
    pub allocation: Allocation,
    /// The claim's spec when the claim is the pod's own (made from a template for it): what a move
    /// allocates again where the pod goes. A shared claim stays where it is allocated.
    pub own: Option<Arc<ClaimSpec>>,
}

/// What a pod's claims ask of its node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimNeeds {
    /// Claims to allocate on the pod's node, in the pod's order.
    pub unallocated: Vec<NeededClaim>,
    /// Claims already allocated: the pod may go only where each allocation is usable, except that a claim
    /// made for the pod alone moves with it (cluster-autoscaler's scale-down deallocates it and the
    /// destination allocates it again).
    pub allocated: Vec<AllocatedClaim>,
    /// A claim it names that the cluster does not have: no node takes the pod.
    pub missing: Option<ClaimError>,
    /// Extended resources it requests (`nvidia.com/gpu: 1`) that a DeviceClass stands for (KEP-5004): a
    /// node whose allocatable has the resource (a device plugin serves it) gives it as any extended
    /// resource; on any other node devices of the class are allocated for it, as a claim of its own.
    pub extended: Vec<ExtendedClaim>,
}

/// A pod's request of an extended resource that devices of a class may serve.
#[derive(Clone, Debug, PartialEq)]
pub struct ExtendedClaim {
    /// The resource, as the pod requests it.
    pub resource: Name,
    /// How many, the pod's demand of it (as for cpu: its containers' sum, or its largest init container).
    pub count: u64,
    /// How reasons name the claim the scheduler makes for it.
    pub name: Name,
    /// `count` devices of the class, one request named after the resource.
    pub spec: Arc<ClaimSpec>,
}

/// A claim a pod names that the cluster does not have: the scheduler leaves such a pod pending, and no node
/// added changes that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimError {
    ClaimMissing {
        namespace: Name,
        claim: Name,
    },
    TemplateMissing {
        namespace: Name,
        template: Name,
    },
    /// The claim the pod's status names was made for another pod.
    NotOwned {
        namespace: Name,
        claim: Name,
    },
}

impl fmt::Display for ClaimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClaimError::ClaimMissing { namespace, claim } => {
                write!(f, "resourceclaim \"{namespace}/{claim}\" not found")
            }
            ClaimError::TemplateMissing {
                namespace,
                template,
            } => write!(
                f,
                "resourceclaimtemplate \"{namespace}/{template}\" not found"
            ),
            ClaimError::NotOwned { namespace, claim } => write!(
                f,
                "resourceclaim \"{namespace}/{claim}\" was not created for the pod"
            ),
        }
    }
}

impl std::error::Error for ClaimError {}
