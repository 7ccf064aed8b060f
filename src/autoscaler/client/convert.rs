//! Wire types to the model, at the client's edge: node groups, their EKS states, instances, Fargate matches,
//! templates, template ResourceSlices.

use super::error::ClientError;
use crate::model::{
    CapacityType, Instance, InstanceError, InstanceState, Invalid, NodeGroup, NodeGroupState,
    NodeGroupStatus, PodMatch, Reservation, ResourceSlice,
};
use crate::proto::ekscale::{MatchPodResponse, NodeGroupDescription};
use crate::proto::externalgrpc::instance_status::InstanceState as WireState;
use crate::proto::externalgrpc::*;
use k8s_pb::api::core::v1::Node;
use prost::Message;
use std::sync::Arc;
use std::time::Duration;
use tonic::{Code, Status};

/// A node group in the model.
pub(super) fn group_of(group: crate::proto::externalgrpc::NodeGroup) -> NodeGroup {
    NodeGroup {
        id: group.id,
        min_size: group.min_size,
        max_size: group.max_size,
    }
}

/// A group's EKS status, image, capacity type and reservations in the model, by its id; an empty image or
/// capacity type is none. A capacity type or reservation that cannot be read is refused, naming the group:
/// planning with a reservation misread would put pods on capacity that is not there.
pub(super) fn state_of(
    described: NodeGroupDescription,
) -> Result<(String, NodeGroupState), ClientError> {
    let refused = |invalid: Invalid| ClientError::Described {
        group: described.id.clone(),
        invalid,
    };
    let capacity_type = (Some(described.capacity_type.as_str()).filter(|c| !c.is_empty()))
        .map(CapacityType::parse)
        .transpose()
        .map_err(refused)?;
    let reservations = (described.reservations.iter().enumerate())
        .map(|(i, r)| {
            Reservation::try_from(r.clone())
                .map_err(|e| refused(e.within(&format!("reservations[{i}]"))))
        })
        .collect::<Result<_, _>>()?;
    let state = NodeGroupState {
        status: NodeGroupStatus::parse(&described.status),
        image: Some(described.image).filter(|image| !image.is_empty()),
        capacity_rebalance: described.capacity_rebalance,
        node_repair: described.node_repair.map(Into::into),
        capacity_type,
        reservations,
    };
    Ok((described.id, state))
}

/// An instance in the model: its state, and why it could not be created.
pub(super) fn instance_of(instance: crate::proto::externalgrpc::Instance) -> Instance {
    let status = instance.status.unwrap_or_default();
    let state = match status.instance_state() {
        WireState::Unspecified => InstanceState::Unknown,
        WireState::InstanceRunning => InstanceState::Running,
        WireState::InstanceCreating => InstanceState::Creating,
        WireState::InstanceDeleting => InstanceState::Deleting,
    };
    Instance {
        id: instance.id,
        state,
        error: status.error_info.map(|e| InstanceError {
            code: e.error_code,
            message: e.error_message,
            class: e.instance_error_class,
        }),
    }
}

/// MatchPod's answer in the model.
pub(super) fn match_of(answer: MatchPodResponse) -> PodMatch {
    PodMatch {
        profile: answer.profile,
        candidates: answer.candidates,
        capacity_provisioned: answer.capacity_provisioned,
        vcpu: answer.vcpu,
        memory_gb: answer.memory_gb,
        hourly_price: answer.hourly_price,
        incompatibilities: answer.incompatibilities,
        reason: answer.reason,
    }
}

/// A failed call of an optional RPC: Unimplemented means "not offered" (`None`), anything else an error.
pub(super) fn optional<T>(method: &'static str, status: Status) -> Result<Option<T>, ClientError> {
    if status.code() == Code::Unimplemented {
        Ok(None)
    } else {
        Err(ClientError::rpc(method, status))
    }
}

/// Now and `hours` later, in seconds as both generations of the pricing calls expect.
pub(super) fn period(hours: f64) -> (prost_types::Timestamp, prost_types::Timestamp) {
    let now = std::time::SystemTime::now();
    let later = now + Duration::from_secs_f64(hours.max(0.0) * 3600.0);
    let seconds = |t: std::time::SystemTime| prost_types::Timestamp {
        seconds: t
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64),
        nanos: 0,
    };
    (seconds(now), seconds(later))
}

/// A group's template as cluster-autoscaler's `TemplateNodeInfo` gives it: the Node a new node of the group
/// registers as, and the ResourceSlices (DRA devices) it publishes, node-local to it.
#[derive(Debug, PartialEq)]
pub struct TemplateNodeInfo {
    pub node: Arc<Node>,
    /// From `resourceSliceBytes` (field 3, cluster-autoscaler 1.37+); empty when the provider sent none.
    pub resource_slices: Vec<ResourceSlice>,
}

/// The template from whichever field the provider filled: `nodeBytes` (1.34.2+) or `nodeInfo` (before), with
/// the slices of `resourceSliceBytes`. An OK without a node is a provider bug that upstream would crash on;
/// we read it as "no template".
pub(super) fn decode_template(
    response: NodeGroupTemplateNodeInfoResponse,
) -> Result<Option<TemplateNodeInfo>, ClientError> {
    const METHOD: &str = "NodeGroupTemplateNodeInfo";
    let bytes = if response.node_bytes.is_empty() {
        response.node_info
    } else {
        response.node_bytes
    };
    if bytes.is_empty() {
        return Ok(None);
    }
    let node = Node::decode(bytes.as_slice()).map_err(|source| ClientError::Template {
        method: METHOD,
        source,
    })?;
    Ok(Some(TemplateNodeInfo {
        node: Arc::new(node),
        resource_slices: decode_slices(METHOD, &response.resource_slice_bytes)?,
    }))
}

/// A group's template slices from their `ResourceSlice.Marshal()` bytes; one the model cannot read fails the
/// call, naming the slice and why.
pub(super) fn decode_slices(
    method: &'static str,
    slices: &[Vec<u8>],
) -> Result<Vec<ResourceSlice>, ClientError> {
    (slices.iter())
        .map(|bytes| {
            crate::k8s::resource_slice_from_pb_bytes(bytes)
                .map_err(|source| ClientError::Slice { method, source })
        })
        .collect()
}
