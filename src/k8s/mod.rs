//! Conversions at the edge between Kubernetes' wire formats and our own types.

pub(crate) mod autoscaling_group; // autoscaling.x-k8s.io and the CustomResource trait: a kind's group, versions, plural, status, one object read
pub(crate) mod capacity_buffer; // CapacityBuffers (autoscaling.x-k8s.io) and the PodTemplates and scalable objects they name
pub(crate) mod capacity_quota; // CapacityQuotas (autoscaling.x-k8s.io) read into the model, with their problems
pub(crate) mod conditions; // status conditions as SetStatusCondition keeps them
pub(crate) mod dra; // DeviceClasses, ResourceClaims (and templates), ResourceSlices, a pod's claims
mod object_error; // why an object could not be read
pub(crate) mod objects; // k8s-openapi nodes, pods, PDBs and k8s-pb template nodes -> the model
mod pod; // the facts of one pod (demand, Fargate traits) from protobuf bytes or kubectl JSON/YAML
pub(crate) mod provisioning_request; // ProvisioningRequests (autoscaling.x-k8s.io): check-capacity and best-effort-atomic
pub(crate) mod quantity; // Kubernetes quantities: parse and print canonically
mod scheduling; // a pod's scheduling constraints from its spec
mod snapshot; // `kubectl get nodes,pods,pdb -A -o json` files, read item by item
mod snapshot_pod; // a snapshot's pod, its status read only for what is used

pub use autoscaling_group::{CustomResource, GROUP as AUTOSCALING_GROUP};
pub use capacity_buffer::{
    ACTIVE_CAPACITY as BUFFER_ACTIVE_CAPACITY, BufferObjects, BufferSpec, BufferStatus,
    CapacityBuffer, LocalObjectRef, PROVISIONING as BUFFER_PROVISIONING,
    READY_FOR_PROVISIONING as BUFFER_READY_FOR_PROVISIONING, Scalable, ScalableRef, Template,
    VersionedBuffer,
};
pub use capacity_quota::{
    CapacityQuotaObject, CapacityQuotaStatus, RECONCILED_CONDITION, RECONCILIATION_FAILED,
    RECONCILIATION_SUCCEEDED, Usage as QuotaUsage, VALID_CONDITION, VALIDATION_FAILED,
    VALIDATION_SUCCEEDED, quota_from_value, read_status as read_quota_status,
};
pub use conditions::{
    Set as ConditionSet, find as find_condition, is_true as condition_is_true,
    set as set_condition, since as condition_since, time as condition_time,
};
pub use dra::{
    DRA_GROUP, DRA_KINDS, DRA_VERSIONS, claim_template, device_class, read_dra_object,
    resource_claim, resource_slice, resource_slice_from_pb, resource_slice_from_pb_bytes,
    resource_slice_to_pb, resource_slice_to_pb_bytes, slice_from_spec,
};
pub use object_error::ObjectError;
pub use objects::{
    CONSUME_ANNOTATION, PodJson, daemonset_pod, marked_unschedulable, node_from_api, node_from_pb,
    pdb_from_api, pod_from_api, pod_to_pb_bytes, template_pod, time as time_from_api,
};
pub use pod::{PodError, PodFacts};
pub use provisioning_request::{
    ACCEPTED as REQUEST_ACCEPTED, BEST_EFFORT_ATOMIC, BOOKING_EXPIRED as REQUEST_BOOKING_EXPIRED,
    CHECK_CAPACITY, FAILED as REQUEST_FAILED, NO_RETRY as REQUEST_NO_RETRY,
    PROVISIONED as REQUEST_PROVISIONED, ProvisioningRequest, RequestObjects, RequestSpec,
    RequestStatus, VersionedRequest, request_key,
};
pub use quantity::{
    Quantity, QuantityError, bytes as bytes_quantity, count as count_quantity, cpu as cpu_quantity,
    quantity as quantity_text,
};
pub use snapshot::{
    DISRUPTION_CONFIG_KEY, DISRUPTION_CONFIG_MAP, SnapshotError, SnapshotObjects, parse_snapshot,
    read_snapshot_text,
};
