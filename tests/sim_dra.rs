//! Dynamic Resource Allocation in the simulated cluster, with the loop over it: nodes of a DRA group publish
//! their GPUs when they register, the claim controller makes each pod its claim from a template, the
//! scheduler binds a pod only where its claim can be allocated and writes the allocation, and the claims
//! go with their pods. A plain `nvidia.com/gpu` request a DeviceClass stands for (KEP-5004) is served by a
//! node's devices where no device plugin serves it, with the claim the scheduler makes for it.

mod common;

use common::simulated::simulated;
use common::{DRA_SCENARIO, Server};
use ekscale::autoscaler::{ClusterSource, ClusterView, ProviderClient, RunOnce, Settings};
use ekscale::k8s::{PodJson, claim_template, device_class, pod_from_api, resource_claim};
use ekscale::model::{ClaimSource, NODE_GROUP_LABEL, NodeScope, Pod};
use ekscale::simulated_cluster::SimulatedCluster;
use ekscale::simulator::allocation_usable_on;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// NVIDIA's DeviceClass, and templates for one Turing GPU (by CEL) and for two GPUs on one node.
fn dra_objects(cluster: &SimulatedCluster) {
    let class = device_class(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]},
    }))
    .unwrap();
    let template = |name: &str, exactly: serde_json::Value| {
        claim_template(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
        }))
        .unwrap()
    };
    cluster.create_device_classes([Arc::new(class)]);
    cluster.create_claim_templates([
        Arc::new(template(
            "turing-gpu",
            json!({"deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression":
                "device.attributes['gpu.nvidia.com'].architecture == 'Turing'"}}]}),
        )),
        Arc::new(template(
            "two-gpus",
            json!({"deviceClassName": "gpu.nvidia.com", "count": 2}),
        )),
    ]);
}

/// `n` pods of a Job `job` whose entry `gpu` claims from `template`.
fn claiming(job: &str, n: usize, template: &str) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let pod = json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{job}-{i}"), "namespace": "ml",
                             "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                                                  "uid": format!("uid-{job}"), "controller": true}]},
                "spec": {
                    "containers": [{"name": "main", "image": job, "resources": {
                        "requests": {"cpu": "1", "memory": "4Gi"}, "claims": [{"name": "gpu"}]}}],
                    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                },
            });
            pod_from_api(&serde_json::from_value(pod).unwrap(), PodJson::Drop).unwrap()
        })
        .collect()
}

fn settings() -> Settings {
    Settings {
        act: true,
        remove_unregistered: true,
        ..Settings::default()
    }
}

#[tokio::test]
async fn pods_claiming_a_turing_gpu_scale_the_gpu_group_from_zero_and_run_on_its_nodes() {
    let (server, config, cluster) = simulated(DRA_SCENARIO).await;
    dra_objects(&cluster);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    cluster.create_pods(claiming("render", 2, "turing-gpu"));

    // The claim controller made each pod its own claim, named in the pod's status; none fits the general
    // node (it has no devices), so both wait and the loop adds a GPU node for each (one T4 a node).
    let view = cluster.view().await.unwrap();
    assert_eq!(view.dra.claims.len(), 2, "{:?}", view.dra.claims);
    for pod in view.pods.iter() {
        let ClaimSource::Template {
            made: Some(made), ..
        } = &pod.claims()[0].source
        else {
            panic!("no claim made for {}: {:?}", pod.name, pod.claims());
        };
        assert!(made.starts_with(&format!("{}-gpu-", pod.name)), "{made}");
        let claim = view.dra.claims.iter().find(|c| c.name == *made).unwrap();
        assert_eq!(claim.owner_pod.as_ref(), pod.uid());
        assert!(pod.unschedulable && claim.allocation.is_none());
    }
    let status = once.run(&view, cluster.now()).await.unwrap();
    let ups: Vec<(&str, u64)> = (status.scale_up.iter())
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect();
    assert_eq!(ups, [("gpu", 2)], "{status:#?}");

    // The nodes register and publish their T4s, each its own pool; the pods bind there with their claims
    // allocated on their node and reserved for them.
    for _ in 0..4 {
        server.sim().clock().advance(Duration::from_secs(31));
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
    }
    let view = cluster.view().await.unwrap();
    let gpu_nodes: Vec<_> = (view.nodes.iter())
        .filter(|n| n.taints.iter().any(|t| t.key == "nvidia.com/gpu"))
        .collect();
    assert_eq!(gpu_nodes.len(), 2);
    for node in &gpu_nodes {
        let slice = (view.dra.slices.iter())
            .find(|s| s.scope == NodeScope::Node(node.name.as_str().into()))
            .unwrap_or_else(|| panic!("{} publishes no slice: {:?}", node.name, view.dra.slices));
        assert_eq!(&*slice.pool.name, node.name.as_str());
        assert_eq!(slice.devices.len(), 1);
    }
    let mut on: Vec<&str> = Vec::new();
    for pod in view.pods.iter() {
        let node = pod.node_name.as_deref().expect("every render pod runs");
        let node = gpu_nodes
            .iter()
            .find(|n| n.name == node)
            .expect("on a GPU node");
        on.push(&node.name);
        let ClaimSource::Template {
            made: Some(made), ..
        } = &pod.claims()[0].source
        else {
            panic!("{:?}", pod.claims());
        };
        let claim = view.dra.claims.iter().find(|c| c.name == *made).unwrap();
        let allocation = claim.allocation.as_ref().expect("allocated");
        assert_eq!(allocation.devices.len(), 1);
        assert_eq!(&*allocation.devices[0].device.pool, node.name.as_str());
        assert!(allocation_usable_on(allocation, node));
        assert_eq!(claim.reserved_for, [pod.uid().cloned().unwrap()]);
    }
    on.sort_unstable();
    on.dedup();
    assert_eq!(on.len(), 2, "one T4 each: {on:?}");

    // The job finishes: its claims go with its pods.
    cluster.delete_pods(|p| p.name.starts_with("render-"));
    assert!(cluster.dra().claims.is_empty());
}

