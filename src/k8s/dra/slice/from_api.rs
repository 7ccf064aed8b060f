//! ResourceSlices into the model: a driver's devices in one pool, the nodes that reach them, the counters
//! partitionable devices share. Checked as the API server checks them; attribute and capacity names
//! qualified with the driver's domain where they have none.

use crate::k8s::dra::api;
use crate::k8s::dra::check::{self, Object};
use crate::k8s::dra::names;
use crate::k8s::object_error::ObjectError;
use crate::model::{
    AttrValue, CounterConsumption, CounterSet, Device, DeviceTaint, DeviceTaintEffect, Name,
    NodeScope, PoolRef, Quantity, ResourceSlice,
};
use std::collections::{BTreeMap, BTreeSet};

/// The API's limits (`resource.k8s.io/v1`): devices of a slice (fewer when any uses taints, counters or
/// list attributes), attributes and capacities of a device, taints of a device, counter sets of a slice
/// and of a device, counters of a set.
const DEVICES_MAX: usize = 128;
const DEVICES_WITH_ADVANCED_MAX: usize = 64;
const ATTRIBUTES_AND_CAPACITIES_MAX: usize = 32;
const TAINTS_MAX: usize = 16;
const COUNTER_SETS_MAX: usize = 8;
const CONSUMED_SETS_MAX: usize = 2;
const COUNTERS_MAX: usize = 32;
const STRING_MAX: usize = 64;

/// A ResourceSlice from its JSON.
pub fn resource_slice(value: serde_json::Value) -> Result<ResourceSlice, ObjectError> {
    let (object, slice): (Object, api::ResourceSlice) =
        check::read("ResourceSlice", check::ObjectScope::Cluster, value)?;
    let name = check::object_name(&object, &slice.metadata)?;
    let Some(spec) = slice.spec else {
        return Err(object.fail("spec", "missing"));
    };
    let Some(pool) = &spec.pool else {
        return Err(object.fail("spec.pool", "missing"));
    };
    names::pool(&pool.name).map_err(|e| object.fail("spec.pool.name", e))?;
    if pool.generation < 0 {
        return Err(object.fail("spec.pool.generation", "must not be negative"));
    }
    if pool.resource_slice_count <= 0 {
        return Err(object.fail(
            "spec.pool.resourceSliceCount",
            format!("{}: must be greater than zero", pool.resource_slice_count),
        ));
    }
    let pool = PoolRef {
        name: pool.name.as_str().into(),
        generation: pool.generation,
        slice_count: pool.resource_slice_count,
    };
    let scope = check::node_scope(
        &object,
        "spec",
        spec.node_name.as_deref(),
        spec.node_selector.as_ref(),
        spec.all_nodes,
        Some(spec.per_device_node_selection),
    )?;
    let Some(scope) = scope else {
        return Err(object.fail(
            "spec",
            "none of nodeName, nodeSelector, allNodes: true and perDeviceNodeSelection: true is set: \
             exactly one must be",
        ));
    };
    contents(&object, name, &spec, pool, scope)
}

/// A ResourceSlice a node will publish, from its `spec` alone (`driver`, `devices`, `sharedCounters`): the
/// slice `name` of pool `pool` (generation 0, one slice: set `pool.slice_count` when the pool has more),
/// local to node `node`. Where a node group says what its new nodes' drivers publish; the pool and the node
/// are the node's, so a spec that names either is refused.
pub fn slice_from_spec(
    spec: serde_json::Value,
    name: &str,
    pool: &str,
    node: &str,
) -> Result<ResourceSlice, ObjectError> {
    let object = Object(format!("ResourceSlice {name}"));
    let spec: api::ResourceSliceSpec =
        serde_json::from_value(spec).map_err(|e| object.fail("spec", e))?;
    names::dns_subdomain(name, 253).map_err(|e| object.fail("metadata.name", e))?;
    names::pool(pool).map_err(|e| object.fail("spec.pool.name", e))?;
    names::dns_subdomain(node, 253).map_err(|e| object.fail("spec.nodeName", e))?;
    let given = [
        ("pool", spec.pool.is_some()),
        ("nodeName", spec.node_name.is_some()),
        ("nodeSelector", spec.node_selector.is_some()),
        ("allNodes", spec.all_nodes.is_some()),
        (
            "perDeviceNodeSelection",
            spec.per_device_node_selection.is_some(),
        ),
    ];
    if let Some((field, _)) = given.iter().find(|(_, set)| *set) {
        return Err(object.fail(
            format!("spec.{field}"),
            "set by the node the slice is published on: leave it out",
        ));
    }
    let pool = PoolRef {
        name: pool.into(),
        generation: 0,
        slice_count: 1,
    };
    contents(
        &object,
        name.into(),
        &spec,
        pool,
        NodeScope::Node(node.into()),
    )
}

