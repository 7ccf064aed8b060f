//! Dynamic Resource Allocation in the model: the objects as the allocator reads them (devices, classes,
//! claims, what a pod claims), what a pod's claims ask of its node, and how they enter its equivalence key. Finding those needs
//! over the cluster's pods (`model/claims.rs`) stays beside `model/pod.rs`, which this folder is below.

mod claim_needs; // what a pod's claims ask of its node
mod claims_key; // a pod's claims and DRA-served extended resources (KEP-5004) in its equivalence key
mod objects; // devices, classes, claims, what a pod claims, converted once at the edge
mod pod_dra; // a pod's claims, uid and needs, boxed apart from the rest

pub use claim_needs::{AllocatedClaim, ClaimError, ClaimNeeds, ExtendedClaim, NeededClaim};
pub(crate) use claims_key::DraKey;
pub use objects::{
    AllocatedDevice, Allocation, AllocationMode, AttrValue, ClaimSource, ClaimSpec, ClaimTemplate,
    CounterConsumption, CounterSet, Device, DeviceAsk, DeviceClass, DeviceId, DeviceRequest,
    DeviceTaint, DeviceTaintEffect, DeviceToleration, DraObjects,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION, IMPLICIT_EXTENDED_RESOURCE_PREFIX, MatchAttribute, Name,
    NodeScope, PodClaim, PoolRef, QualifiedName, ResourceClaim, ResourceSlice,
};
pub use pod_dra::PodDra;