#[tokio::test]
async fn a_pod_claiming_two_gpus_where_nodes_have_one_stays_pending_saying_why() {
    let (server, config, cluster) = simulated(DRA_SCENARIO).await;
    dra_objects(&cluster);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    // One GPU node runs already (from a pod claiming one Turing GPU).
    cluster.create_pods(claiming("render", 1, "turing-gpu"));
    for _ in 0..4 {
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
        server.sim().clock().advance(Duration::from_secs(31));
    }
    cluster.delete_pods(|p| p.name.starts_with("render-"));
    cluster.create_pods(claiming("big", 1, "two-gpus"));

    let view = cluster.view().await.unwrap();
    assert_eq!(
        (view.nodes.iter())
            .filter(|n| n.taints.iter().any(|t| t.key == "nvidia.com/gpu"))
            .count(),
        1,
        "a GPU node is there, free"
    );
    let big = view.pods.iter().find(|p| p.name == "big-0").unwrap();
    assert!(big.node_name.is_none() && big.unschedulable, "{big:?}");
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert!(status.scale_up.is_empty(), "{status:#?}");
    let why = (status.no_scale_up.iter())
        .find(|n| n.pod == "ml/big-0")
        .unwrap_or_else(|| panic!("{status:#?}"));
    assert!(
        why.reasons["gpu"].starts_with("cannot allocate all claims"),
        "{why:?}"
    );
    // The scheduler never bound it, and its claim stays unallocated.
    let view = cluster.view().await.unwrap();
    let big = view.pods.iter().find(|p| p.name == "big-0").unwrap();
    assert!(big.node_name.is_none() && big.unschedulable);
    assert!(view.dra.claims.iter().all(|c| c.allocation.is_none()));
}

#[tokio::test]
async fn pods_sharing_a_claim_run_on_the_one_node_its_allocation_is_on() {
    let (server, config, cluster) = simulated(DRA_SCENARIO).await;
    dra_objects(&cluster);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    // One Turing GPU for two pods that name the claim themselves.
    let claim = resource_claim(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "shared-gpu", "namespace": "ml"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com"}}]}},
    }))
    .unwrap();
    cluster.create_claims([Arc::new(claim)]);
    let pods: Vec<Pod> = (claiming("pair", 2, "unused").into_iter())
        .map(|mut pod| {
            pod.dra_mut().claims[0].source = ClaimSource::Claim("shared-gpu".into());
            pod
        })
        .collect();
    cluster.create_pods(pods);

    // One node for both: the claim is allocated once, where the first pod goes.
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let ups: Vec<(&str, u64)> = (status.scale_up.iter())
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect();
    assert_eq!(ups, [("gpu", 1)], "{status:#?}");
    for _ in 0..4 {
        server.sim().clock().advance(Duration::from_secs(31));
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
    }
    // The scheduler binds both there, writes the allocation once and reserves it for each.
    let view = cluster.view().await.unwrap();
    let nodes: Vec<&str> = (view.pods.iter())
        .map(|p| p.node_name.as_deref().expect("both pods run"))
        .collect();
    assert_eq!(nodes.len(), 2);
    assert_eq!(nodes[0], nodes[1], "one GPU, one node");
    let claim = (view.dra.claims.iter())
        .find(|c| &*c.name == "shared-gpu")
        .unwrap();
    let allocation = claim.allocation.as_ref().expect("allocated");
    assert_eq!(allocation.devices.len(), 1);
    assert_eq!(&*allocation.devices[0].device.pool, nodes[0]);
    let mut reserved = claim.reserved_for.clone();
    reserved.sort();
    let mut uids: Vec<_> = view
        .pods
        .iter()
        .map(|p| p.uid().cloned().unwrap())
        .collect();
    uids.sort();
    assert_eq!(reserved, uids);
}

