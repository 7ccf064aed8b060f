//! ResourceSlices (`resource.k8s.io/v1`) as Kubernetes' protobuf, k8s-pb's messages, both ways: how a
//! node group's template slices cross the wire (as `ResourceSlice.Marshal()` bytes, which cluster-autoscaler
//! decodes with the API's own types), written by the provider and read by the companion.
//!
//! The model keeps what allocation reads; writing it back loses what it does not keep (a device's binding
//! condition names, an effect of a device taint the model does not know, which the allocator ignores and is
//! written as `None`).

use crate::k8s::object_error::{ObjectError, invalid};
use crate::k8s::quantity;
use crate::model::{
    AttrValue, CounterConsumption, CounterSet, Device, DeviceTaint, DeviceTaintEffect, Invalid,
    Name, NodeScope, NodeSelector, NodeSelectorTerm, Operator, PoolRef, QualifiedName, Quantity,
    Requirement, ResourceSlice,
};
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::resource::v1 as pb;
use k8s_pb::apimachinery::pkg::api::resource::Quantity as PbQuantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;
use std::collections::BTreeMap;

/// A slice as `ResourceSlice.Marshal()` bytes.
pub fn resource_slice_to_pb_bytes(slice: &ResourceSlice) -> Vec<u8> {
    resource_slice_to_pb(slice).encode_to_vec()
}

/// A slice from `ResourceSlice.Marshal()` bytes.
pub fn resource_slice_from_pb_bytes(bytes: &[u8]) -> Result<ResourceSlice, ObjectError> {
    let slice = pb::ResourceSlice::decode(bytes)
        .map_err(|error| invalid("ResourceSlice", format!("not a ResourceSlice: {error}")))?;
    resource_slice_from_pb(&slice)
}

/// The API's object of a slice.
pub fn resource_slice_to_pb(slice: &ResourceSlice) -> pb::ResourceSlice {
    let mut spec = pb::ResourceSliceSpec {
        driver: Some(slice.driver.to_string()),
        pool: Some(pb::ResourcePool {
            name: Some(slice.pool.name.to_string()),
            generation: Some(slice.pool.generation),
            resource_slice_count: Some(slice.pool.slice_count),
        }),
        devices: (slice.devices.iter())
            .map(|device| device_to_pb(&slice.driver, device))
            .collect(),
        shared_counters: (slice.shared_counters.iter())
            .map(|set| pb::CounterSet {
                name: Some(set.name.to_string()),
                counters: counters_to_pb(&set.counters),
            })
            .collect(),
        ..Default::default()
    };
    match &slice.scope {
        NodeScope::Node(name) => spec.node_name = Some(name.to_string()),
        NodeScope::Selector(selector) => spec.node_selector = Some(selector_to_pb(selector)),
        NodeScope::All => spec.all_nodes = Some(true),
        NodeScope::PerDevice => spec.per_device_node_selection = Some(true),
    }
    pb::ResourceSlice {
        metadata: Some(ObjectMeta {
            name: Some(slice.name.to_string()),
            ..Default::default()
        }),
        spec: Some(spec),
    }
}

fn device_to_pb(driver: &str, device: &Device) -> pb::Device {
    let mut out = pb::Device {
        name: Some(device.name.to_string()),
        attributes: (device.attributes.iter())
            .map(|(name, value)| {
                let mut attribute = pb::DeviceAttribute::default();
                match value {
                    AttrValue::Int(i) => attribute.int = Some(*i),
                    AttrValue::Bool(b) => attribute.bool = Some(*b),
                    AttrValue::Str(s) => attribute.string = Some(s.to_string()),
                    AttrValue::Version(v) => attribute.version = Some(v.to_string()),
                }
                (qualified_to_pb(driver, name), attribute)
            })
            .collect(),
        capacity: (device.capacity.iter())
            .map(|(name, value)| {
                let capacity = pb::DeviceCapacity {
                    value: Some(quantity_to_pb(*value)),
                    request_policy: None,
                };
                (qualified_to_pb(driver, name), capacity)
            })
            .collect(),
        consumes_counters: (device.consumes.iter())
            .map(|consumption| pb::DeviceCounterConsumption {
                counter_set: Some(consumption.counter_set.to_string()),
                counters: counters_to_pb(&consumption.counters),
            })
            .collect(),
        taints: (device.taints.iter())
            .map(|taint| pb::DeviceTaint {
                key: Some(taint.key.to_string()),
                value: Some(taint.value.to_string()).filter(|v| !v.is_empty()),
                effect: Some(effect_name(taint.effect).into()),
                time_added: None,
            })
            .collect(),
        // The model keeps only that there are some: one stands for them all.
        binding_conditions: if device.binding_conditions {
            vec!["BindingConditions".into()]
        } else {
            Vec::new()
        },
        ..Default::default()
    };
    match &device.scope {
        Some(NodeScope::Node(name)) => out.node_name = Some(name.to_string()),
        Some(NodeScope::Selector(selector)) => out.node_selector = Some(selector_to_pb(selector)),
        Some(NodeScope::All) => out.all_nodes = Some(true),
        // A device cannot delegate its node selection further.
        Some(NodeScope::PerDevice) | None => {}
    }
    out
}

