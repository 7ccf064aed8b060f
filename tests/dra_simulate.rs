//! Dynamic Resource Allocation in `simulate`, end to end: the real provider binary on a simulated EKS whose
//! GPU groups publish template ResourceSlices (derived from the instance type, or listed as they are),
//! snapshots holding DeviceClasses and claim templates, and `simulate` deciding which group's new nodes can
//! allocate the pods' claims.

mod common;

use common::Binary;
use common::cluster::*;
use serde_json::{Value, json};

const SCENARIO: &str = r#"
cluster: dra
region: us-east-1
nodeGroups:
  - name: general
    instanceType: m5.2xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 10
    desiredSize: 0
  - name: t4
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: a10g-quad
    instanceType: g5.12xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: fpga
    instanceType: m5.2xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 2
    desiredSize: 0
    labels: {accelerator: fpga}
    resourceSlices:
      - driver: fpga.example.com
        devices:
          - {name: fpga-0, attributes: {model: {string: u250}}}
          - {name: fpga-1, attributes: {model: {string: u250}}}
"#;

/// NVIDIA's chart's class, and one for the example FPGA driver.
fn classes() -> Vec<Value> {
    let class = |name: &str, expression: &str| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
               "spec": {"selectors": [{"cel": {"expression": expression}}]}})
    };
    vec![
        class(
            "gpu.nvidia.com",
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
        ),
        class("fpga.example.com", "device.driver == 'fpga.example.com'"),
    ]
}

/// A claim template asking `count` devices of `class`, with `selector` when given.
fn template(name: &str, class: &str, count: u32, selector: Option<&str>) -> Value {
    let selectors: Vec<Value> = selector
        .map(|e| json!({"cel": {"expression": e}}))
        .into_iter()
        .collect();
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
           "metadata": {"name": name, "namespace": "default"},
           "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
               "deviceClassName": class, "count": count, "selectors": selectors}}]}}}})
}

/// A pending pod claiming a device from `template`.
fn claiming(name: &str, template: &str) -> Value {
    let mut pod = pending("default", name, name, "1", "2Gi");
    pod["spec"]["resourceClaims"] = json!([{"name": "dev", "resourceClaimTemplateName": template}]);
    pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "dev"}]);
    pod
}

fn group_of(result: &Value, pod: &str) -> Option<String> {
    result["scaleUp"].as_array().unwrap().iter().find_map(|s| {
        (s["pods"].as_array().unwrap().iter().any(|p| p == pod))
            .then(|| s["nodeGroup"].as_str().unwrap().to_string())
    })
}

fn provider() -> (Binary, tempfile::TempDir) {
    Binary::on_scenario(SCENARIO)
}

#[test]
fn pods_that_claim_gpus_scale_the_groups_whose_new_nodes_have_them_from_zero() {
    let (provider, _dir) = provider();
    let mut items = classes();
    items.push(template("any-gpu", "gpu.nvidia.com", 1, None));
    // By product name, as NVIDIA's own examples select.
    items.push(template(
        "a10g",
        "gpu.nvidia.com",
        1,
        Some("device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a10g.*$')"),
    ));
    // By memory: a T4 has 15Gi, an A10G 23028Mi.
    items.push(template(
        "big-memory",
        "gpu.nvidia.com",
        1,
        Some("device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) >= 0"),
    ));
    items.push(template("two-fpgas", "fpga.example.com", 2, None));
    items.push(template("three-fpgas", "fpga.example.com", 3, None));
    items.push(claiming("a10g-job", "a10g"));
    items.push(claiming("memory-job", "big-memory"));
    items.push(claiming("fpga-job", "two-fpgas"));
    items.push(claiming("too-many-fpgas", "three-fpgas"));
    // Three CPUs: a g4dn.xlarge (4 vCPUs, 16 GiB) is the node it fills best.
    items.push(pending("default", "plain", "plain", "3", "12Gi"));
    let result = simulate_json(provider.grpc, &list(items), &[]);

    // Only a group whose template publishes matching devices takes a claiming pod.
    assert_eq!(
        group_of(&result, "default/a10g-job").as_deref(),
        Some("a10g-quad")
    );
    assert_eq!(
        group_of(&result, "default/memory-job").as_deref(),
        Some("a10g-quad")
    );
    assert_eq!(
        group_of(&result, "default/fpga-job").as_deref(),
        Some("fpga")
    );
    // A pod without claims still goes where it always did: every group's node takes it, and least-waste
    // picks the one it fills best, a GPU node or not.
    assert_eq!(
        group_of(&result, "default/plain").as_deref(),
        Some("t4"),
        "{result:#}"
    );
    let plain = (result["scaleUp"].as_array().unwrap().iter())
        .find(|s| s["nodeGroup"] == "t4")
        .unwrap();
    assert_eq!(
        plain["reason"], "least-waste chose it over general, fpga, a10g-quad",
        "{result:#}"
    );

    // Three FPGAs: no group's new node has them, and each group says why in the scheduler's words.
    let why = reasons(&result, "default/too-many-fpgas");
    let fpga = why["fpga"].as_str().unwrap();
    assert!(fpga.contains("cannot allocate all claims"), "{fpga}");
    let general = why["general"].as_str().unwrap();
    assert!(general.contains("cannot allocate all claims"), "{general}");
}

