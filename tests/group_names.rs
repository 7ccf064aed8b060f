//! Node groups named as EKS allows and Kubernetes names do not (`gpuA`, `GPU_Pool-1`: upper-case letters,
//! '_'): the real provider binary loads them, every name made from them is valid for what it names (the
//! template node's, its hostname label, its ResourceSlices' names, pools and nodeName), and `simulate` runs
//! the DRA, CapacityQuota, CapacityBuffer and disruption paths over them, the groups named as they are.

mod common;

use common::Server;
use common::cluster::*;
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::model::{NodeScope, is_dns_subdomain, is_label_name};
use serde_json::{Value, json};

const SCENARIO: &str = r#"
cluster: names
region: us-east-1
nodeGroups:
  - name: gpuA
    instanceType: g4dn.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: GPU_Pool-1
    instanceType: m5.2xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 2
    resourceSlices:
      - driver: fpga.example.com
        devices:
          - {name: fpga-0, attributes: {model: {string: u250}}}
  - name: gpu_pool-1
    instanceType: m5.4xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    resourceSlices:
      - driver: fpga.example.com
        devices:
          - {name: fpga-0, attributes: {model: {string: u250}}}
  - name: Long_Pool-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
    instanceType: m5.large
    zones: [us-east-1a]
    minSize: 0
    maxSize: 1
    desiredSize: 0
    resourceSlices:
      - driver: other.example.com
        devices: [{name: dev-0}]
"#;

/// The longest name EKS allows: its template node's name is longer than a label's value may be.
const LONG: &str = "Long_Pool-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";

/// The classes of NVIDIA's chart and of the example FPGA driver, and a claim template for each.
fn dra_objects() -> Vec<Value> {
    let class = |name: &str, expression: &str| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
               "spec": {"selectors": [{"cel": {"expression": expression}}]}})
    };
    let template = |name: &str, class: &str| {
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {
                   "deviceClassName": class, "count": 1}}]}}}})
    };
    vec![
        class("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'"),
        class("fpga.example.com", "device.driver == 'fpga.example.com'"),
        template("one-gpu", "gpu.nvidia.com"),
        template("one-fpga", "fpga.example.com"),
    ]
}