/// One general node, and a group at zero of CPU instances with two GPUs each that only a DRA driver
/// publishes (no device plugin: `nvidia.com/gpu` is not in their allocatable).
const DEVICES_ONLY: &str = "
cluster: kep-5004
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}
  - name: devices
    instanceType: m5.xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    provisioningDelay: 30s
    resourceSlices:
      - driver: gpu.nvidia.com
        devices:
          - {name: gpu-0, attributes: {type: {string: gpu}}}
          - {name: gpu-1, attributes: {type: {string: gpu}}}
";

/// NVIDIA's DeviceClass standing for `nvidia.com/gpu` (KEP-5004).
fn gpu_class_for_the_resource(cluster: &SimulatedCluster) {
    let class = device_class(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"extendedResourceName": "nvidia.com/gpu", "selectors": [{"cel": {"expression":
            "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]},
    }))
    .unwrap();
    cluster.create_device_classes([Arc::new(class)]);
}

/// Pod `name` of a ReplicaSet `serve`, asking `nvidia.com/gpu: 1` as a device plugin's users do.
fn asking_a_gpu(name: &str) -> Pod {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml",
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "serve",
                                          "uid": "uid-serve", "controller": true}]},
        "spec": {
            "containers": [{"name": "main", "image": "serve", "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        },
    });
    pod_from_api(&serde_json::from_value(pod).unwrap(), PodJson::Drop).unwrap()
}

/// The claim the scheduler made for `pod`'s extended resources, checked as KEP-5004 makes it: named after
/// the pod, owned by and reserved for it, one device allocated on `node`; the device's name.
fn extended_claim(view: &ClusterView, pod: &str, node: &str) -> String {
    let pod = view.pods.iter().find(|p| p.name == pod).unwrap();
    assert_eq!(pod.node_name.as_deref(), Some(node), "{pod:?}");
    let name = (pod.dra.as_deref())
        .and_then(|d| d.extended_claim.clone())
        .unwrap_or_else(|| panic!("no extended resource claim in {pod:?}"));
    assert!(
        name.starts_with(&format!("{}-extended-resources-", pod.name)),
        "{name}"
    );
    let claim = (view.dra.claims.iter())
        .find(|c| c.name == name && c.namespace == pod.namespace)
        .unwrap_or_else(|| panic!("{name} not among {:?}", view.dra.claims));
    assert!(claim.extended_resources, "{claim:?}");
    assert_eq!(claim.owner_pod.as_ref(), pod.uid());
    assert_eq!(claim.reserved_for, [pod.uid().cloned().unwrap()]);
    let allocation = claim.allocation.as_ref().expect("allocated");
    assert_eq!(allocation.devices.len(), 1, "{allocation:?}");
    assert_eq!(&*allocation.devices[0].device.pool, node);
    allocation.devices[0].device.device.to_string()
}

/// The name of the node of group `group`.
fn group_node(view: &ClusterView, group: &str) -> String {
    let node = (view.nodes.iter())
        .find(|n| n.labels.get(NODE_GROUP_LABEL).map(String::as_str) == Some(group));
    node.unwrap_or_else(|| panic!("no node of {group}: {:?}", view.nodes))
        .name
        .clone()
}

/// Pods `serve-0` and `serve-1` asking a GPU each, bound to the one node the loop added for them in the
/// devices group; the cluster, the loop and that node.
async fn two_pods_on_a_devices_node() -> (Server, Arc<SimulatedCluster>, RunOnce, String) {
    let (server, config, cluster) = simulated(DEVICES_ONLY).await;
    gpu_class_for_the_resource(&cluster);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    cluster.create_pods(["serve-0", "serve-1"].map(asking_a_gpu));

    // No node has `nvidia.com/gpu`; the devices group's nodes have two GPUs a class stands for: one node.
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.unschedulable));
    let status = once.run(&view, cluster.now()).await.unwrap();
    let ups: Vec<(&str, u64)> = (status.scale_up.iter())
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect();
    assert_eq!(ups, [("devices", 1)], "{status:#?}");
    for _ in 0..2 {
        server.sim().clock().advance(Duration::from_secs(31));
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
    }
    let node = group_node(&cluster.view().await.unwrap(), "devices");
    (server, cluster, once, node)
}

