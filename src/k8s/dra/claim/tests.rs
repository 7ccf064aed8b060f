//! Claims and templates as kubectl prints them, and each rule the API server holds them to.

use super::*;
use crate::model::NodeSelector;
use serde_json::{Value, json};

fn claim(spec: Value) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "web"}, "spec": spec})
}

fn refused(value: Value) -> String {
    resource_claim(value).unwrap_err().to_string()
}

#[test]
fn a_claim_reads_with_its_defaults_allocation_and_reservations() {
    let read = resource_claim(json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "p-gpu-x7k2p", "namespace": "web",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "pod-uid",
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"devices": {
            "requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                    "selectors": [{"cel": {"expression": "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}],
                    "tolerations": [{"key": "example.com/broken", "operator": "Exists", "effect": "NoSchedule"}]}},
                {"name": "all", "exactly": {"deviceClassName": "nic", "allocationMode": "All"}},
                {"name": "any", "firstAvailable": [
                    {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 2},
                    {"name": "small", "deviceClassName": "mig.nvidia.com"}]}],
            "constraints": [{"requests": ["gpu", "any/big"],
                "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
            "config": [{"opaque": {"driver": "gpu.nvidia.com", "parameters": {}}}]}},
        "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "node-1", "device": "gpu-0"},
                {"request": "any/small", "driver": "gpu.nvidia.com", "pool": "node-1",
                 "device": "gpu-1-mig-1g10gb-19-0", "adminAccess": true}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"},
                {"apiGroup": "example.com", "resource": "jobs", "name": "j", "uid": "job-uid"}]}}))
    .unwrap();
    assert_eq!((&*read.namespace, &*read.name), ("web", "p-gpu-x7k2p"));
    assert_eq!(read.owner_pod.as_deref(), Some("pod-uid"));
    let requests = &read.spec.requests;
    assert_eq!(
        requests[0].asks[0].mode,
        AllocationMode::ExactCount(1),
        "count defaults to 1"
    );
    assert_eq!(&*requests[0].asks[0].class, "gpu.nvidia.com");
    assert_eq!(requests[0].asks[0].selectors.len(), 1);
    let toleration = &requests[0].asks[0].tolerations[0];
    assert!(toleration.exists && toleration.effect == Some(DeviceTaintEffect::NoSchedule));
    assert_eq!(requests[1].asks[0].mode, AllocationMode::All);
    assert!(requests[2].first_available && !requests[0].first_available);
    let asks: Vec<_> = requests[2]
        .asks
        .iter()
        .map(|a| (&*a.name, a.mode))
        .collect();
    assert_eq!(
        asks,
        [
            ("big", AllocationMode::ExactCount(2)),
            ("small", AllocationMode::ExactCount(1))
        ]
    );
    assert_eq!(read.spec.constraints[0].requests.len(), 2);
    assert_eq!(&*read.spec.constraints[0].attribute.id, "pcieRoot");
    let allocation = read.allocation.unwrap();
    assert_eq!(&*allocation.devices[0].device.device, "gpu-0");
    assert!(allocation.devices[1].admin_access && !allocation.devices[0].admin_access);
    assert!(
        matches!(allocation.node_selector, Some(NodeSelector { ref terms }) if terms.len() == 1)
    );
    assert_eq!(read.reserved_for, [Name::from("pod-uid")], "pods only");
}

/// KEP-5004: the claim kube-scheduler makes for a pod's extended resources says so by its annotation.
#[test]
fn the_claim_made_for_extended_resources_is_known_by_its_annotation() {
    let spec = json!({"devices": {"requests": [{"name": "container-0-request-0", "exactly": {
        "deviceClassName": "gpu.nvidia.com"}}]}});
    let mut made = claim(spec.clone());
    made["metadata"]["annotations"] =
        json!({"resource.kubernetes.io/extended-resource-claim": "true"});
    assert!(resource_claim(made).unwrap().extended_resources);
    assert!(
        !resource_claim(claim(spec.clone()))
            .unwrap()
            .extended_resources
    );
    let mut other = claim(spec);
    other["metadata"]["annotations"] =
        json!({"resource.kubernetes.io/extended-resource-claim": "false", "note": "x"});
    assert!(!resource_claim(other).unwrap().extended_resources);
}