/// A pending pod claiming a device from `template`.
fn claiming(name: &str, template: &str) -> Value {
    let mut pod = pending("default", name, name, "1", "2Gi");
    pod["spec"]["resourceClaims"] = json!([{"name": "dev", "resourceClaimTemplateName": template}]);
    pod["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "dev"}]);
    pod
}

/// The provider on the scenario, and GPU_Pool-1's two nodes as the snapshot's, each running a 5-CPU pod.
async fn cluster() -> (Server, Vec<String>, Vec<Value>) {
    let server = Server::start_with(SCENARIO, None).await;
    let mut items = nodes_of(server.addr, &["GPU_Pool-1"]).await;
    let names: Vec<String> = (items.iter())
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    for (i, node) in names.iter().enumerate() {
        items.push(running(node, &format!("db-{i}"), "db", "5", "8Gi"));
    }
    (server, names, items)
}

/// Every name made from a group's is valid for what it names, and no two groups share one.
#[tokio::test]
async fn names_made_from_group_names_are_valid_and_distinct() {
    let server = Server::start_with(SCENARIO, None).await;
    let client = ProviderClient::new(&ProviderConfig::plaintext(server.addr.to_string())).unwrap();
    client.refresh().await.unwrap();
    let mut templates = Vec::new();
    for group in ["gpuA", "GPU_Pool-1", "gpu_pool-1", LONG] {
        let template = client.template(group).await.unwrap().expect("a template");
        let meta = template.metadata.clone().unwrap_or_default();
        let name = meta.name.unwrap();
        assert!(is_dns_subdomain(&name), "{group}: {name}");
        let hostname = &meta.labels["kubernetes.io/hostname"];
        assert!(is_label_name(hostname), "{group}: {hostname}");
        assert_eq!(meta.labels["eks.amazonaws.com/nodegroup"], group);
        let [slice] = &client.template_slices(group).await.unwrap()[..] else {
            panic!("{group}: one slice")
        };
        assert!(is_dns_subdomain(&slice.name), "{group}: {}", slice.name);
        assert_eq!(*slice.pool.name, name, "{group}");
        assert_eq!(
            slice.scope,
            NodeScope::Node(name.as_str().into()),
            "{group}"
        );
        templates.push(name);
    }
    assert_eq!(templates.len(), 4);
    assert!(
        templates[0].starts_with("template-node-for-gpua-"),
        "{templates:?}"
    );
    assert!(
        templates[1].starts_with("template-node-for-gpu-pool-1-"),
        "{templates:?}"
    );
    assert_ne!(templates[1], templates[2]);
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dra_and_quotas_plan_for_the_groups_by_their_names() {
    let (server, _, items) = cluster().await;
    // DRA: a pod claiming a GPU scales gpuA from zero; one claiming an FPGA, the group publishing one that
    // wastes least (gpu_pool-1's nodes are twice the size).
    let mut dra = items.clone();
    dra.extend(dra_objects());
    dra.push(claiming("t4-job", "one-gpu"));
    dra.push(claiming("fpga-job", "one-fpga"));
    let result = simulate_json(server.addr, &list(dra.clone()), &[]);
    let mut ups = scale_ups(&result);
    ups.sort();
    assert_eq!(
        ups,
        [("GPU_Pool-1".to_string(), 1), ("gpuA".to_string(), 1)],
        "{result:#}"
    );

    // CapacityQuota: GPU_Pool-1 may have its two nodes and no more; the FPGA pod goes to gpu_pool-1.
    let mut quota = dra;
    quota.push(
        json!({"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
        "metadata": {"name": "pool-1-nodes", "generation": 1},
        "spec": {"selector": {"matchLabels": {"eks.amazonaws.com/nodegroup": "GPU_Pool-1"}},
                 "limits": {"resources": {"nodes": 2}}}}),
    );
    let result = simulate_json(server.addr, &list(quota), &[]);
    let mut ups = scale_ups(&result);
    ups.sort();
    assert_eq!(
        ups,
        [("gpuA".to_string(), 1), ("gpu_pool-1".to_string(), 1)],
        "{result:#}"
    );
    let held = (result["capacityQuotas"].as_array().unwrap().iter())
        .find(|q| q["name"] == "pool-1-nodes")
        .unwrap();
    assert_eq!(held["nodeGroups"], json!(["GPU_Pool-1"]), "{result:#}");
    assert_eq!(held["used"]["nodes"], 2, "{result:#}");
}

// The simulate binary blocks this thread while the provider answers it from another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_buffer_and_expiry_over_a_group_so_named() {
    let (server, nodes, items) = cluster().await;
    // CapacityBuffer: five 2-CPU chunks for GPU_Pool-1's nodes; the two there hold one each beside their
    // 5-CPU pods (7910m allocatable), so two are ready, and the other three take one new node.
    let mut buffer = items.clone();
    buffer.push(json!({"apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default", "generation": 1},
        "template": {"spec": {"nodeSelector": {"eks.amazonaws.com/nodegroup": "GPU_Pool-1"},
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "2Gi"}}}]}}}));
    buffer.push(
        json!({"apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
        "metadata": {"name": "spare", "namespace": "default", "generation": 1},
        "spec": {"podTemplateRef": {"name": "chunk"}, "replicas": 5}}),
    );
    let result = simulate_json(server.addr, &list(buffer), &[]);
    let spare = &result["capacityBuffers"][0];
    assert_eq!(
        (
            &spare["inFreeRoom"],
            &spare["readyReplicas"],
            &spare["inScaleUp"]
        ),
        (&json!(2), &json!(2), &json!(3)),
        "{result:#}"
    );
    assert_eq!(
        scale_ups(&result),
        [("GPU_Pool-1".to_string(), 1)],
        "{result:#}"
    );

    // Disruption: GPU_Pool-1's nodes expire after 30 days, one at a time; a node's 5-CPU pod fits on no
    // other, so the first is replaced by a new node first.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("disruption.yaml");
    let text = "nodeGroups:\n  - match: \"^GPU_Pool-1$\"\n    budgets: [{nodes: \"1\"}]\n    expireAfter: 720h\n";
    std::fs::write(&config, text).unwrap();
    let args = [
        "--disruption-config",
        config.to_str().unwrap(),
        "--now",
        "2027-01-05T12:00:00Z",
    ];
    let result = simulate_json(server.addr, &list(items), &args);
    let actions: Vec<(&str, &str, &str)> = (result["disruptions"].as_array().unwrap().iter())
        .map(|d| {
            let at = |k: &str| d[k].as_str().unwrap();
            (at("node"), at("reason"), at("action"))
        })
        .collect();
    assert_eq!(
        actions,
        [
            (nodes[0].as_str(), "expired", "replace"),
            (nodes[1].as_str(), "expired", "wait")
        ],
        "{result:#}"
    );
    let up = &result["scaleUp"][0];
    assert_eq!(up["nodeGroup"], "GPU_Pool-1", "{result:#}");
    assert_eq!(up["replaces"], json!([nodes[0]]), "{result:#}");
}