/// A name in the driver's own domain written bare, as drivers write it; any other with its domain.
fn qualified_to_pb(driver: &str, name: &QualifiedName) -> String {
    if &*name.domain == driver {
        name.id.to_string()
    } else {
        format!("{}/{}", name.domain, name.id)
    }
}

fn quantity_to_pb(value: Quantity) -> PbQuantity {
    PbQuantity {
        string: Some(quantity::quantity(value)),
    }
}

fn counters_to_pb(counters: &BTreeMap<Name, Quantity>) -> BTreeMap<String, pb::Counter> {
    (counters.iter())
        .map(|(name, value)| {
            let counter = pb::Counter {
                value: Some(quantity_to_pb(*value)),
            };
            (name.to_string(), counter)
        })
        .collect()
}

fn effect_name(effect: DeviceTaintEffect) -> &'static str {
    match effect {
        DeviceTaintEffect::NoSchedule => "NoSchedule",
        DeviceTaintEffect::NoExecute => "NoExecute",
        DeviceTaintEffect::None | DeviceTaintEffect::Other => "None",
    }
}

fn selector_to_pb(selector: &NodeSelector) -> core::NodeSelector {
    let requirements = |requirements: &[Requirement]| {
        (requirements.iter())
            .map(|r| core::NodeSelectorRequirement {
                key: Some(r.key.clone()),
                operator: Some(r.operator.as_str().into()),
                values: r.values.clone(),
            })
            .collect()
    };
    core::NodeSelector {
        node_selector_terms: (selector.terms.iter())
            .map(|term| core::NodeSelectorTerm {
                match_expressions: requirements(&term.expressions),
                match_fields: requirements(&term.fields),
            })
            .collect(),
    }
}

/// A slice of the API in the model, checked as the API server checks what the model reads: a driver, a
/// pool, exactly one node selection, one value per attribute, quantities that parse.
pub fn resource_slice_from_pb(slice: &pb::ResourceSlice) -> Result<ResourceSlice, ObjectError> {
    let name = (slice.metadata.as_ref())
        .and_then(|meta| meta.name.as_deref())
        .unwrap_or_default();
    let object = format!("ResourceSlice {name:?}");
    let bad = |reason: Invalid| invalid(&object, reason.to_string());
    let spec = (slice.spec.as_ref()).ok_or_else(|| bad(Invalid::value("no spec")))?;
    let driver: Name = match spec.driver.as_deref() {
        Some(driver) if !driver.is_empty() => driver.into(),
        _ => return Err(bad(Invalid::value("spec.driver is empty"))),
    };
    let pool = spec
        .pool
        .as_ref()
        .ok_or_else(|| bad(Invalid::value("no spec.pool")))?;
    let pool = PoolRef {
        name: match pool.name.as_deref() {
            Some(pool) if !pool.is_empty() => pool.into(),
            _ => return Err(bad(Invalid::value("spec.pool.name is empty"))),
        },
        generation: pool.generation.unwrap_or_default(),
        slice_count: match pool.resource_slice_count {
            Some(count) if count > 0 => count,
            count => {
                let count = count.unwrap_or_default();
                let rule = format!("spec.pool.resourceSliceCount must be positive, not {count}");
                return Err(bad(Invalid::value(rule)));
            }
        },
    };
    let per_device = spec.per_device_node_selection == Some(true);
    let scope = scope_from_pb(
        spec.node_name.as_deref(),
        spec.node_selector.as_ref(),
        spec.all_nodes == Some(true),
        per_device,
    )
    .map_err(|reason| bad(reason.under("spec")))?
    .ok_or_else(|| {
        bad(Invalid::new(
            "spec",
            "one of nodeName, nodeSelector, allNodes or perDeviceNodeSelection must be set",
        ))
    })?;
    let devices = (spec.devices.iter())
        .map(|device| device_from_pb(&driver, device, per_device))
        .collect::<Result<_, Invalid>>()
        .map_err(bad)?;
    let shared_counters = (spec.shared_counters.iter())
        .map(|set| {
            let name = set.name.as_deref().unwrap_or_default();
            Ok(CounterSet {
                name: name.into(),
                counters: counters_from_pb(&set.counters)
                    .map_err(|reason| reason.under(&format!("sharedCounters {name:?}")))?,
            })
        })
        .collect::<Result<_, Invalid>>()
        .map_err(bad)?;
    Ok(ResourceSlice {
        name: name.into(),
        driver,
        pool,
        scope,
        devices,
        shared_counters,
    })
}

