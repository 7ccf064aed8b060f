//! The simulated EKS's scenario file: node groups (and Fargate profiles) as YAML.
//!
//! Parsing is strict (unknown keys are errors) and validation is whole: a scenario that loads is one the
//! simulator can serve, with every template already built and checked.

use super::leaving_keys::{GroupFacts, InstanceEvent, InstanceEventFile, NodeRepairConfigFile};
use super::reservations::{ReservationFile, read_reservations};
use crate::cloud::dra::{self, InstanceGpus};
use crate::cloud::fargate::FargateRates;
use crate::cloud::instance_types::{self, Arch};
use crate::cloud::node_group::NodeGroupSpec;
use crate::cloud::options::OptionsFile;
use crate::cloud::pricing::DEFAULT_SPOT_PRICE_RATIO;
use crate::cloud::template::{
    self, LaunchTarget, Taint, TaintEffect, TemplateSpec, eks_allocatable,
};
use crate::k8s::Quantity;
use crate::model::{
    CAPACITY_TYPE_LABEL, CapacityType, FargateProfile, Invalid, NODE_GROUP_IMAGE_LABEL,
    NodeGroupStatus, ResourceSlice, Resources, is_dns_subdomain, is_label_name, rfc3339,
};
use serde::Deserialize;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// The scenario the simulator serves when no file is given.
pub const BUILT_IN_SCENARIO: &str = include_str!("../scenario.yaml");

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ScenarioFile {
    cluster: String,
    region: String,
    /// Seeds instance ids, so a scenario always produces the same ones.
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_spot_price_ratio")]
    spot_price_ratio: f64,
    node_groups: Vec<NodeGroupFile>,
    #[serde(default)]
    fargate_profiles: Vec<FargateProfile>,
    /// Fargate's prices in this scenario's region (default: us-east-1's).
    #[serde(default)]
    fargate_pricing: Option<FargateRates>,
    /// The wall-clock time the simulated EKS starts at (RFC 3339): what `instanceEvents`' times are read
    /// against, so required with them. The moment it starts, when left out.
    #[serde(default)]
    start: Option<String>,
    /// What EC2 says about instances, each at its time.
    #[serde(default)]
    instance_events: Vec<InstanceEventFile>,
}