/// A claim `name` not allocated yet, asking one T4 (only the t4 group's nodes have one), and `n` pending pods
/// of `cpu` that all name it.
fn sharing(name: &str, n: usize, cpu: &str) -> Vec<Value> {
    let mut items = vec![
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression":
                "device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'"}}]}}]}}}),
    ];
    for i in 0..n {
        let mut pod = pending("default", &format!("{name}-{i}"), name, cpu, "2Gi");
        pod["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": name}]);
        pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
        items.push(pod);
    }
    items
}

#[test]
fn pods_sharing_a_claim_are_planned_on_the_one_node_its_allocation_takes() {
    let (provider, _dir) = provider();
    let mut items = classes();
    // One T4 for three pods of one CPU: one node of t4 holds them all (each allocating it would need three).
    items.extend(sharing("shared-t4", 3, "1"));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert_eq!(scale_ups(&result), [("t4".to_string(), 1)], "{result:#}");
    for i in 0..3 {
        let pod = format!("default/shared-t4-{i}");
        assert_eq!(group_of(&result, &pod).as_deref(), Some("t4"), "{pod}");
    }
}

#[test]
fn a_pod_whose_shared_claim_is_allocated_on_a_full_node_is_not_scaled_for() {
    let (provider, _dir) = provider();
    let mut items = classes();
    // Three CPUs each: a g4dn.xlarge (4 vCPUs) takes one. The first pod's node has the claim's T4; the
    // second may go only there, so a second node would not help it.
    items.extend(sharing("big-t4", 2, "3"));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert_eq!(scale_ups(&result), [("t4".to_string(), 1)], "{result:#}");
    assert_eq!(group_of(&result, "default/big-t4-0").as_deref(), Some("t4"));
    assert_eq!(group_of(&result, "default/big-t4-1"), None, "{result:#}");
    let why = reasons(&result, "default/big-t4-1");
    let t4 = why["t4"].as_str().unwrap();
    assert!(
        t4.contains("resourceclaim default/big-t4 is allocated on another node"),
        "{t4}"
    );
}

/// A pending pod whose container asks `amount` of `resource` (an extended resource).
fn asking(name: &str, resource: &str, amount: &str) -> Value {
    let mut pod = pending("default", name, name, "1", "2Gi");
    pod["spec"]["containers"][0]["resources"]["requests"][resource] = json!(amount);
    pod["spec"]["containers"][0]["resources"]["limits"] = json!({resource: amount});
    pod
}

