//! Dynamic Resource Allocation (`resource.k8s.io/v1`) as the allocator reads it: the devices drivers publish
//! in ResourceSlices, the DeviceClasses and ResourceClaims that ask for them, and what a pod claims. Converted
//! once at the edge (`k8s::dra`) from the API's objects, keeping what allocation, utilization and the
//! reports read; fields the allocator does not support (consumable capacity, binding conditions beyond their
//! presence, list attributes) are not kept.

use crate::model::quantity::Quantity;
use crate::model::selector::NodeSelector;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A name as the API writes it (driver, pool, device, class, claim, counter set...), shared.
pub type Name = Arc<str>;

/// A qualified name, `domain/id`; a name without a domain is in the domain of the driver that published it
/// (`productName` of `gpu.nvidia.com` is `gpu.nvidia.com/productName`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QualifiedName {
    pub domain: Name,
    pub id: Name,
}

/// One attribute value: exactly one of the API's `int`, `bool`, `string`, `version`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrValue {
    Int(i64),
    Bool(bool),
    Str(Name),
    /// A semantic version as the driver wrote it (CEL's `semver` parses it when a selector reads it).
    Version(Name),
}

/// Which nodes a slice's (or, with per-device node selection, a device's) devices are reachable from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeScope {
    /// `nodeName`: node-local devices.
    Node(Name),
    /// `nodeSelector`: one term.
    Selector(NodeSelector),
    /// `allNodes`.
    All,
    /// `perDeviceNodeSelection`: each device says (its `scope`).
    PerDevice,
}

/// A device taint's effect; any other word the API adds is kept as `Other` and, as the allocator does,
/// ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceTaintEffect {
    None,
    NoSchedule,
    NoExecute,
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTaint {
    pub key: Name,
    pub value: Name,
    pub effect: DeviceTaintEffect,
}

/// A request's toleration of device taints (`operator` `Equal` unless `exists`; an empty key or effect
/// matches any).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceToleration {
    pub key: Name,
    pub exists: bool,
    pub value: Name,
    /// `None`: every effect.
    pub effect: Option<DeviceTaintEffect>,
}

/// What a partitionable device takes from one of its pool's counter sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterConsumption {
    pub counter_set: Name,
    pub counters: BTreeMap<Name, Quantity>,
}

/// A pool-wide set of counters that partitionable devices consume (`sharedCounters`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterSet {
    pub name: Name,
    pub counters: BTreeMap<Name, Quantity>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub name: Name,
    pub attributes: BTreeMap<QualifiedName, AttrValue>,
    pub capacity: BTreeMap<QualifiedName, Quantity>,
    pub consumes: Vec<CounterConsumption>,
    pub taints: Vec<DeviceTaint>,
    /// Its own node selection, when its slice has `perDeviceNodeSelection`.
    pub scope: Option<NodeScope>,
    /// It has `bindingConditions`: the stable allocator never picks such a device.
    pub binding_conditions: bool,
}

/// `pool` of a slice: its devices are those of every slice of the pool at its newest generation, complete
/// when `slice_count` slices of that generation are there.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolRef {
    pub name: Name,
    pub generation: i64,
    pub slice_count: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ResourceSlice {
    pub name: Name,
    pub driver: Name,
    pub pool: PoolRef,
    pub scope: NodeScope,
    pub devices: Vec<Device>,
    pub shared_counters: Vec<CounterSet>,
}

/// A DeviceClass: selectors every device of the class passes (CEL expressions), and the extended resource
/// it stands for (`extendedResourceName`, e.g. `nvidia.com/gpu`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceClass {
    pub name: Name,
    pub selectors: Vec<Name>,
    pub extended_resource_name: Option<Name>,
    /// Its creationTimestamp: of two classes that stand for one extended resource, the newer serves it.
    pub created: Option<std::time::SystemTime>,
}