fn default_spot_price_ratio() -> f64 {
    DEFAULT_SPOT_PRICE_RATIO
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NodeGroupFile {
    name: String,
    #[serde(default)]
    instance_type: Option<String>,
    #[serde(default)]
    allocatable: BTreeMap<String, serde_norway::Value>,
    zones: Vec<String>,
    min_size: i32,
    max_size: i32,
    desired_size: i32,
    #[serde(default = "on_demand")]
    capacity_type: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<TaintFile>,
    #[serde(default, with = "humantime_serde")]
    provisioning_delay: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    deletion_delay: Option<Duration>,
    /// Instances the cloud can provide at most; requests beyond it become placeholders.
    #[serde(default)]
    available_capacity: Option<u32>,
    /// Root volume size in GiB (EKS's default is 20).
    #[serde(default = "default_disk_size")]
    disk_size: u64,
    #[serde(default)]
    price_per_hour: Option<f64>,
    #[serde(default)]
    options: Option<OptionsFile>,
    /// EKS's status of the group, as DescribeNodeGroups reports it (default ACTIVE).
    #[serde(default)]
    status: Option<String>,
    /// The image (AMI id) its nodes launch with (default: its AMI type's, `ami-eks-<arch>[-nvidia]-1`).
    #[serde(default)]
    image: Option<String>,
    /// The DRA drivers its nodes run (`[gpu.nvidia.com]`): each publishes, on a new node, the slices the
    /// instance type's devices make (`cloud::dra`), which the group's template carries.
    #[serde(default)]
    dra_drivers: Vec<String>,
    /// ResourceSlice `spec`s a new node publishes as they are (`driver`, `devices`, `sharedCounters`), for
    /// drivers no instance type describes: their pool and node are the new node's.
    #[serde(default)]
    resource_slices: Vec<serde_json::Value>,
    /// Its Auto Scaling group's capacity rebalancing (default: on for SPOT groups, as EKS sets it).
    #[serde(default)]
    capacity_rebalance: Option<bool>,
    /// EKS's node auto repair, with EKS's fields.
    #[serde(default)]
    node_repair_config: Option<NodeRepairConfigFile>,
    /// The EC2 capacity reservations its launch template targets (a capacity block, ODCRs).
    #[serde(default)]
    reservations: Vec<ReservationFile>,
}

/// The `resourceSlices` a group lists, after the slices its drivers derive: each its own pool, named after
/// the node as drivers name theirs (`<node>`, then `<node>-1`, ... for more pools of one driver).
fn given_slices(
    node: &str,
    specs: &[serde_json::Value],
    slices: &mut Vec<ResourceSlice>,
) -> Result<(), Invalid> {
    for (i, spec) in specs.iter().enumerate() {
        let driver = spec.get("driver").and_then(|d| d.as_str()).unwrap_or("");
        let same = slices.iter().filter(|s| &*s.driver == driver).count();
        let pool = match same {
            0 => node.to_string(),
            n => format!("{node}-{n}"),
        };
        let name = format!("{node}-{driver}-{i}");
        let slice = crate::k8s::slice_from_spec(spec.clone(), &name, &pool, node)
            .map_err(|e| Invalid::value(format!("resourceSlices[{i}]: {e}")))?;
        slices.push(slice);
    }
    Ok(())
}

fn on_demand() -> String {
    "ON_DEMAND".into()
}

fn default_disk_size() -> u64 {
    20
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaintFile {
    key: String,
    #[serde(default)]
    value: String,
    effect: String,
}

/// A loaded, validated scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub cluster: String,
    pub region: String,
    pub seed: u64,
    pub node_groups: Vec<SimNodeGroup>,
    pub fargate_profiles: Vec<FargateProfile>,
    pub fargate_rates: FargateRates,
    /// The wall-clock time the simulated EKS starts at, when the scenario says.
    pub start: Option<SystemTime>,
    /// What EC2 says about the instances of `desiredSize`, each at its time.
    pub instance_events: Vec<InstanceEvent>,
}

/// One node group of the simulator: what the provider serves, plus how the simulated cloud behaves.
#[derive(Clone, Debug)]
pub struct SimNodeGroup {
    pub spec: Arc<NodeGroupSpec>,
    pub zones: Vec<String>,
    pub desired_size: i32,
    pub provisioning_delay: Duration,
    pub deletion_delay: Duration,
    pub available_capacity: Option<u32>,
}

/// The capacity type of Spot groups, as EKS spells it.
const SPOT: &str = "SPOT";

impl SimNodeGroup {
    /// Whether its instances are Spot (its template's capacity type label, from `capacityType`).
    pub fn is_spot(&self) -> bool {
        let labels = self.spec.template.metadata.as_ref().map(|m| &m.labels);
        labels
            .and_then(|l| l.get(CAPACITY_TYPE_LABEL))
            .map(String::as_str)
            == Some(SPOT)
    }

    /// How many instances it runs from the start: its `desiredSize`, fewer when its `availableCapacity` is
    /// less.
    pub fn running_at_start(&self) -> usize {
        let desired = usize::try_from(self.desired_size).unwrap_or(0);
        (self.available_capacity).map_or(desired, |c| desired.min(c as usize))
    }
}

/// A scenario that cannot be served, with the reason.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("scenario: {0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("scenario: node group {group:?}: {reason}")]
    NodeGroup { group: String, reason: Invalid },
    #[error("scenario: {0}")]
    Invalid(Invalid),
    #[error("scenario: instanceEvents[{index}]: {reason}")]
    InstanceEvent { index: usize, reason: Invalid },
}

impl Scenario {
    /// The built-in scenario.
    pub fn built_in() -> Scenario {
        Scenario::parse(BUILT_IN_SCENARIO).expect("the built-in scenario is valid")
    }