#[test]
fn a_plain_extended_resource_request_is_served_by_the_devices_of_the_class_that_stands_for_it() {
    let (provider, _dir) = provider();
    let mut items = classes();
    // KEP-5004: the FPGA class stands for `example.com/fpga`; no node has it in its allocatable (no device
    // plugin), so the fpga group's devices serve it. The GPU class stands for `nvidia.com/gpu`, which the
    // GPU groups' nodes have in their allocatable: their device plugin serves it as before.
    items[0]["spec"]["extendedResourceName"] = json!("nvidia.com/gpu");
    items[1]["spec"]["extendedResourceName"] = json!("example.com/fpga");
    items.push(asking("two-fpgas", "example.com/fpga", "2"));
    // Every class stands for `deviceclass.resource.kubernetes.io/<class>` too.
    items.push(asking(
        "three-fpgas",
        "deviceclass.resource.kubernetes.io/fpga.example.com",
        "3",
    ));
    items.push(asking("one-gpu", "nvidia.com/gpu", "1"));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert_eq!(
        group_of(&result, "default/two-fpgas").as_deref(),
        Some("fpga"),
        "{result:#}"
    );
    assert_eq!(
        group_of(&result, "default/one-gpu").as_deref(),
        Some("t4"),
        "{result:#}"
    );
    // Three: a node of the fpga group has two, and the reason says which claim and request.
    assert_eq!(group_of(&result, "default/three-fpgas"), None);
    let why = reasons(&result, "default/three-fpgas");
    let fpga = why["fpga"].as_str().unwrap();
    assert!(
        fpga.contains(
            "request \"deviceclass.resource.kubernetes.io/fpga.example.com\" (class fpga.example.com, \
             3 devices): the node has 2 matching devices, 2 free"
        ),
        "{fpga}"
    );
    // Without a class standing for it, nothing serves a resource no node has.
    let mut items = classes();
    items.push(asking("two-fpgas", "example.com/fpga", "2"));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert_eq!(group_of(&result, "default/two-fpgas"), None, "{result:#}");
    let why = reasons(&result, "default/two-fpgas");
    let fpga = why["fpga"].as_str().unwrap();
    assert!(fpga.contains("Insufficient example.com/fpga"), "{fpga}");
}

#[test]
fn a_missing_claim_template_is_named_and_nothing_is_scaled_for_it() {
    let (provider, _dir) = provider();
    let mut items = classes();
    items.push(claiming("orphan", "no-such-template"));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert_eq!(scale_ups(&result), Vec::<(String, u64)>::new());
    let why = reasons(&result, "default/orphan");
    let t4 = why["t4"].as_str().unwrap();
    assert!(
        t4.contains("resourceclaimtemplate \"default/no-such-template\" not found"),
        "{t4}"
    );
}

#[test]
fn a_selector_that_does_not_compile_is_the_pods_reason_and_the_loop_goes_on() {
    let (provider, _dir) = provider();
    let mut items = classes();
    items.push(template(
        "broken",
        "gpu.nvidia.com",
        1,
        Some("device.attributes["),
    ));
    items.push(claiming("broken-job", "broken"));
    items.push(claiming("fine-job", "any-gpu"));
    items.push(template("any-gpu", "gpu.nvidia.com", 1, None));
    let result = simulate_json(provider.grpc, &list(items), &[]);
    assert!(
        group_of(&result, "default/fine-job").is_some(),
        "{result:#}"
    );
    let why = reasons(&result, "default/broken-job");
    let t4 = why["t4"].as_str().unwrap();
    assert!(t4.contains("device.attributes["), "{t4}");
}

#[test]
fn the_readmes_example_prints_what_the_readme_shows() {
    let provider = Binary::start(&[]);
    let snapshot = "tests/data/dra.yaml";
    let lines = readme_shows(provider.grpc, snapshot, &[], "Pods no node group can help");
    assert_eq!(lines, 6);
    // And the gpu group's scale-up, with its pods.
    readme_shows_scale_up(provider.grpc, snapshot, "gpu");
}