/// The driver, devices and counter sets of a slice whose pool and scope are read.
fn contents(
    object: &Object,
    name: Name,
    spec: &api::ResourceSliceSpec,
    pool: PoolRef,
    scope: NodeScope,
) -> Result<ResourceSlice, ObjectError> {
    names::driver(&spec.driver).map_err(|e| object.fail("spec.driver", e))?;
    let driver: Name = spec.driver.as_str().into();
    let advanced = spec.devices.iter().any(|d| {
        !d.taints.is_empty()
            || !d.consumes_counters.is_empty()
            || d.attributes.values().any(|a| list(a).is_some())
    });
    let max = match advanced {
        true => DEVICES_WITH_ADVANCED_MAX,
        false => DEVICES_MAX,
    };
    object.at_most("spec.devices", spec.devices.len(), max)?;
    let per_device = scope == NodeScope::PerDevice;
    let mut seen = BTreeSet::new();
    let mut devices = Vec::with_capacity(spec.devices.len());
    for (i, written) in spec.devices.iter().enumerate() {
        let field = format!("spec.devices[{i}]");
        let device = device(object, &field, written, &driver, per_device)?;
        if !seen.insert(device.name.clone()) {
            return Err(object.fail(
                format!("{field}.name"),
                format!("{:?} is not unique", device.name),
            ));
        }
        devices.push(device);
    }
    let sets = &spec.shared_counters;
    object.at_most("spec.sharedCounters", sets.len(), COUNTER_SETS_MAX)?;
    let mut seen = BTreeSet::new();
    let mut shared_counters = Vec::with_capacity(sets.len());
    for (i, set) in sets.iter().enumerate() {
        let field = format!("spec.sharedCounters[{i}]");
        names::dns_label(&set.name).map_err(|e| object.fail(format!("{field}.name"), e))?;
        if !seen.insert(set.name.as_str()) {
            return Err(object.fail(
                format!("{field}.name"),
                format!("{:?} is not unique", set.name),
            ));
        }
        if set.counters.is_empty() {
            return Err(object.fail(format!("{field}.counters"), "must not be empty"));
        }
        shared_counters.push(CounterSet {
            name: set.name.as_str().into(),
            counters: counters(object, &format!("{field}.counters"), &set.counters)?,
        });
    }
    Ok(ResourceSlice {
        name,
        driver,
        pool,
        scope,
        devices,
        shared_counters,
    })
}

/// A list attribute's value (the alpha DRAListTypeAttributes), which the model does not keep.
fn list(attribute: &api::DeviceAttribute) -> Option<&'static str> {
    let lists = [
        ("ints", attribute.ints.is_some()),
        ("bools", attribute.bools.is_some()),
        ("strings", attribute.strings.is_some()),
        ("versions", attribute.versions.is_some()),
    ];
    lists
        .into_iter()
        .find(|(_, set)| *set)
        .map(|(name, _)| name)
}

fn device(
    object: &Object,
    field: &str,
    device: &api::Device,
    driver: &Name,
    per_device: bool,
) -> Result<Device, ObjectError> {
    names::dns_label(&device.name).map_err(|e| object.fail(format!("{field}.name"), e))?;
    let named = device.attributes.len() + device.capacity.len();
    if named > ATTRIBUTES_AND_CAPACITIES_MAX {
        return Err(object.fail(
            field,
            format!(
                "{named} attributes and capacities, at most {ATTRIBUTES_AND_CAPACITIES_MAX} together"
            ),
        ));
    }
    let mut attributes = BTreeMap::new();
    for (key, written) in &device.attributes {
        let at = format!("{field}.attributes[{key}]");
        let name = names::qualified(key, driver).map_err(|e| object.fail(&at, e))?;
        // List attributes (alpha) are not kept: a selector that reads one finds no such attribute.
        if let Some(value) = attribute(object, &at, written)? {
            attributes.insert(name, value);
        }
    }
    let mut capacity = BTreeMap::new();
    for (key, written) in &device.capacity {
        let at = format!("{field}.capacity[{key}]");
        let name = names::qualified(key, driver).map_err(|e| object.fail(&at, e))?;
        let value = check::quantity(object, &format!("{at}.value"), written.value.as_ref())?;
        capacity.insert(name, value);
    }
    let at = format!("{field}.consumesCounters");
    object.at_most(&at, device.consumes_counters.len(), CONSUMED_SETS_MAX)?;
    let mut seen = BTreeSet::new();
    let mut consumes = Vec::with_capacity(device.consumes_counters.len());
    for (i, consumption) in device.consumes_counters.iter().enumerate() {
        let at = format!("{at}[{i}]");
        let set = &consumption.counter_set;
        names::dns_label(set).map_err(|e| object.fail(format!("{at}.counterSet"), e))?;
        if !seen.insert(set.as_str()) {
            return Err(object.fail(
                format!("{at}.counterSet"),
                format!("{set:?} is consumed twice: one entry per counter set"),
            ));
        }
        consumes.push(CounterConsumption {
            counter_set: set.as_str().into(),
            counters: counters(object, &format!("{at}.counters"), &consumption.counters)?,
        });
    }
    let at = format!("{field}.taints");
    object.at_most(&at, device.taints.len(), TAINTS_MAX)?;
    let taints = (device.taints.iter().enumerate())
        .map(|(i, t)| taint(object, &format!("{at}[{i}]"), t))
        .collect::<Result<_, _>>()?;
    let scope = check::node_scope(
        object,
        field,
        device.node_name.as_deref(),
        device.node_selector.as_ref(),
        device.all_nodes,
        None,
    )?;
    match (per_device, &scope) {
        (true, None) => {
            return Err(object.fail(
                field,
                "the slice has perDeviceNodeSelection: each device sets exactly one of nodeName, \
                 nodeSelector and allNodes: true",
            ));
        }
        (false, Some(_)) => {
            return Err(object.fail(
                field,
                "nodeName, nodeSelector and allNodes of a device are for slices with \
                 perDeviceNodeSelection: true",
            ));
        }
        _ => {}
    }
    Ok(Device {
        name: device.name.as_str().into(),
        attributes,
        capacity,
        consumes,
        taints,
        scope,
        binding_conditions: !device.binding_conditions.is_empty(),
    })
}