    /// Parses and validates a scenario file's text.
    pub fn parse(text: &str) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = serde_norway::from_str(text)?;
        if file.cluster.is_empty() {
            return Err(ScenarioError::Invalid(Invalid::new(
                "cluster",
                "must not be empty",
            )));
        }
        if file.region.is_empty() {
            return Err(ScenarioError::Invalid(Invalid::new(
                "region",
                "must not be empty",
            )));
        }
        if !(0.0..=1.0).contains(&file.spot_price_ratio) {
            let rule = "must be between 0 and 1";
            return Err(ScenarioError::Invalid(Invalid::new("spotPriceRatio", rule)));
        }
        let mut names = HashSet::new();
        let mut node_groups = Vec::with_capacity(file.node_groups.len());
        for group in &file.node_groups {
            let invalid = |reason: Invalid| ScenarioError::NodeGroup {
                group: group.name.clone(),
                reason,
            };
            if !names.insert(group.name.as_str()) {
                return Err(invalid(Invalid::value("defined twice")));
            }
            node_groups.push(load_group(&file, group).map_err(invalid)?);
        }
        let mut profiles = HashSet::new();
        for profile in &file.fargate_profiles {
            if !profiles.insert(profile.name.as_str()) {
                return Err(ScenarioError::Invalid(Invalid::value(format!(
                    "Fargate profile {:?} defined twice",
                    profile.name
                ))));
            }
            if profile.selectors.is_empty() || profile.selectors.len() > 5 {
                return Err(ScenarioError::Invalid(Invalid::value(format!(
                    "Fargate profile {:?} needs 1 to 5 selectors",
                    profile.name
                ))));
            }
            const STATUSES: [&str; 5] = [
                "CREATING",
                "ACTIVE",
                "DELETING",
                "CREATE_FAILED",
                "DELETE_FAILED",
            ];
            if !STATUSES.contains(&profile.status.as_str()) {
                return Err(ScenarioError::Invalid(Invalid::value(format!(
                    "Fargate profile {:?}: status {:?} must be one of {}",
                    profile.name,
                    profile.status,
                    STATUSES.join(", ")
                ))));
            }
            if profile.selectors.iter().any(|s| s.namespace.is_empty()) {
                return Err(ScenarioError::Invalid(Invalid::value(format!(
                    "Fargate profile {:?}: every selector needs a namespace",
                    profile.name
                ))));
            }
        }
        let fargate_rates = file.fargate_pricing.unwrap_or_default();
        fargate_rates.check().map_err(ScenarioError::Invalid)?;
        let start = (file.start.as_deref())
            .map(|text| rfc3339("start", text))
            .transpose()
            .map_err(ScenarioError::Invalid)?;
        let instance_events = instance_events(&file, &node_groups, start)?;
        if start.is_none() && node_groups.iter().any(has_timed_reservation) {
            let rule = "must be given with reservations that have a start or an end: their windows are \
                        read against it, never against the machine's clock";
            return Err(ScenarioError::Invalid(Invalid::new("start", rule)));
        }
        Ok(Scenario {
            start,
            instance_events,
            fargate_rates,
            cluster: file.cluster,
            region: file.region,
            seed: file.seed,
            node_groups,
            fargate_profiles: file.fargate_profiles,
        })
    }
}