/// The one node selection set; `None` when none is.
fn scope_from_pb(
    node_name: Option<&str>,
    selector: Option<&core::NodeSelector>,
    all_nodes: bool,
    per_device: bool,
) -> Result<Option<NodeScope>, Invalid> {
    let node_name = node_name.filter(|name| !name.is_empty());
    let set = [
        node_name.is_some(),
        selector.is_some(),
        all_nodes,
        per_device,
    ];
    if set.iter().filter(|set| **set).count() > 1 {
        return Err(Invalid::value(
            "only one of nodeName, nodeSelector, allNodes and perDeviceNodeSelection may be set",
        ));
    }
    Ok(if let Some(name) = node_name {
        Some(NodeScope::Node(name.into()))
    } else if let Some(selector) = selector {
        Some(NodeScope::Selector(selector_from_pb(selector)?))
    } else if all_nodes {
        Some(NodeScope::All)
    } else if per_device {
        Some(NodeScope::PerDevice)
    } else {
        None
    })
}

fn device_from_pb(driver: &Name, device: &pb::Device, per_device: bool) -> Result<Device, Invalid> {
    let name = device.name.as_deref().unwrap_or_default();
    let device_at = format!("device {name:?}");
    let at = |reason: Invalid| reason.under(&device_at);
    if name.is_empty() {
        return Err(Invalid::value("a device has no name"));
    }
    let mut attributes = BTreeMap::new();
    for (key, attribute) in &device.attributes {
        let values = [
            attribute.int.map(AttrValue::Int),
            attribute.bool.map(AttrValue::Bool),
            (attribute.string.as_deref()).map(|s| AttrValue::Str(s.into())),
            (attribute.version.as_deref()).map(|v| AttrValue::Version(v.into())),
        ];
        let mut values = values.into_iter().flatten();
        let (Some(value), None) = (values.next(), values.next()) else {
            let rule = format!("attribute {key:?} must have exactly one value");
            return Err(at(Invalid::value(rule)));
        };
        attributes.insert(qualified_from_pb(driver, key).map_err(at)?, value);
    }
    let mut capacity = BTreeMap::new();
    for (key, value) in &device.capacity {
        let value = quantity_from_pb(value.value.as_ref())
            .map_err(|reason| at(reason.under(&format!("capacity {key:?}"))))?;
        capacity.insert(qualified_from_pb(driver, key).map_err(at)?, value);
    }
    let consumes = (device.consumes_counters.iter())
        .map(|consumption| {
            let set = consumption.counter_set.as_deref().unwrap_or_default();
            Ok(CounterConsumption {
                counter_set: set.into(),
                counters: counters_from_pb(&consumption.counters)
                    .map_err(|reason| at(reason.under(&format!("consumesCounters {set:?}"))))?,
            })
        })
        .collect::<Result<_, Invalid>>()?;
    let taints = (device.taints.iter())
        .map(|taint| DeviceTaint {
            key: taint.key.as_deref().unwrap_or_default().into(),
            value: taint.value.as_deref().unwrap_or_default().into(),
            effect: match taint.effect.as_deref() {
                Some("NoSchedule") => DeviceTaintEffect::NoSchedule,
                Some("NoExecute") => DeviceTaintEffect::NoExecute,
                Some("None") => DeviceTaintEffect::None,
                _ => DeviceTaintEffect::Other,
            },
        })
        .collect();
    let scope = scope_from_pb(
        device.node_name.as_deref(),
        device.node_selector.as_ref(),
        device.all_nodes == Some(true),
        false,
    )
    .map_err(at)?;
    if scope.is_some() != per_device {
        return Err(at(Invalid::value(if per_device {
            "the slice has perDeviceNodeSelection: the device must set nodeName, nodeSelector or allNodes"
        } else {
            "only the devices of a slice with perDeviceNodeSelection set their node selection"
        })));
    }
    Ok(Device {
        name: name.into(),
        attributes,
        capacity,
        consumes,
        taints,
        scope,
        binding_conditions: !device.binding_conditions.is_empty(),
    })
}