/// Two g5.12xlarge nodes of one group, each publishing its four A10Gs as NVIDIA's driver does (one pool named
/// after the node), a pod on the first holding one GPU by a claim made for it, and a pod on the second holding
/// `second` GPUs.
async fn two_gpu_nodes(provider: &Binary, second: u32) -> Value {
    let nodes = nodes_of(provider.grpc, &["a10g-quad"]).await;
    let names: Vec<String> = (nodes.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    let mut items = nodes.clone();
    items.extend(classes());
    for node in &names {
        let devices: Vec<Value> = (0..4)
            .map(|i| {
                json!({"name": format!("gpu-{i}"), "attributes": {
                "type": {"string": "gpu"}, "productName": {"string": "NVIDIA A10G"}},
                "capacity": {"memory": {"value": "23028Mi"}}})
            })
            .collect();
        items.push(
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-gpu.nvidia.com")},
            "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
                     "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                     "devices": devices}}),
        );
    }
    let mut holder = |pod: &str, node: &str, gpus: u32| {
        let claim = format!("{pod}-gpu-x7k2p");
        let results: Vec<Value> = (0..gpus)
            .map(|i| {
                json!({"request": "gpu", "driver": "gpu.nvidia.com", "pool": node,
                            "device": format!("gpu-{i}")})
            })
            .collect();
        items.push(
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": claim, "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod,
                                     "uid": format!("uid-{pod}"), "controller": true}]},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "count": gpus}}]}},
            "status": {"allocation": {
                "devices": {"results": results},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                "reservedFor": [{"resource": "pods", "name": pod, "uid": format!("uid-{pod}")}]}}),
        );
        let mut running = running(node, pod, pod, "4", "16Gi");
        running["metadata"]["uid"] = json!(format!("uid-{pod}"));
        running["spec"]["resourceClaims"] =
            json!([{"name": "gpu", "resourceClaimTemplateName": format!("{pod}-gpus")}]);
        running["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
        running["status"]["resourceClaimStatuses"] =
            json!([{"name": "gpu", "resourceClaimName": claim}]);
        items.push(running);
    };
    holder("one", &names[0], 1);
    holder("many", &names[1], second);
    list(items)
}

fn provider_with_two_gpu_nodes() -> (Binary, tempfile::TempDir) {
    let two = SCENARIO.replace(
        "  - name: a10g-quad\n    instanceType: g5.12xlarge\n    zones: [us-east-1a]\n    minSize: 0\n    maxSize: 4\n    desiredSize: 0",
        "  - name: a10g-quad\n    instanceType: g5.12xlarge\n    zones: [us-east-1a]\n    minSize: 0\n    maxSize: 4\n    desiredSize: 2",
    );
    assert_ne!(two, SCENARIO);
    Binary::on_scenario(&two)
}

#[tokio::test]
async fn a_gpu_node_goes_when_its_pods_claim_can_be_allocated_again_elsewhere() {
    let (provider, _dir) = provider_with_two_gpu_nodes();
    // The second node holds two of its four GPUs: room for the first node's one.
    let result = simulate_json(provider.grpc, &two_gpu_nodes(&provider, 2).await, &[]);
    let down = result["scaleDown"].as_array().unwrap();
    assert_eq!(down.len(), 1, "{result:#}");
    let detail = down[0]["detail"].as_str().unwrap();
    // Utilization is the devices' (the node's pool of NVIDIA's driver): one GPU in four, whatever the CPU;
    // its pod's claim goes to the other node.
    let node = down[0]["node"].as_str().unwrap();
    assert!(
        detail.starts_with(&format!(
            "utilization devices 25% in pool gpu.nvidia.com/{node} (threshold 50%)"
        )),
        "{detail}"
    );
    let other = result["unremovable"][0]["node"].as_str().unwrap();
    assert!(
        detail.ends_with(&format!("default/one -> {other}")),
        "{detail}"
    );
}