fn load_group(file: &ScenarioFile, group: &NodeGroupFile) -> Result<SimNodeGroup, Invalid> {
    validate_group(file, group)?;
    let capacity_type = CapacityType::parse(&group.capacity_type)?;
    let taints = taints(group)?;
    let info = group
        .instance_type
        .as_deref()
        .and_then(instance_types::lookup);
    let (capacity, allocatable) = shape(group, info)?;
    let instance_type = group
        .instance_type
        .clone()
        .unwrap_or_else(|| "custom".into());
    let on_demand = info.map(|i| i.price_per_hour);
    let price_per_hour = match (group.price_per_hour, group.capacity_type.as_str()) {
        (Some(price), _) if price >= 0.0 && price.is_finite() => Some(price),
        (Some(price), _) => {
            return Err(Invalid::value(format!(
                "pricePerHour {price} must be a non-negative number"
            )));
        }
        (None, SPOT) => on_demand.map(|p| p * file.spot_price_ratio),
        (None, _) => on_demand,
    };
    let status = status(group)?;
    let arch = info.map_or(Arch::Amd64, |i| i.arch);
    let image = match &group.image {
        Some(image) => {
            image_problem(image).map_or(Ok(image.clone()), |p| Err(Invalid::value(p)))?
        }
        None => default_image(arch.label(), capacity.gpus > 0),
    };
    let reservations = read_reservations(capacity_type, &group.reservations)?;
    let template = template::build(&TemplateSpec {
        target: match reservations.is_empty() {
            true => LaunchTarget::Open,
            false => LaunchTarget::Reserved,
        },
        node_group: &group.name,
        instance_type: &instance_type,
        arch: arch.label(),
        zone: &group.zones[0],
        region: &file.region,
        capacity_type: &group.capacity_type,
        gpu_type: info.and_then(|i| i.gpu_type),
        image: Some(&image),
        labels: &group.labels,
        taints: &taints,
        capacity,
        allocatable,
    });
    let options = group
        .options
        .as_ref()
        .map(OptionsFile::overrides)
        .transpose()?;
    let gpus = InstanceGpus {
        instance_type: &instance_type,
        count: capacity.gpus.try_into().unwrap_or(u32::MAX),
        model: info.and_then(|i| i.gpu_model),
    };
    let node_name = template::name_of(&template);
    let mut resource_slices = dra::template_slices(node_name, &group.dra_drivers, gpus)
        .map_err(|error| Invalid::value(format!("draDrivers: {error}")))?;
    given_slices(node_name, &group.resource_slices, &mut resource_slices)?;
    let debug = format!(
        "sim node group {}: {} {} in {}",
        group.name,
        instance_type,
        group.capacity_type,
        group.zones.join(",")
    );
    Ok(SimNodeGroup {
        spec: Arc::new(NodeGroupSpec {
            id: group.name.clone(),
            min_size: group.min_size,
            max_size: group.max_size,
            debug,
            template: Arc::new(template),
            resource_slices,
            allocatable,
            price_per_hour,
            options,
            zones: group.zones.clone(),
            status,
            image: Some(image),
            capacity_rebalance: capacity_rebalance(group)?,
            node_repair: (group.node_repair_config.as_ref())
                .map(NodeRepairConfigFile::read)
                .transpose()?,
            capacity_type,
            reservations,
        }),
        zones: group.zones.clone(),
        desired_size: group.desired_size,
        provisioning_delay: group.provisioning_delay.unwrap_or(Duration::from_secs(30)),
        deletion_delay: group.deletion_delay.unwrap_or(Duration::from_secs(10)),
        available_capacity: group.available_capacity,
    })
}

/// The scenario's `instanceEvents`, each checked against its groups and its `start` (which they need: their
/// times are read against it, never against the machine's clock).
fn instance_events(
    file: &ScenarioFile,
    groups: &[SimNodeGroup],
    start: Option<SystemTime>,
) -> Result<Vec<InstanceEvent>, ScenarioError> {
    if file.instance_events.is_empty() {
        return Ok(Vec::new());
    }
    let start = start.ok_or_else(|| {
        let rule = "must be given with instanceEvents: their times are read against it";
        ScenarioError::Invalid(Invalid::new("start", rule))
    })?;
    let groups: Vec<GroupFacts<'_>> = (groups.iter())
        .map(|g| GroupFacts {
            name: &g.spec.id,
            desired_size: g.desired_size,
            available_capacity: g.available_capacity,
            running: g.running_at_start(),
            spot: g.is_spot(),
        })
        .collect();
    (file.instance_events.iter().enumerate())
        .map(|(index, event)| {
            (event.read(&groups, start))
                .map_err(|reason| ScenarioError::InstanceEvent { index, reason })
        })
        .collect()
}

/// Whether one of the group's reservations starts or ends at a time (a Capacity Block always does).
fn has_timed_reservation(group: &SimNodeGroup) -> bool {
    (group.spec.reservations.iter()).any(|r| r.start.is_some() || r.end.is_some())
}

/// Managed node groups of Spot capacity have capacity rebalancing on, and only they can have it.
fn capacity_rebalance(group: &NodeGroupFile) -> Result<bool, Invalid> {
    let spot = group.capacity_type == SPOT;
    match group.capacity_rebalance {
        Some(true) if !spot => Err(Invalid::new(
            "capacityRebalance",
            "applies to SPOT node groups only (EC2 recommends rebalancing Spot instances)",
        )),
        Some(on) => Ok(on),
        None => Ok(spot),
    }
}

