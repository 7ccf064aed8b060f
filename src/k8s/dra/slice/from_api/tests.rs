//! Slices as drivers publish them (NVIDIA's GPU driver's shapes), and each rule the API server holds them to.

use super::*;
use serde_json::{Value, json};

/// A g5.xlarge's slice: one A10G, with its qualified and unqualified attributes.
fn slice() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "0-gpu.nvidia.com-node-1-x7k2p"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0",
                "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA A10G"},
                    "driverVersion": {"version": "570.133.20"}, "minor": {"int": 0},
                    "resource.kubernetes.io/pcieRoot": {"string": "pci0000:00"}},
                "capacity": {"memory": {"value": "23028Mi"}}}]}})
}

fn refused(value: Value) -> String {
    resource_slice(value).unwrap_err().to_string()
}

#[test]
fn a_slice_reads_with_names_in_its_drivers_domain() {
    let read = resource_slice(slice()).unwrap();
    assert_eq!(&*read.driver, "gpu.nvidia.com");
    assert_eq!(
        read.pool,
        PoolRef {
            name: "node-1".into(),
            generation: 3,
            slice_count: 1
        }
    );
    assert_eq!(read.scope, NodeScope::Node("node-1".into()));
    let device = &read.devices[0];
    let name = |domain: &str, id: &str| crate::model::QualifiedName {
        domain: domain.into(),
        id: id.into(),
    };
    assert_eq!(
        device.attributes[&name("gpu.nvidia.com", "productName")],
        AttrValue::Str("NVIDIA A10G".into())
    );
    assert_eq!(
        device.attributes[&name("resource.kubernetes.io", "pcieRoot")],
        AttrValue::Str("pci0000:00".into())
    );
    assert_eq!(
        device.attributes[&name("gpu.nvidia.com", "driverVersion")],
        AttrValue::Version("570.133.20".into())
    );
    assert_eq!(
        device.capacity[&name("gpu.nvidia.com", "memory")],
        "23028Mi".parse::<Quantity>().unwrap()
    );
    assert!(device.scope.is_none() && !device.binding_conditions);
}

#[test]
fn partitionable_devices_and_per_device_node_selection_read() {
    let read = resource_slice(json!({"kind": "ResourceSlice", "metadata": {"name": "s"},
        "spec": {"driver": "gpu.nvidia.com", "perDeviceNodeSelection": true,
            "pool": {"name": "rack-1", "generation": 0, "resourceSliceCount": 1},
            "sharedCounters": [{"name": "gpu-0-counter-set",
                "counters": {"memory": {"value": "40Gi"}, "multiprocessors": {"value": "98"}}}],
            "devices": [{"name": "gpu-0-mig-1g10gb-19-0", "allNodes": true,
                "consumesCounters": [{"counterSet": "gpu-0-counter-set",
                    "counters": {"memory": {"value": "10Gi"}}}],
                "taints": [{"key": "example.com/unhealthy", "effect": "NoExecute"},
                    {"key": "example.com/new", "value": "x", "effect": "Drain"}],
                "bindingConditions": ["attached"]}]}}))
    .unwrap();
    assert_eq!(read.scope, NodeScope::PerDevice);
    assert_eq!(read.shared_counters[0].counters.len(), 2);
    let device = &read.devices[0];
    assert_eq!(device.scope, Some(NodeScope::All));
    assert_eq!(&*device.consumes[0].counter_set, "gpu-0-counter-set");
    let effects: Vec<_> = device.taints.iter().map(|t| t.effect).collect();
    assert_eq!(
        effects,
        [DeviceTaintEffect::NoExecute, DeviceTaintEffect::Other]
    );
    assert!(device.binding_conditions);
}

