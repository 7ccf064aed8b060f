//! Dynamic Resource Allocation (`resource.k8s.io/v1`): DeviceClasses, ResourceClaims,
//! ResourceClaimTemplates and ResourceSlices read into the model, checked as the API server checks them,
//! and what a pod claims.

mod api; // the objects as kubectl prints them, read leniently
mod check; // what every conversion shares: the object named in refusals, versions, names, selectors, node scopes
mod claim; // ResourceClaims and ResourceClaimTemplates
mod class; // DeviceClasses
mod names; // the API server's rules for names: DNS labels and subdomains, qualified names, versions
mod pod_claims; // a pod's `spec.resourceClaims`, resolved to its claims
mod read; // the four kinds into one DraObjects, object by object
mod slice; // ResourceSlices from the API's objects (and a spec alone for a node to be), and as protobuf on the wire

pub use claim::{claim_template, resource_claim};
pub use class::device_class;
pub use pod_claims::pod_claims;
pub use read::{DRA_GROUP, DRA_KINDS, DRA_VERSIONS, read_dra_object};
pub use slice::{
    resource_slice, resource_slice_from_pb, resource_slice_from_pb_bytes, resource_slice_to_pb,
    resource_slice_to_pb_bytes, slice_from_spec,
};