#[tokio::test]
async fn a_gpu_node_stays_when_its_pods_claim_fits_nowhere_else() {
    let (provider, _dir) = provider_with_two_gpu_nodes();
    // The second node's four GPUs are all held: the first node's pod has nowhere to take its claim.
    let snapshot = two_gpu_nodes(&provider, 4).await;
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(result["scaleDown"], json!([]), "{result:#}");
    let kept = result["unremovable"].as_array().unwrap();
    let first = kept
        .iter()
        .find(|k| k["reason"] == "NoPlaceToMovePods")
        .unwrap_or_else(|| panic!("{result:#}"));
    let detail = first["detail"].as_str().unwrap();
    // The claim that cannot go, by its name, its request and class, and what the other node has.
    let why = "cannot allocate all claims: resourceclaim default/one-gpu-x7k2p, request \"gpu\" \
               (class gpu.nvidia.com, 1 device): the node has 4 matching devices, 0 free";
    assert!(detail.contains(why), "{detail}");
    // The table says the same, in its list of nodes kept.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, snapshot.to_string()).unwrap();
    let table = String::from_utf8(simulate(provider.grpc, &path, &[]).stdout).unwrap();
    let kept: Vec<&str> = (table.lines())
        .skip_while(|l| *l != "Nodes kept")
        .filter(|l| l.contains("NoPlaceToMovePods"))
        .collect();
    let node = first["node"].as_str().unwrap();
    assert!(
        kept.iter()
            .any(|l| l.starts_with(&format!("  {node} ")) && l.contains(why)),
        "{table}"
    );
}

#[test]
fn run_counts_pending_pods_that_claim_devices_by_outcome() {
    let provider = Binary::start(&[]);
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dra.yaml");
    let grpc = provider.grpc.to_string();
    let companion = common::companion::start(&[
        "--provider",
        &grpc,
        "--snapshot",
        snapshot,
        "--dry-run",
        "--scan-interval",
        "1h",
    ]);
    common::companion::decisions_when(&companion, |d| d["scaleUp"].as_array().is_some());
    let (code, metrics) = common::companion::get(companion.http, "/metrics");
    assert_eq!(code, 200);
    for line in [
        "ekscale_pending_pods_with_claims{outcome=\"scaled_up\"} 3",
        "ekscale_pending_pods_with_claims{outcome=\"no_scale_up\"} 1",
        "ekscale_pending_pods_with_claims{outcome=\"placed\"} 0",
        "ekscale_pending_pods_with_claims{outcome=\"waiting\"} 0",
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
}

/// Two A10G groups for the price expander: g5.xlarge nodes (one GPU, $1.006/h, at most one node) and
/// g5.12xlarge nodes priced at $3/h, so each of their four GPUs costs $0.75/h, less than a g5.xlarge's one.
/// A general group prices the pods that need no GPU, and the stabilizer.
const PRICED: &str = r#"
cluster: priced
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.2xlarge, zones: [us-east-1a], minSize: 0, maxSize: 10, desiredSize: 0}
  - name: one-a10g
    instanceType: g5.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 1
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: four-a10g
    instanceType: g5.12xlarge
    pricePerHour: 3.0
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
"#;

/// A pending pod of `cpu` claiming GPUs from `template`.
fn claiming_small(name: &str, template: &str, cpu: &str) -> Value {
    let mut pod = pending("default", name, name, cpu, "256Mi");
    pod["spec"]["resourceClaims"] = json!([{"name": "dev", "resourceClaimTemplateName": template}]);
    pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "dev"}]);
    pod
}