/// `domain/id`, or a bare id in the driver's domain.
fn qualified_from_pb(driver: &Name, key: &str) -> Result<QualifiedName, Invalid> {
    let (domain, id) = match key.split_once('/') {
        Some((domain, id)) => (Name::from(domain), id),
        None => (driver.clone(), key),
    };
    if domain.is_empty() || id.is_empty() || id.contains('/') {
        return Err(Invalid::value(format!(
            "{key:?} is not a qualified name (an identifier, or domain/identifier)"
        )));
    }
    Ok(QualifiedName {
        domain,
        id: id.into(),
    })
}

fn quantity_from_pb(value: Option<&PbQuantity>) -> Result<Quantity, Invalid> {
    let text = value.and_then(|q| q.string.as_deref()).unwrap_or_default();
    text.parse()
        .map_err(|error: crate::model::QuantityError| Invalid::value(error.to_string()))
}

fn counters_from_pb(
    counters: &BTreeMap<String, pb::Counter>,
) -> Result<BTreeMap<Name, Quantity>, Invalid> {
    (counters.iter())
        .map(|(name, counter)| {
            let value = quantity_from_pb(counter.value.as_ref())
                .map_err(|reason| reason.under(&format!("counter {name:?}")))?;
            Ok((Name::from(name.as_str()), value))
        })
        .collect()
}

