//! ResourceSlices, both ways they arrive: from the API's JSON (checked as the API server checks them, and a
//! slice's spec alone for a node a provider will make), and as Kubernetes' protobuf on the wire.

mod from_api; // ResourceSlices read from the API's objects, and a slice's spec alone for a node a provider will make
mod protobuf; // ResourceSlices as Kubernetes' protobuf, both ways: template slices on the wire

pub use from_api::{resource_slice, slice_from_spec};
pub use protobuf::{
    resource_slice_from_pb, resource_slice_from_pb_bytes, resource_slice_to_pb,
    resource_slice_to_pb_bytes,
};