// The price expander weighs what a group's nodes cost against what its pods would cost alone. A claim
// requests nothing, so unless the GPUs a pod's claims take on a group's node are priced as requested GPUs,
// each pod costs its CPU and memory alone on every group and the cheaper node always wins; priced with them,
// the group whose node the pods' GPUs fill is the better buy.
#[test]
fn the_price_expander_prices_the_gpus_a_pods_claims_take_on_each_group() {
    let (provider, _dir) = Binary::on_scenario(PRICED);
    let price = ["--expander", "price"];
    let all = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "all-gpus", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "allocationMode": "All"}}]}}}});

    // `allocationMode: All` takes the node's every GPU: one on a g5.xlarge, priced as a pod requesting one
    // GPU ($0.75/h, a quarter of a g5.12xlarge), so its $1.006/h node costs more than the pod is worth;
    // four on a g5.12xlarge, priced as the whole $3/h node. Unpriced, the pod costs its CPU on both, and
    // the cheaper g5.xlarge wins.
    let mut items = classes();
    items.push(all);
    items.push(claiming_small("takes-all", "all-gpus", "1"));
    let result = simulate_json(provider.grpc, &list(items), &price);
    assert_eq!(
        group_of(&result, "default/takes-all").as_deref(),
        Some("four-a10g"),
        "{result:#}"
    );

    // `exactly` one GPU each, four pods: one g5.xlarge (its group's most) holds one of them for $1.006/h,
    // one g5.12xlarge all four for $3/h. Each pod priced as one GPU ($0.75/h), the g5.12xlarge's nodes cost
    // what its pods are worth; priced as 100m of CPU, four pods are worth hardly more than one, and the
    // cheaper node wins the first round.
    let mut items = classes();
    items.push(template("one-gpu", "gpu.nvidia.com", 1, None));
    let pods: Vec<String> = (0..4).map(|i| format!("one-{i}")).collect();
    items.extend(pods.iter().map(|p| claiming_small(p, "one-gpu", "100m")));
    let result = simulate_json(provider.grpc, &list(items), &price);
    for pod in &pods {
        assert_eq!(
            group_of(&result, &format!("default/{pod}")).as_deref(),
            Some("four-a10g"),
            "{result:#}"
        );
    }
}

/// Two groups of one instance type whose templates differ only in their devices: NVIDIA's slices (derived)
/// on one, an FPGA on the other. Nothing else tells them apart, so only their devices can.
const SAME_TYPE: &str = r#"
cluster: alike
region: us-east-1
nodeGroups:
  - name: t4
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: fpga
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    resourceSlices:
      - driver: fpga.example.com
        devices:
          - {name: fpga-0, attributes: {model: {string: u250}}}
"#;

/// The scale-ups for `pods` (each a name and the claim template it claims from) over
/// SAME_TYPE's groups, with `args`: (group, delta, the pods it is for).
fn same_type_plan(pods: &[(&str, &str)], args: &[&str]) -> Vec<(String, u64, Vec<String>)> {
    let (provider, _dir) = Binary::on_scenario(SAME_TYPE);
    let mut items = classes();
    items.push(template("one-gpu", "gpu.nvidia.com", 1, None));
    items.push(template("one-fpga", "fpga.example.com", 1, None));
    for (pod, template) in pods {
        items.push(claiming(pod, template));
    }
    let result = simulate_json(provider.grpc, &list(items), args);
    let mut ups: Vec<(String, u64, Vec<String>)> = (result["scaleUp"].as_array().unwrap().iter())
        .map(|s| {
            let pods = s["pods"].as_array().unwrap().iter();
            (
                s["nodeGroup"].as_str().unwrap().to_string(),
                s["delta"].as_u64().unwrap(),
                pods.map(|p| p.as_str().unwrap().to_string()).collect(),
            )
        })
        .collect();
    ups.sort();
    ups
}

#[test]
fn groups_of_one_instance_type_with_different_devices_are_not_planned_as_one() {
    // Two pods of each: a g4dn.xlarge has one T4, and the scenario one FPGA a node, so each kind needs two
    // nodes, which balancing would spread over both groups were they similar.
    let fpga = [("fpga-job-0", "one-fpga"), ("fpga-job-1", "one-fpga")];
    let gpu = [("gpu-job-0", "one-gpu"), ("gpu-job-1", "one-gpu")];
    let up = |group: &str, pod: &str| {
        let pods = (0..2).map(|i| format!("default/{pod}-{i}")).collect();
        (group.to_string(), 2, pods)
    };
    for args in [&[][..], &["--balance-similar-node-groups"][..]] {
        // Each kind alone (whichever group's estimate is made first), and both together.
        assert_eq!(
            same_type_plan(&fpga, args),
            [up("fpga", "fpga-job")],
            "{args:?}"
        );
        assert_eq!(
            same_type_plan(&gpu, args),
            [up("t4", "gpu-job")],
            "{args:?}"
        );
        let both = [fpga, gpu].concat();
        assert_eq!(
            same_type_plan(&both, args),
            [up("fpga", "fpga-job"), up("t4", "gpu-job")],
            "{args:?}"
        );
    }
}