#[test]
fn a_template_is_its_claims_spec() {
    let template = claim_template(json!({"apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu"},
        "spec": {"metadata": {"labels": {"a": "b"}},
                 "spec": {"devices": {"requests": [{"name": "gpu",
                     "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}}))
    .unwrap();
    assert_eq!(
        (&*template.namespace, &*template.name),
        ("default", "one-gpu")
    );
    assert_eq!(template.spec.requests.len(), 1);
    let error = claim_template(json!({"kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "web"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu"}]}}}}))
    .unwrap_err()
    .to_string();
    assert!(
        error.contains(
            "ResourceClaimTemplate web/t: spec.spec.devices.requests[0]: neither exactly"
        ),
        "{error}"
    );
}

#[test]
fn each_rule_names_the_object_and_the_field() {
    let exactly = |fields: Value| {
        let mut request = json!({"deviceClassName": "gpu.nvidia.com"});
        request
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        claim(json!({"devices": {"requests": [{"name": "gpu", "exactly": request}]}}))
    };
    let at = "ResourceClaim web/gpu: spec.devices.requests[0]";
    for (value, expected) in [
        (
            claim(json!({"devices": {"requests": [{"name": "gpu",
                "exactly": {"deviceClassName": "c"}, "firstAvailable": [{"name": "a", "deviceClassName": "c"}]}]}})),
            format!("{at}: exactly and firstAvailable are both set"),
        ),
        (exactly(json!({"count": -1})), format!("{at}.exactly.count: -1: must be greater than zero")),
        (
            exactly(json!({"allocationMode": "Some"})),
            format!("{at}.exactly.allocationMode: unknown mode \"Some\""),
        ),
        (
            exactly(json!({"allocationMode": "All", "count": 2})),
            format!("{at}.exactly.count: 2: must not be set when allocationMode is All"),
        ),
        (exactly(json!({"selectors": [{}]})), format!("{at}.exactly.selectors[0]: no cel")),
        (
            exactly(json!({"deviceClassName": ""})),
            format!("{at}.exactly.deviceClassName: must not be empty"),
        ),
        (
            exactly(json!({"tolerations": [{"operator": "Exists", "value": "x"}]})),
            format!("{at}.exactly.tolerations[0].value"),
        ),
        (
            claim(json!({"devices": {"requests": [{"name": "Gpu", "exactly": {"deviceClassName": "c"}}]}})),
            format!("{at}.name: \"Gpu\" is not a DNS label"),
        ),
        (
            claim(json!({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c"}}],
                "constraints": [{"requests": ["h"], "matchAttribute": "a.com/b"}]}})),
            "ResourceClaim web/gpu: spec.devices.constraints[0].requests[0]: \"h\" names no request"
                .to_string(),
        ),
        (
            claim(json!({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c"}}],
                "constraints": [{"matchAttribute": "pcieRoot"}]}})),
            "spec.devices.constraints[0].matchAttribute: \"pcieRoot\" has no domain".to_string(),
        ),
        (
            claim(json!({"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c"}}],
                "constraints": [{"distinctAttribute": "a.com/b"}]}})),
            "spec.devices.constraints[0].distinctAttribute: not supported".to_string(),
        ),
    ] {
        let error = refused(value);
        assert!(error.contains(&expected), "{error}\nexpected: {expected}");
    }
    let many: Vec<Value> = (0..33)
        .map(|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "c"}}))
        .collect();
    let error = refused(claim(json!({"devices": {"requests": many}})));
    assert!(
        error.contains("spec.devices.requests: 33 entries, at most 32"),
        "{error}"
    );
}
