//! The internal model: compact integer types the decisions are made on, converted once at the edge.

mod capacity; // capacity types and EC2 capacity reservations (Capacity Blocks, ODCRs)
mod claims; // a pod's claim needs found in the cluster's claims and templates (above dra/ and pod.rs)
mod derived_names; // names made from other names (a node group's), valid for what they name
mod dra; // Dynamic Resource Allocation: devices, classes, claims, what a pod claims and asks of its node
pub(crate) mod fargate; // which Fargate profile takes a pod, as EKS matches
mod fast_map; // the hash maps of the hot paths
mod invalid; // the validation error every reader returns: the field and the rule it breaks
mod labels; // labels by key in one sorted allocation: a million pods carry them
mod leaving; // nodes going away for reasons no autoscaler decided: interruptions, events, repairs
pub(crate) mod node; // what a node offers and demands of pods
mod node_group; // node groups, their instances and options, as a provider says them
mod pdb; // disruption budgets
pub(crate) mod pod; // what a pod needs and where it may run
mod pod_names; // pods' names packed into one string, as the view reads them and a scale-up lists them
pub(crate) mod pods; // the view's pods and a loop's virtual ones, as one list
mod quantity; // Kubernetes quantities, read exactly
mod quota; // CapacityQuotas: limits on what the nodes a selector matches add up to
pub(crate) mod resources; // integer resources and a pod's demand
pub(crate) mod selector; // label selectors and node selector terms
pub(crate) mod taint; // taints and tolerations
mod time; // times written in files, read one strict way (RFC 3339 with a zone)

pub use capacity::{
    CAPACITY_BLOCK_SCALE_IN_LEAD, CAPACITY_BLOCK_TERMINATION_LEAD, CapacityType,
    DEFAULT_DRAIN_LEAD, KARPENTER_CAPACITY_TYPE_LABEL, Reservation, ReservationType,
};
pub use claims::ClaimIndex;
pub use derived_names::{label_value, subdomain_part};
pub use dra::{
    AllocatedClaim, AllocatedDevice, Allocation, AllocationMode, AttrValue, ClaimError, ClaimNeeds,
    ClaimSource, ClaimSpec, ClaimTemplate, CounterConsumption, CounterSet, Device, DeviceAsk,
    DeviceClass, DeviceId, DeviceRequest, DeviceTaint, DeviceTaintEffect, DeviceToleration,
    DraObjects, EXTENDED_RESOURCE_CLAIM_ANNOTATION, ExtendedClaim,
    IMPLICIT_EXTENDED_RESOURCE_PREFIX, MatchAttribute, Name, NeededClaim, NodeScope, PodClaim,
    PodDra, PoolRef, QualifiedName, ResourceClaim, ResourceSlice,
};
pub use fargate::{
    FargateProfile, FargateSelector, PodMatch, label_keys as fargate_label_keys,
    namespaces_taken as fargate_namespaces,
};
pub use fargate::{Matcher, PROFILE_LABEL, SCHEDULER_NAME, Selection, select};
pub use fast_map::{FastMap, FastSet};
pub use invalid::Invalid;
pub use labels::Labels;
pub use leaving::{
    LEAVING_TAINTS, LeavingInstance, LeavingReason, NODE_MONITORING_CONDITIONS, NodeProblem,
    NodeRepairConfig, NodeRepairOverride, repair_condition,
};
pub use node::{
    CAPACITY_TYPE_LABEL, CORDONED_ANNOTATION, CORDONED_FOR_DRIFT, FARGATE_COMPUTE_LABEL, GPU_LABEL,
    HOSTNAME_LABEL, INSTANCE_TYPE_LABEL, NODE_GROUP_IMAGE_LABEL, NODE_GROUP_LABEL, Node,
    ZONE_LABEL,
};
pub use node_group::{
    GroupOptions, Instance, InstanceError, InstanceState, NodeGroup, NodeGroupState,
    NodeGroupStatus,
};
pub use pdb::Pdb;
pub use pod::{
    Alike, Controller, Disruption, EquivalenceKey, FARGATE_SCHEDULER, HostPort, LabelProjection,
    Phase, Pod, PodAffinityTerm, SafeToEvict, Scheduling, SchedulingIds, SpreadConstraint,
};
pub use pod_names::PodNames;
pub use pods::PodList;
pub use quantity::{Quantity, QuantityError};
pub use quota::{
    CapacityQuota, MAX_LIMITS, MAX_RESOURCE_NAME, NODES_RESOURCE, QuotaCondition, QuotaSpec,
    QuotaStatus, QuotaVersion, VIRTUAL_KUBELET_LABEL, WrittenLimit, WrittenRequirement,
    quota_amount, quota_id, quota_resources, read_limits, read_selector,
};
pub use resources::{ContainerDemand, pod_demand};
pub use resources::{GPU_RESOURCE, Resources};
pub use selector::{
    LabelSelector, NODE_NAME_FIELD, NodeSelector, NodeSelectorTerm, Operator, Requirement,
    is_dns_subdomain, is_label_name,
};
pub use taint::{
    DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT, Taint, TaintEffect, Toleration, untolerated,
};
pub use time::rfc3339;
