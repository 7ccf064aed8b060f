//! Devices, slices, classes and claims as NVIDIA's DRA driver publishes and its charts ask for them.

use crate::model::{
    AllocatedDevice, Allocation, AllocationMode, AttrValue, ClaimSpec, CounterConsumption,
    CounterSet, Device, DeviceAsk, DeviceClass, DeviceId, DeviceRequest, MatchAttribute, Name,
    Node, NodeScope, PoolRef, QualifiedName, Quantity, ResourceClaim, ResourceSlice,
};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) const NVIDIA: &str = "gpu.nvidia.com";
/// The chart's `gpu.nvidia.com` class selector.
pub(super) const GPU_SELECTOR: &str =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'";
pub(super) const MIG_SELECTOR: &str =
    "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'";

pub(super) fn name(s: &str) -> Name {
    s.into()
}

pub(super) fn q(s: &str) -> Quantity {
    s.parse().unwrap()
}

pub(super) fn qn(domain: &str, id: &str) -> QualifiedName {
    QualifiedName {
        domain: domain.into(),
        id: id.into(),
    }
}

pub(super) fn node(name: &str) -> Node {
    Node {
        name: name.to_string(),
        ready: true,
        ..Node::default()
    }
}

pub(super) fn device(name: &str) -> Device {
    Device {
        name: name.into(),
        attributes: BTreeMap::new(),
        capacity: BTreeMap::new(),
        consumes: Vec::new(),
        taints: Vec::new(),
        scope: None,
        binding_conditions: false,
    }
}

/// A full GPU as the driver publishes it: type, productName, versions, PCIe root, memory.
pub(super) fn gpu(name: &str, product: &str, memory: &str, pcie_root: &str) -> Device {
    let mut d = device(name);
    let nv = |id: &str| qn(NVIDIA, id);
    d.attributes
        .insert(nv("type"), AttrValue::Str("gpu".into()));
    d.attributes
        .insert(nv("productName"), AttrValue::Str(product.into()));
    d.attributes
        .insert(nv("driverVersion"), AttrValue::Version("570.133.20".into()));
    d.attributes.insert(
        nv("cudaComputeCapability"),
        AttrValue::Version("8.6.0".into()),
    );
    d.attributes.insert(
        qn("resource.kubernetes.io", "pcieRoot"),
        AttrValue::Str(pcie_root.into()),
    );
    d.capacity.insert(nv("memory"), q(memory));
    d
}

/// A MIG device: type mig.
pub(super) fn mig(name: &str, profile: &str) -> Device {
    let mut d = device(name);
    d.attributes
        .insert(qn(NVIDIA, "type"), AttrValue::Str("mig".into()));
    d.attributes
        .insert(qn(NVIDIA, "profile"), AttrValue::Str(profile.into()));
    d
}

/// Makes `device` consume `counters` of `set`.
pub(super) fn consuming(mut device: Device, set: &str, counters: &[(&str, &str)]) -> Device {
    device.consumes.push(CounterConsumption {
        counter_set: set.into(),
        counters: counters.iter().map(|(c, v)| (name(c), q(v))).collect(),
    });
    device
}

pub(super) fn counter_set(set: &str, counters: &[(&str, &str)]) -> CounterSet {
    CounterSet {
        name: set.into(),
        counters: counters.iter().map(|(c, v)| (name(c), q(v))).collect(),
    }
}

/// A node-local slice of `driver`'s pool named after the node, generation 0, the pool's only slice.
pub(super) fn local_slice(driver: &str, node: &str, devices: Vec<Device>) -> Arc<ResourceSlice> {
    slice(
        driver,
        node,
        pool(node, 0, 1),
        NodeScope::Node(node.into()),
        devices,
    )
}

/// Generation `generation` of pool `name`, published in `slice_count` slices.
pub(super) fn pool(name: &str, generation: i64, slice_count: i64) -> PoolRef {
    PoolRef {
        name: name.into(),
        generation,
        slice_count,
    }
}

/// A slice of `driver`'s `pool`, named after `slice_name`, the driver and the pool's generation.
pub(super) fn slice(
    driver: &str,
    slice_name: &str,
    pool: PoolRef,
    scope: NodeScope,
    devices: Vec<Device>,
) -> Arc<ResourceSlice> {
    Arc::new(ResourceSlice {
        name: format!("{slice_name}-{driver}-{}", pool.generation).into(),
        driver: driver.into(),
        pool,
        scope,
        devices,
        shared_counters: Vec::new(),
    })
}

pub(super) fn class(name: &str, selectors: &[&str]) -> Arc<DeviceClass> {
    Arc::new(DeviceClass {
        name: name.into(),
        selectors: selectors.iter().map(|s| Name::from(*s)).collect(),
        extended_resource_name: None,
        created: None,
    })
}

/// The chart's classes.
pub(super) fn nvidia_classes() -> Vec<Arc<DeviceClass>> {
    vec![
        class("gpu.nvidia.com", &[GPU_SELECTOR]),
        class("mig.nvidia.com", &[MIG_SELECTOR]),
    ]
}

pub(super) fn ask(class: &str, mode: AllocationMode, selectors: &[&str]) -> DeviceAsk {
    DeviceAsk {
        name: "".into(),
        class: class.into(),
        selectors: selectors.iter().map(|s| Name::from(*s)).collect(),
        mode,
        admin_access: false,
        tolerations: Vec::new(),
    }
}

pub(super) fn exactly(request: &str, ask: DeviceAsk) -> DeviceRequest {
    DeviceRequest {
        name: request.into(),
        first_available: false,
        asks: vec![ask],
    }
}

/// `count` devices of `class` passing `selectors`.
pub(super) fn exact(request: &str, class: &str, count: u32, selectors: &[&str]) -> DeviceRequest {
    exactly(
        request,
        ask(class, AllocationMode::ExactCount(count), selectors),
    )
}

pub(super) fn claim(requests: Vec<DeviceRequest>) -> ClaimSpec {
    ClaimSpec {
        requests,
        constraints: Vec::new(),
    }
}

pub(super) fn match_attribute(requests: &[&str], domain: &str, id: &str) -> MatchAttribute {
    MatchAttribute {
        requests: requests.iter().map(|r| name(r)).collect(),
        attribute: qn(domain, id),
    }
}

pub(super) fn id(driver: &str, pool: &str, device: &str) -> DeviceId {
    DeviceId {
        driver: driver.into(),
        pool: pool.into(),
        device: device.into(),
    }
}

/// A claim allocated elsewhere that holds `devices`.
pub(super) fn allocated_claim(devices: &[DeviceId], admin: bool) -> Arc<ResourceClaim> {
    Arc::new(ResourceClaim {
        namespace: "default".into(),
        name: "held".into(),
        spec: Arc::new(ClaimSpec::default()),
        owner_pod: None,
        allocation: Some(Allocation {
            devices: (devices.iter())
                .map(|d| AllocatedDevice {
                    request: "gpu".into(),
                    device: d.clone(),
                    admin_access: admin,
                })
                .collect(),
            node_selector: None,
        }),
        reserved_for: Vec::new(),
        extended_resources: false,
    })
}

/// The devices of an allocation, by name.
pub(super) fn device_names(allocation: &Allocation) -> Vec<&str> {
    allocation
        .devices
        .iter()
        .map(|d| &*d.device.device)
        .collect()
}