/// The group's own fields, as EKS checks them: its name, sizes, zones in the region, capacity type, disk
/// and labels.
fn validate_group(file: &ScenarioFile, group: &NodeGroupFile) -> Result<(), Invalid> {
    if !is_label_value(&group.name) || group.name.is_empty() {
        return Err(Invalid::value(
            "name must be 1-63 characters of [A-Za-z0-9._-], starting and ending alphanumeric",
        ));
    }
    if !(0 <= group.min_size
        && group.min_size <= group.desired_size
        && group.desired_size <= group.max_size)
    {
        return Err(Invalid::value(format!(
            "sizes must satisfy 0 <= minSize ({}) <= desiredSize ({}) <= maxSize ({})",
            group.min_size, group.desired_size, group.max_size
        )));
    }
    if group.zones.is_empty() {
        return Err(Invalid::value(
            "zones must list at least one availability zone",
        ));
    }
    if let Some(zone) = group
        .zones
        .iter()
        .find(|z| !z.starts_with(&file.region) || z.len() == file.region.len())
    {
        return Err(Invalid::value(format!(
            "zone {zone:?} is not in region {:?}",
            file.region
        )));
    }
    if group.disk_size == 0 {
        return Err(Invalid::value("diskSize must be at least 1 (GiB)"));
    }
    for (key, value) in &group.labels {
        if !is_label_key(key) || !is_label_value(value) {
            return Err(Invalid::value(format!(
                "label {key:?}={value:?} is not a valid Kubernetes label"
            )));
        }
    }
    Ok(())
}

/// The group's status: one of EKS's, ACTIVE when the scenario does not say. The simulated EKS serves a group
/// whatever its status (so that a client can be tried against each), where the AWS backend serves only
/// ACTIVE and UPDATING ones.
fn status(group: &NodeGroupFile) -> Result<NodeGroupStatus, Invalid> {
    let Some(word) = &group.status else {
        return Ok(NodeGroupStatus::Active);
    };
    match NodeGroupStatus::parse(word) {
        NodeGroupStatus::Unknown(_) => Err(Invalid::value(format!(
            "status {word:?} must be one of {}",
            NodeGroupStatus::KNOWN.map(|s| s.to_string()).join(", ")
        ))),
        status => Ok(status),
    }
}

/// The image of a group whose scenario names none: that of its EKS-optimized AMI type, by architecture and
/// GPU (`ami-eks-amd64-1`, `ami-eks-arm64-1`, `ami-eks-amd64-nvidia-1`). EKS gives every group of one AMI type
/// and release the same AMI, so groups alike in all else stay alike (balancing similar groups compares labels).
fn default_image(arch: &str, gpu: bool) -> String {
    let nvidia = if gpu { "-nvidia" } else { "" };
    format!("ami-eks-{arch}{nvidia}-1")
}

/// Why `image` cannot be a node group's image, if it cannot: it becomes its nodes'
/// `eks.amazonaws.com/nodegroup-image` label, so it must be a non-empty label value (as AMI ids are).
pub(super) fn image_problem(image: &str) -> Option<String> {
    (image.is_empty() || !is_label_value(image)).then(|| {
        format!(
            "image {image:?} must be 1-63 characters of [A-Za-z0-9._-], starting and ending alphanumeric \
             (it is the nodes' {NODE_GROUP_IMAGE_LABEL} label)"
        )
    })
}

/// The group's taints, each with a known effect and a key.
fn taints(group: &NodeGroupFile) -> Result<Vec<Taint>, Invalid> {
    group
        .taints
        .iter()
        .map(|t| {
            let effect = TaintEffect::parse(&t.effect).ok_or_else(|| {
                Invalid::value(format!(
                    "taint {:?}: effect {:?} must be NoSchedule, PreferNoSchedule or NoExecute",
                    t.key, t.effect
                ))
            })?;
            if t.key.is_empty() {
                return Err(Invalid::value("a taint needs a key"));
            }
            Ok(Taint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect,
            })
        })
        .collect()
}

