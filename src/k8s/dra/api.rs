//! `resource.k8s.io/v1` objects as kubectl prints them, read leniently: unknown fields are skipped (the
//! project's k8s-openapi has no `resource.k8s.io/v1`, and fields newer than this reader, or of features
//! the allocator does not implement, must not stop it), absent lists are empty. Nothing is checked here;
//! the conversions into the model check what the API server checks (and `apiVersion`, read from the object
//! before it is read as one of these).

use k8s_openapi::api::core::v1::NodeSelector;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The metadata read: what names an object and the pod a claim was made for.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    pub name: Option<String>,
    pub namespace: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    pub owner_references: Vec<OwnerReference>,
    #[serde(default, deserialize_with = "nullable")]
    pub annotations: BTreeMap<String, String>,
    pub creation_timestamp: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub uid: String,
    pub controller: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSlice {
    #[serde(default)]
    pub metadata: Meta,
    pub spec: Option<ResourceSliceSpec>,
}

/// A ResourceSlice's `spec`: what a driver publishes. Read alone too, where a provider's scenario lists the
/// slices a new node will publish (their pool and node are then the node's).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSliceSpec {
    #[serde(default)]
    pub driver: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<ResourcePool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub devices: Vec<Device>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub shared_counters: Vec<CounterSet>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourcePool {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub generation: i64,
    #[serde(default)]
    pub resource_slice_count: i64,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CounterSet {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub counters: BTreeMap<String, Counter>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct Counter {
    pub value: Option<QuantityText>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Device {
    #[serde(default)]
    pub name: String,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub taints: Vec<DeviceTaint>,
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub binding_conditions: Vec<String>,
}

/// Exactly one value: a scalar (`int`, `bool`, `string`, `version`) or, behind an alpha feature, a list.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct DeviceAttribute {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ints: Option<Vec<i64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bools: Option<Vec<bool>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strings: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct DeviceCapacity {
    pub value: Option<QuantityText>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCounterConsumption {
    #[serde(default)]
    pub counter_set: String,
    #[serde(default, deserialize_with = "nullable")]
    pub counters: BTreeMap<String, Counter>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct DeviceTaint {
    #[serde(default)]
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

/// `null` read as empty: Go prints a nil list or map that has no `omitempty` as `null`.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A quantity as written: kubectl prints a string, a hand-written YAML spec may write a plain number.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct QuantityText(pub String);

impl<'de> Deserialize<'de> for QuantityText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Text(String),
            Integer(i64),
            Number(f64),
        }
        Ok(QuantityText(match Written::deserialize(deserializer)? {
            Written::Text(text) => text,
            Written::Integer(n) => n.to_string(),
            Written::Number(n) => n.to_string(),
        }))
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClass {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: DeviceClassSpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceClassSpec {
    #[serde(default, deserialize_with = "nullable")]
    pub selectors: Vec<DeviceSelector>,
    pub extended_resource_name: Option<String>,
}

/// Exactly one field: `cel`, the only kind there is.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct DeviceSelector {
    pub cel: Option<CelDeviceSelector>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct CelDeviceSelector {
    #[serde(default)]
    pub expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaim {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ResourceClaimSpec,
    #[serde(default)]
    pub status: ResourceClaimStatus,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResourceClaimSpec {
    #[serde(default)]
    pub devices: DeviceClaim,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DeviceClaim {
    #[serde(default, deserialize_with = "nullable")]
    pub requests: Vec<DeviceRequest>,
    #[serde(default, deserialize_with = "nullable")]
    pub constraints: Vec<DeviceConstraint>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequest {
    #[serde(default)]
    pub name: String,
    pub exactly: Option<ExactDeviceRequest>,
    pub first_available: Option<Vec<DeviceSubRequest>>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExactDeviceRequest {
    #[serde(default)]
    pub device_class_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub selectors: Vec<DeviceSelector>,
    pub allocation_mode: Option<String>,
    pub count: Option<i64>,
    pub admin_access: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    pub tolerations: Vec<DeviceToleration>,
}

/// As [`ExactDeviceRequest`], without admin access (which only `exactly` has).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceSubRequest {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub device_class_name: String,
    #[serde(default, deserialize_with = "nullable")]
    pub selectors: Vec<DeviceSelector>,
    pub allocation_mode: Option<String>,
    pub count: Option<i64>,
    #[serde(default, deserialize_with = "nullable")]
    pub tolerations: Vec<DeviceToleration>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DeviceToleration {
    pub key: Option<String>,
    pub operator: Option<String>,
    pub value: Option<String>,
    pub effect: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceConstraint {
    #[serde(default, deserialize_with = "nullable")]
    pub requests: Vec<String>,
    pub match_attribute: Option<String>,
    pub distinct_attribute: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimStatus {
    pub allocation: Option<AllocationResult>,
    #[serde(default, deserialize_with = "nullable")]
    pub reserved_for: Vec<ConsumerReference>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AllocationResult {
    #[serde(default)]
    pub devices: DeviceAllocationResult,
    pub node_selector: Option<NodeSelector>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct DeviceAllocationResult {
    #[serde(default, deserialize_with = "nullable")]
    pub results: Vec<DeviceRequestAllocationResult>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceRequestAllocationResult {
    #[serde(default)]
    pub request: String,
    #[serde(default)]
    pub driver: String,
    #[serde(default)]
    pub pool: String,
    #[serde(default)]
    pub device: String,
    pub admin_access: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerReference {
    #[serde(default)]
    pub api_group: String,
    #[serde(default)]
    pub resource: String,
    #[serde(default)]
    pub uid: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceClaimTemplate {
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ResourceClaimTemplateSpec,
}

/// The claim's metadata (labels and annotations copied to each claim) is not read.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct ResourceClaimTemplateSpec {
    #[serde(default)]
    pub spec: ResourceClaimSpec,
}