fn selector_from_pb(selector: &core::NodeSelector) -> Result<NodeSelector, Invalid> {
    let requirements = |requirements: &[core::NodeSelectorRequirement]| {
        (requirements.iter())
            .map(|r| {
                let operator = r.operator.as_deref().unwrap_or_default();
                Ok(Requirement {
                    key: r.key.clone().unwrap_or_default(),
                    operator: Operator::parse(operator).ok_or_else(|| {
                        let rule = format!("unknown operator {operator:?}");
                        Invalid::new("nodeSelector", rule)
                    })?,
                    values: r.values.clone(),
                })
            })
            .collect::<Result<Vec<_>, Invalid>>()
    };
    let terms = (selector.node_selector_terms.iter())
        .map(|term| {
            Ok(NodeSelectorTerm {
                expressions: requirements(&term.match_expressions)?,
                fields: requirements(&term.match_fields)?,
            })
        })
        .collect::<Result<_, Invalid>>()?;
    Ok(NodeSelector { terms })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qualified(domain: &str, id: &str) -> QualifiedName {
        QualifiedName {
            domain: domain.into(),
            id: id.into(),
        }
    }

    fn quantity(text: &str) -> Quantity {
        text.parse().unwrap()
    }

    /// A slice using every field the model keeps.
    fn everything() -> ResourceSlice {
        let selector = NodeSelector {
            terms: vec![NodeSelectorTerm {
                expressions: vec![Requirement {
                    key: "topology.kubernetes.io/zone".into(),
                    operator: Operator::In,
                    values: vec!["us-east-1a".into()],
                }],
                fields: vec![Requirement {
                    key: "metadata.name".into(),
                    operator: Operator::NotIn,
                    values: vec!["n1".into()],
                }],
            }],
        };
        let device = |name: &str, scope: NodeScope| Device {
            name: name.into(),
            attributes: BTreeMap::from([
                (
                    qualified("gpu.nvidia.com", "type"),
                    AttrValue::Str("gpu".into()),
                ),
                (qualified("gpu.nvidia.com", "index"), AttrValue::Int(-3)),
                (qualified("gpu.nvidia.com", "shared"), AttrValue::Bool(true)),
                (
                    qualified("gpu.nvidia.com", "driverVersion"),
                    AttrValue::Version("570.133.20".into()),
                ),
                (
                    qualified("resource.kubernetes.io", "pcieRoot"),
                    AttrValue::Str("pci0000:00".into()),
                ),
            ]),
            capacity: BTreeMap::from([
                (qualified("gpu.nvidia.com", "memory"), quantity("23028Mi")),
                (qualified("example.com", "bandwidth"), quantity("1500m")),
            ]),
            consumes: vec![CounterConsumption {
                counter_set: "gpu-0-counter-set".into(),
                counters: BTreeMap::from([("memory".into(), quantity("10Gi"))]),
            }],
            taints: vec![
                DeviceTaint {
                    key: "unhealthy".into(),
                    value: "".into(),
                    effect: DeviceTaintEffect::NoExecute,
                },
                DeviceTaint {
                    key: "maintenance".into(),
                    value: "soon".into(),
                    effect: DeviceTaintEffect::NoSchedule,
                },
            ],
            scope: Some(scope),
            binding_conditions: true,
        };
        ResourceSlice {
            name: "n1-gpu.nvidia.com".into(),
            driver: "gpu.nvidia.com".into(),
            pool: PoolRef {
                name: "n1".into(),
                generation: 3,
                slice_count: 2,
            },
            scope: NodeScope::PerDevice,
            devices: vec![
                device("gpu-0", NodeScope::Node("n1".into())),
                device("gpu-1", NodeScope::Selector(selector)),
                device("gpu-2", NodeScope::All),
            ],
            shared_counters: vec![CounterSet {
                name: "gpu-0-counter-set".into(),
                counters: BTreeMap::from([
                    ("memory".into(), quantity("40Gi")),
                    ("multiprocessors".into(), quantity("98")),
                ]),
            }],
        }
    }

    #[test]
    fn slices_read_back_as_written() {
        let slice = everything();
        let bytes = resource_slice_to_pb_bytes(&slice);
        assert_eq!(resource_slice_from_pb_bytes(&bytes).unwrap(), slice);
        for scope in [NodeScope::Node("n1".into()), NodeScope::All] {
            let mut slice = everything();
            slice.scope = scope;
            for device in &mut slice.devices {
                device.scope = None;
            }
            let bytes = resource_slice_to_pb_bytes(&slice);
            assert_eq!(resource_slice_from_pb_bytes(&bytes).unwrap(), slice);
        }
    }

    #[test]
    fn names_of_the_drivers_domain_are_written_bare_as_drivers_write_them() {
        let written = resource_slice_to_pb(&everything());
        let spec = written.spec.unwrap();
        let device = &spec.devices[0];
        let keys: Vec<&str> = device.attributes.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "driverVersion",
                "index",
                "resource.kubernetes.io/pcieRoot",
                "shared",
                "type"
            ]
        );
        assert_eq!(
            device.capacity["memory"]
                .value
                .as_ref()
                .unwrap()
                .string
                .as_deref(),
            Some("23028Mi")
        );
        assert_eq!(spec.per_device_node_selection, Some(true));
        assert_eq!(spec.pool.unwrap().resource_slice_count, Some(2));
    }

    #[test]
    fn slices_the_api_would_refuse_name_the_problem() {
        let error = |edit: fn(&mut pb::ResourceSliceSpec)| {
            let mut slice = everything();
            slice.scope = NodeScope::Node("n1".into());
            for device in &mut slice.devices {
                device.scope = None;
            }
            let mut written = resource_slice_to_pb(&slice);
            edit(written.spec.as_mut().unwrap());
            resource_slice_from_pb(&written).unwrap_err().to_string()
        };
        assert_eq!(
            error(|spec| spec.all_nodes = Some(true)),
            "ResourceSlice \"n1-gpu.nvidia.com\": spec: only one of nodeName, nodeSelector, allNodes \
             and perDeviceNodeSelection may be set"
        );
        assert_eq!(
            error(|spec| spec.node_name = None),
            "ResourceSlice \"n1-gpu.nvidia.com\": spec: one of nodeName, nodeSelector, allNodes or \
             perDeviceNodeSelection must be set"
        );
        assert_eq!(
            error(|spec| spec.pool.as_mut().unwrap().resource_slice_count = Some(0)),
            "ResourceSlice \"n1-gpu.nvidia.com\": spec.pool.resourceSliceCount must be positive, not 0"
        );
        assert_eq!(
            error(|spec| spec.devices[1].attributes.get_mut("type").unwrap().int = Some(1)),
            "ResourceSlice \"n1-gpu.nvidia.com\": device \"gpu-1\": attribute \"type\" must have \
             exactly one value"
        );
        assert_eq!(
            error(|spec| {
                let memory = spec.devices[0].capacity.get_mut("memory").unwrap();
                memory.value.as_mut().unwrap().string = Some("lots".into());
            }),
            "ResourceSlice \"n1-gpu.nvidia.com\": device \"gpu-0\": capacity \"memory\": invalid \
             quantity \"lots\": expected a number with an optional suffix such as 500m, 2, 1.5Gi or 1e3"
        );
        assert_eq!(
            error(|spec| spec.devices[0].all_nodes = Some(true)),
            "ResourceSlice \"n1-gpu.nvidia.com\": device \"gpu-0\": only the devices of a slice with \
             perDeviceNodeSelection set their node selection"
        );
        assert!(
            resource_slice_from_pb_bytes(b"\xff\xff")
                .unwrap_err()
                .to_string()
                .starts_with("ResourceSlice: not a ResourceSlice: ")
        );
    }
}