/// A node's capacity and allocatable: from its instance type (with explicit `allocatable` entries over
/// them), or, for a type the simulator does not know, from `allocatable` alone.
fn shape(
    group: &NodeGroupFile,
    info: Option<&instance_types::InstanceTypeInfo>,
) -> Result<(Resources, Resources), Invalid> {
    let disk = group.disk_size << 30;
    let (capacity, allocatable) = match info {
        Some(info) => {
            let capacity = template::node_capacity(
                info.vcpus,
                info.memory_mib,
                info.max_pods(),
                group.disk_size,
                info.gpus,
            );
            apply_explicit((capacity, eks_allocatable(&capacity)), &group.allocatable)?
        }
        None => {
            if let Some(missing) = ["cpu", "memory", "pods"]
                .into_iter()
                .find(|r| !group.allocatable.contains_key(*r))
            {
                return Err(Invalid::value(match &group.instance_type {
                    Some(name) => format!(
                        "instanceType {name:?} is not one the simulator knows: give `allocatable` (cpu, memory, pods)"
                    ),
                    None => format!("without an instanceType, allocatable must give {missing}"),
                }));
            }
            let base = Resources {
                ephemeral_storage_bytes: disk,
                ..Default::default()
            };
            apply_explicit((base, eks_allocatable(&base)), &group.allocatable)?
        }
    };
    if allocatable.cpu_millis == 0 || allocatable.memory_bytes == 0 || allocatable.pods == 0 {
        return Err(Invalid::value(
            "allocatable cpu, memory and pods must be positive",
        ));
    }
    Ok((capacity, allocatable))
}

/// Explicit `allocatable` entries are the node's capacity and allocatable both (the sim's shapes are exact).
fn apply_explicit(
    (mut capacity, mut allocatable): (Resources, Resources),
    explicit: &BTreeMap<String, serde_norway::Value>,
) -> Result<(Resources, Resources), Invalid> {
    for (name, value) in explicit {
        let text = match value {
            serde_norway::Value::String(s) => s.clone(),
            serde_norway::Value::Number(n) => n.to_string(),
            other => {
                return Err(Invalid::value(format!(
                    "allocatable {name}: {other:?} is not a quantity"
                )));
            }
        };
        let quantity: Quantity = text
            .parse()
            .map_err(|e| Invalid::value(format!("allocatable {name}: {e}")))?;
        if quantity.millis() < 0 {
            return Err(Invalid::value(format!(
                "allocatable {name}: {text:?} is negative"
            )));
        }
        let whole = u64::try_from(quantity.value())
            .map_err(|_| Invalid::value(format!("allocatable {name}: {text:?} is too large")))?;
        let field = match name.as_str() {
            "cpu" => {
                let millis = u64::try_from(quantity.millis()).map_err(|_| {
                    Invalid::value(format!("allocatable cpu {text:?} is too large"))
                })?;
                capacity.cpu_millis = millis;
                allocatable.cpu_millis = millis;
                continue;
            }
            "memory" => (&mut capacity.memory_bytes, &mut allocatable.memory_bytes),
            "pods" => (&mut capacity.pods, &mut allocatable.pods),
            "ephemeral-storage" => (
                &mut capacity.ephemeral_storage_bytes,
                &mut allocatable.ephemeral_storage_bytes,
            ),
            template::GPU_RESOURCE => (&mut capacity.gpus, &mut allocatable.gpus),
            other => {
                return Err(Invalid::value(format!(
                    "allocatable {other:?}: the simulator knows cpu, memory, pods, ephemeral-storage and {}",
                    template::GPU_RESOURCE
                )));
            }
        };
        *field.0 = whole;
        *field.1 = whole;
    }
    Ok((capacity, allocatable))
}

/// A Kubernetes label key: an optional DNS-subdomain prefix and `/`, then a name that is a non-empty label value.
fn is_label_key(key: &str) -> bool {
    let (prefix, name) = key
        .rsplit_once('/')
        .map_or((None, key), |(p, n)| (Some(p), n));
    prefix.is_none_or(is_dns_subdomain) && is_label_name(name)
}

/// A Kubernetes label value: empty, or a label key's name.
fn is_label_value(value: &str) -> bool {
    value.is_empty() || is_label_name(value)
}

#[cfg(test)]
mod tests;