/// The extended resource every DeviceClass stands for by its name (`deviceclass.resource.kubernetes.io/
/// <class>`), besides the one its `extendedResourceName` gives (KEP-5004).
pub const IMPLICIT_EXTENDED_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// The annotation (value `"true"`) of the claim kube-scheduler makes for a pod's requests of extended
/// resources that devices serve on its node (KEP-5004).
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocationMode {
    /// `count` devices.
    ExactCount(u32),
    /// Every matching device the node can reach.
    All,
}

/// One way to satisfy a request: `exactly`, or one of `firstAvailable`'s sub-requests.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceAsk {
    /// The sub-request's name; empty for `exactly`.
    pub name: Name,
    pub class: Name,
    /// CEL expressions every device must pass, after the class's.
    pub selectors: Vec<Name>,
    pub mode: AllocationMode,
    pub admin_access: bool,
    pub tolerations: Vec<DeviceToleration>,
}

/// A request of a claim: `exactly` (one ask) or `firstAvailable` (asks in order, the first that can be met).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceRequest {
    pub name: Name,
    pub first_available: bool,
    pub asks: Vec<DeviceAsk>,
}

/// `matchAttribute`: the devices of `requests` (all when empty; a request name or `request/sub-request`)
/// share the attribute's value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatchAttribute {
    pub requests: Vec<Name>,
    pub attribute: QualifiedName,
}

/// What a claim asks for (its spec, or a template's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClaimSpec {
    pub requests: Vec<DeviceRequest>,
    pub constraints: Vec<MatchAttribute>,
}

/// A device allocated to a claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceId {
    pub driver: Name,
    pub pool: Name,
    pub device: Name,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocatedDevice {
    /// `request` or `request/sub-request`.
    pub request: Name,
    pub device: DeviceId,
    /// Admin access: the device is not taken from other claims.
    pub admin_access: bool,
}

/// A claim's allocation: its devices, and the nodes they are usable from (`None`: every node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    pub devices: Vec<AllocatedDevice>,
    pub node_selector: Option<NodeSelector>,
}

/// A ResourceClaim.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceClaim {
    pub namespace: Name,
    pub name: Name,
    pub spec: Arc<ClaimSpec>,
    /// The pod it was made for from a template (its controller ownerReference's uid), if it was.
    pub owner_pod: Option<Name>,
    pub allocation: Option<Allocation>,
    /// The uids of the pods it is reserved for.
    pub reserved_for: Vec<Name>,
    /// Made by the scheduler for its pod's requests of extended resources devices serve (KEP-5004): it
    /// carries [`EXTENDED_RESOURCE_CLAIM_ANNOTATION`], and the pod names it in
    /// `status.extendedResourceClaimStatus` rather than in `spec.resourceClaims`.
    pub extended_resources: bool,
}

/// A ResourceClaimTemplate: the claim each pod that names it gets.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimTemplate {
    pub namespace: Name,
    pub name: Name,
    pub spec: Arc<ClaimSpec>,
}

/// Where one of a pod's claims comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClaimSource {
    /// `resourceClaimName`: a claim several pods may share.
    Claim(Name),
    /// `resourceClaimTemplateName`: the pod's own claim, made from the template; `made` is its name once the
    /// claim controller made it (`status.resourceClaimStatuses`).
    Template { template: Name, made: Option<Name> },
}

/// An entry of a pod's `spec.resourceClaims`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PodClaim {
    pub name: Name,
    pub source: ClaimSource,
}

/// The DRA objects of a cluster, as read.
#[derive(Clone, Debug, Default)]
pub struct DraObjects {
    pub classes: Vec<Arc<DeviceClass>>,
    pub claims: Vec<Arc<ResourceClaim>>,
    pub templates: Vec<Arc<ClaimTemplate>>,
    pub slices: Vec<Arc<ResourceSlice>>,
}

impl DraObjects {
    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
            && self.claims.is_empty()
            && self.templates.is_empty()
            && self.slices.is_empty()
    }
}