#[tokio::test]
async fn pods_asking_a_gpu_run_on_nodes_whose_devices_serve_it_each_with_the_claim_made_for_it() {
    let (_server, cluster, mut once, node) = two_pods_on_a_devices_node().await;

    // The scheduler bound both there, and made each a claim of its own for a GPU of the node's.
    let view = cluster.view().await.unwrap();
    let first = extended_claim(&view, "serve-0", &node);
    let second = extended_claim(&view, "serve-1", &node);
    assert_ne!(first, second, "each pod its own GPU");

    // The node's GPUs are taken: a third pod waits, and the loop adds a node for it.
    cluster.create_pods([asking_a_gpu("serve-2")]);
    let view = cluster.view().await.unwrap();
    let third = view.pods.iter().find(|p| p.name == "serve-2").unwrap();
    assert!(
        third.node_name.is_none() && third.unschedulable,
        "{third:?}"
    );
    let status = once.run(&view, cluster.now()).await.unwrap();
    let ups: Vec<(&str, u64)> = (status.scale_up.iter())
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect();
    assert_eq!(ups, [("devices", 1)], "{status:#?}");

    // A pod goes, and its claim with it: the GPU it held is free, and the waiting pod takes it before the
    // new node is up.
    cluster.delete_pods(|p| p.name == "serve-0");
    assert!(
        (cluster.dra().claims.iter()).all(|c| !c.name.starts_with("serve-0-")),
        "{:?}",
        cluster.dra().claims
    );
    let view = cluster.view().await.unwrap();
    assert_eq!(extended_claim(&view, "serve-2", &node), first);
    assert_eq!(view.dra.claims.len(), 2, "{:?}", view.dra.claims);
}

#[tokio::test]
async fn pods_preempted_from_a_devices_node_give_up_the_claims_made_for_them() {
    let (_server, cluster, _once, node) = two_pods_on_a_devices_node().await;
    assert_eq!(cluster.dra().claims.len(), 2);

    // A pod of higher priority that only the devices node's CPU can take once both are evicted.
    let big = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "batch-0", "namespace": "ml"},
        "spec": {"priority": 1000, "containers": [{"name": "main", "image": "batch",
            "resources": {"requests": {"cpu": "3500m", "memory": "1Gi"}}}]},
    });
    cluster
        .create_pods([pod_from_api(&serde_json::from_value(big).unwrap(), PodJson::Drop).unwrap()]);
    let view = cluster.view().await.unwrap();
    let on = |name: &str| {
        let pod = view.pods.iter().find(|p| p.name == name).unwrap();
        (
            pod.node_name.as_deref().map(str::to_string),
            pod.dra.as_deref().and_then(|d| d.extended_claim.clone()),
        )
    };
    assert_eq!(on("batch-0"), (Some(node.clone()), None));
    // The evicted wait again, holding no GPU: their claims are gone and the node's devices free.
    assert_eq!(on("serve-0"), (None, None));
    assert_eq!(on("serve-1"), (None, None));
    assert!(view.dra.claims.is_empty(), "{:?}", view.dra.claims);
}

#[tokio::test]
async fn a_node_whose_device_plugin_serves_the_resource_serves_it_without_a_claim() {
    let (server, config, cluster) = simulated(DRA_SCENARIO).await;
    gpu_class_for_the_resource(&cluster);
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), settings());
    cluster.create_pods([asking_a_gpu("serve-0")]);
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(status.scale_up.len(), 1, "{status:#?}");
    assert_eq!(status.scale_up[0].node_group, "gpu");
    for _ in 0..2 {
        server.sim().clock().advance(Duration::from_secs(31));
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
    }
    // The g4dn node has `nvidia.com/gpu` in its allocatable (its device plugin): the pod runs there on it,
    // and no claim is made, although the node publishes its T4 too.
    let view = cluster.view().await.unwrap();
    let pod = &view.pods[0];
    assert_eq!(pod.node_name.as_deref(), Some(&*group_node(&view, "gpu")));
    assert_eq!(
        pod.dra.as_deref().and_then(|d| d.extended_claim.clone()),
        None
    );
    assert!(view.dra.claims.is_empty(), "{:?}", view.dra.claims);
    assert_eq!(
        pod.demand.gpus, 1,
        "the pod's own request, counted on its node"
    );
}