#[test]
fn each_rule_names_the_object_and_the_field() {
    let with = |path: &[&str], value: Value| {
        let mut slice = slice();
        let mut at = &mut slice["spec"];
        for key in &path[..path.len() - 1] {
            at = match key.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*key],
            };
        }
        at[path[path.len() - 1]] = value;
        slice
    };
    let at = "ResourceSlice 0-gpu.nvidia.com-node-1-x7k2p";
    for (value, expected) in [
        (
            with(&["allNodes"], json!(true)),
            format!("{at}: spec: nodeName and allNodes are set: exactly one of"),
        ),
        (
            with(&["nodeName"], Value::Null),
            format!(
                "{at}: spec: none of nodeName, nodeSelector, allNodes: true and perDeviceNodeSelection"
            ),
        ),
        (
            with(&["pool", "resourceSliceCount"], json!(0)),
            format!("{at}: spec.pool.resourceSliceCount: 0: must be greater than zero"),
        ),
        (
            with(&["driver"], json!("GPU")),
            format!("{at}: spec.driver: \"GPU\" is not a DNS subdomain"),
        ),
        (
            with(
                &["devices", "0", "attributes", "type"],
                json!({"string": "gpu", "int": 1}),
            ),
            format!("{at}: spec.devices[0].attributes[type]: 2 values: exactly one of"),
        ),
        (
            with(
                &["devices", "0", "attributes", "driverVersion"],
                json!({"version": "570.133"}),
            ),
            format!(
                "{at}: spec.devices[0].attributes[driverVersion].version: \"570.133\" is not a semantic version"
            ),
        ),
        (
            with(&["devices", "0", "attributes", "1st"], json!({"int": 1})),
            format!("{at}: spec.devices[0].attributes[1st]: \"1st\" is not a C identifier"),
        ),
        (
            with(
                &["devices", "0", "capacity", "memory"],
                json!({"value": "23GB"}),
            ),
            format!("{at}: spec.devices[0].capacity[memory].value: invalid quantity \"23GB\""),
        ),
        (
            with(&["devices", "0", "nodeName"], json!("node-1")),
            format!(
                "{at}: spec.devices[0]: nodeName, nodeSelector and allNodes of a device are for slices"
            ),
        ),
        (
            with(&["devices", "0", "taints"], json!([{"key": "k"}])),
            format!("{at}: spec.devices[0].taints[0].effect: missing"),
        ),
        (
            with(&["devices"], json!([{"name": "gpu-0"}, {"name": "gpu-0"}])),
            format!("{at}: spec.devices[1].name: \"gpu-0\" is not unique"),
        ),
        (
            with(
                &["sharedCounters"],
                json!([{"name": "s", "counters": {"memory": {}}}]),
            ),
            format!("{at}: spec.sharedCounters[0].counters[memory].value: missing"),
        ),
        (
            with(
                &["devices"],
                json!(
                    (0..65)
                        .map(|i| json!({"name": format!("d{i}"),
                "taints": [{"key": "k", "effect": "None"}]}))
                        .collect::<Vec<_>>()
                ),
            ),
            format!("{at}: spec.devices: 65 entries, at most 64"),
        ),
    ] {
        let error = refused(value);
        assert!(error.contains(&expected), "{error}\nexpected: {expected}");
    }
}

#[test]
fn a_spec_alone_is_a_slice_of_the_nodes_pool() {
    let spec = slice()["spec"].clone();
    let error = slice_from_spec(spec.clone(), "s", "node-2", "node-2")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("ResourceSlice s: spec.pool: set by the node the slice is published on"),
        "{error}"
    );
    let mut spec = spec;
    let spec_object = spec.as_object_mut().unwrap();
    spec_object.remove("pool");
    spec_object.remove("nodeName");
    let read = slice_from_spec(spec, "node-2-gpu", "node-2", "node-2").unwrap();
    assert_eq!(read.scope, NodeScope::Node("node-2".into()));
    assert_eq!(
        (
            &*read.pool.name,
            read.pool.generation,
            read.pool.slice_count
        ),
        ("node-2", 0, 1)
    );
    assert_eq!(read.devices.len(), 1);
    let error = slice_from_spec(
        json!({"driver": "gpu.nvidia.com", "devices": [{"name": "A"}]}),
        "s",
        "p",
        "n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("ResourceSlice s: spec.devices[0].name: \"A\" is not a DNS label"),
        "{error}"
    );
}
