//! A node group's template as both services serve it: externalgrpc's `NodeGroupTemplateNodeInfo` (the Node in
//! fields 1 and 2, its ResourceSlices in field 3) and `ekscale.v1.NodeGroups/TemplateResourceSlices` (the
//! same slices for every group in one call). One encoding, so that the two can never disagree.

use crate::cloud::NodeGroupSpec;
use crate::k8s::resource_slice_to_pb_bytes;
use crate::proto::externalgrpc::NodeGroupTemplateNodeInfoResponse;
use prost::Message;
use tonic::Status;

/// The ResourceSlices a new node of `group` publishes, each as `ResourceSlice.Marshal()` bytes, node-local to
/// the group's template node; empty when its nodes publish none.
pub fn resource_slice_bytes(group: &NodeGroupSpec) -> Vec<Vec<u8>> {
    (group.resource_slices.iter())
        .map(resource_slice_to_pb_bytes)
        .collect()
}

/// The template response of `group`: the Node in both generations' fields (1.25 - 1.34.x read field 1,
/// 1.34.2 and later field 2) and its ResourceSlices in field 3 (1.37 and later; earlier releases skip it).
pub fn template_node_info(
    group: &NodeGroupSpec,
) -> Result<NodeGroupTemplateNodeInfoResponse, Status> {
    let bytes = group.template.encode_to_vec();
    // An OK without a node makes cluster-autoscaler dereference nil: never send one.
    if bytes.is_empty() {
        return Err(Status::internal(format!(
            "node group {:?} has an empty template",
            group.id
        )));
    }
    Ok(NodeGroupTemplateNodeInfoResponse {
        node_info: bytes.clone(),
        node_bytes: bytes,
        resource_slice_bytes: resource_slice_bytes(group),
    })
}