/// One attribute: exactly one value; `None` for a list (not kept).
fn attribute(
    object: &Object,
    field: &str,
    attribute: &api::DeviceAttribute,
) -> Result<Option<AttrValue>, ObjectError> {
    let scalars = [
        attribute.int.is_some(),
        attribute.bool.is_some(),
        attribute.string.is_some(),
        attribute.version.is_some(),
    ];
    let set = scalars.iter().filter(|s| **s).count() + usize::from(list(attribute).is_some());
    if set != 1 {
        return Err(object.fail(
            field,
            format!("{set} values: exactly one of int, bool, string and version must be set"),
        ));
    }
    let long = |text: &str| match text.chars().count() > STRING_MAX {
        true => Err(object.fail(field, format!("longer than {STRING_MAX} characters"))),
        false => Ok(()),
    };
    Ok(match attribute {
        api::DeviceAttribute { int: Some(n), .. } => Some(AttrValue::Int(*n)),
        api::DeviceAttribute { bool: Some(b), .. } => Some(AttrValue::Bool(*b)),
        api::DeviceAttribute {
            string: Some(text), ..
        } => {
            long(text)?;
            Some(AttrValue::Str(text.as_str().into()))
        }
        api::DeviceAttribute {
            version: Some(text),
            ..
        } => {
            names::version(text).map_err(|e| object.fail(format!("{field}.version"), e))?;
            Some(AttrValue::Version(text.as_str().into()))
        }
        _ => None,
    })
}

/// A counter set's counters, or a device's consumption of them: DNS-label names, at most 32, each with a
/// value.
fn counters(
    object: &Object,
    field: &str,
    written: &BTreeMap<String, api::Counter>,
) -> Result<BTreeMap<Name, Quantity>, ObjectError> {
    object.at_most(field, written.len(), COUNTERS_MAX)?;
    let mut counters = BTreeMap::new();
    for (name, counter) in written {
        let at = format!("{field}[{name}]");
        names::dns_label(name).map_err(|e| object.fail(&at, e))?;
        let value = check::quantity(object, &format!("{at}.value"), counter.value.as_ref())?;
        counters.insert(Name::from(name.as_str()), value);
    }
    Ok(counters)
}

/// A device taint: a label key and value, and an effect (one the allocator does not know is kept as
/// `Other`, which it ignores, as upstream does).
fn taint(
    object: &Object,
    field: &str,
    taint: &api::DeviceTaint,
) -> Result<DeviceTaint, ObjectError> {
    names::label_key(&taint.key).map_err(|e| object.fail(format!("{field}.key"), e))?;
    let value = taint.value.as_deref().unwrap_or_default();
    names::label_value(value).map_err(|e| object.fail(format!("{field}.value"), e))?;
    let effect = match taint.effect.as_deref().unwrap_or_default() {
        "" => return Err(object.fail(format!("{field}.effect"), "missing")),
        "None" => DeviceTaintEffect::None,
        "NoSchedule" => DeviceTaintEffect::NoSchedule,
        "NoExecute" => DeviceTaintEffect::NoExecute,
        _ => DeviceTaintEffect::Other,
    };
    Ok(DeviceTaint {
        key: taint.key.as_str().into(),
        value: value.into(),
        effect,
    })
}

#[cfg(test)]
mod tests;
