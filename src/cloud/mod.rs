//! The cloud side: node groups and their instances, behind one trait.
//!
//! A backend keeps the cloud's view in memory so that the hot RPCs (target size, node group for node,
//! instances) never wait on the cloud, and carries out size changes the provider has already validated.
//! The rules of the protocol (bounds, membership, all-or-nothing deletes) live once, in `provider`.

#[cfg(feature = "aws")]
pub mod aws; // EKS managed node groups on AWS
mod backend; // the NodeGroupBackend trait, its errors, the observer of cloud calls
pub(crate) mod dra; // the ResourceSlices a new node of a group publishes, from its instance type's GPUs
pub(crate) mod fargate; // Fargate's matching, sizing and prices
pub(crate) mod instance_types; // the instance types the simulated EKS and templates know
mod node_group; // node groups and their instances as a backend knows them
mod options; // per-group autoscaling options from files and tags
pub(crate) mod pricing; // node and pod prices
mod simulated_eks; // the embedded simulated EKS and its scenario file
pub(crate) mod template; // instance facts -> the template node of a group

pub use crate::model::{FargateProfile, FargateSelector};
pub use backend::{CloudError, CloudObserver, NodeGroupBackend};
pub use dra::{DraError, KNOWN_DRIVERS, NVIDIA_GPU_DRIVER};
pub use fargate::{PROFILE_LABEL, SCHEDULER_NAME, Selection, assess};
pub use instance_types::gpu_types;
pub use node_group::{
    Instance, InstanceError, InstanceErrorClass, InstanceState, NodeGroupSpec, OptionOverrides,
};
pub use pricing::{PriceError, node_price_per_hour, pod_price_per_hour};
pub use simulated_eks::{
    BUILT_IN_SCENARIO, EventKind, InstanceEvent, Pick, Scenario, ScenarioError, SimNodeGroup,
    SimulatedEks,
};
