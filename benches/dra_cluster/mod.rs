//! GPUs at scale, two ways: node groups of GPU nodes whose NVIDIA DRA driver publishes a ResourceSlice of 8
//! GPUs per node (NVIDIA's attributes, as `draDrivers: [gpu.nvidia.com]` derives them for the group's
//! template), and pending pods that claim one from a ResourceClaimTemplate whose CEL selector reads the
//! product name and a memory quantity; or the same nodes with the device plugin's `nvidia.com/gpu: 8` and
//! the same pods asking `nvidia.com/gpu: 1`.

use ekscale::autoscaler::ProviderClient;
use ekscale::model::{
    AttrValue, ClaimSource, Controller, DraObjects, Labels, Node, NodeScope, Pod, PodClaim,
    QualifiedName, ResourceSlice, Resources,
};
use serde_json::json;
use std::sync::Arc;
use std::time::SystemTime;

/// Pending pods that want a GPU.
pub const GPU_PODS: usize = 1000;

const PRODUCT: &str = "NVIDIA A100-SXM4-40GB";

/// `groups` node groups of 1,000 p4d.24xlarge nodes, one per team, in three zones, shaped as the scale
/// bench's other groups (16 CPU / 64 GiB / 110 pods) so that the pods on them are the same: with the NVIDIA
/// DRA driver (its slices in the template, no device plugin), or with the device plugin's 8 GPUs.
pub fn scenario(groups: usize, nodes: usize, dra: bool) -> String {
    // The driver derives its slices from the instance type's GPUs, which the DRA nodes also keep as a
    // capacity no pod asks for: the device plugin's count is stated only where it is what pods ask.
    let (gpus, drivers) = match dra {
        true => ("", "draDrivers: [gpu.nvidia.com], "),
        false => (", nvidia.com/gpu: '8'", ""),
    };
    let mut text = String::from("cluster: bench\nregion: us-east-1\nnodeGroups:\n");
    for g in 0..groups {
        text.push_str(&format!(
            "  - {{name: team-{g}, instanceType: p4d.24xlarge, zones: [us-east-1a, us-east-1b, us-east-1c], \
             minSize: 0, maxSize: 2000, desiredSize: {nodes}, labels: {{team: team-{g}}}, {drivers}\
             allocatable: {{cpu: '16', memory: 64Gi, pods: '110'{gpus}}}}}\n"
        ));
    }
    text
}

/// The pending pods of ReplicaSet `trainer-1`: each its own claim made from the template `a100` (named in
/// its status, as the claim controller does at once), or `nvidia.com/gpu: 1`.
pub fn pods(dra: bool, now: SystemTime) -> Vec<Pod> {
    (0..GPU_PODS)
        .map(|i| {
            let name = format!("trainer-{i}");
            let demand = Resources {
                cpu_millis: 500,
                memory_bytes: 1 << 30,
                pods: 1,
                gpus: u64::from(!dra),
                ..Resources::default()
            };
            let mut pod = Pod {
                labels: Labels::from([("app".to_string(), "trainer".to_string())]),
                controller: Some(Arc::new(Controller {
                    kind: "ReplicaSet".into(),
                    name: "trainer-1".into(),
                    uid: "uid-trainer-1".into(),
                })),
                created: Some(now),
                ..Pod::pending("default", &name, demand)
            };
            if dra {
                let dra = pod.dra_mut();
                dra.uid = Some(format!("uid-{name}").into());
                dra.claims = vec![PodClaim {
                    name: "gpu".into(),
                    source: ClaimSource::Template {
                        template: "a100".into(),
                        made: Some(format!("{name}-gpu").into()),
                    },
                }];
            }
            pod
        })
        .collect()
}

/// The DRA objects of the cluster: NVIDIA's DeviceClass, the template, each pending pod's claim (made, not
/// allocated), and each node's slice: its group's template slice, with the node's own pool, name and GPU
/// UUIDs.
pub async fn objects(client: &ProviderClient, nodes: &[Arc<Node>]) -> DraObjects {
    let mut objects = DraObjects::default();
    let class = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}});
    objects
        .classes
        .push(Arc::new(ekscale::k8s::device_class(class).unwrap()));
    let selector = format!(
        "device.attributes['gpu.nvidia.com'].productName == '{PRODUCT}' && \
         device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"
    );
    let spec = json!({"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression": selector}}]}}]}});
    let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "a100", "namespace": "default"}, "spec": {"spec": spec}});
    let template = ekscale::k8s::claim_template(template).unwrap();
    objects.templates.push(Arc::new(template));
    for i in 0..GPU_PODS {
        let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": format!("trainer-{i}-gpu"), "namespace": "default",
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": format!("trainer-{i}"),
                    "uid": format!("uid-trainer-{i}"), "controller": true}]},
            "spec": spec});
        objects
            .claims
            .push(Arc::new(ekscale::k8s::resource_claim(claim).unwrap()));
    }
    client.refresh().await.unwrap();
    let mut templates = std::collections::HashMap::new();
    for node in nodes {
        let group = node.labels["team"].clone();
        if !templates.contains_key(&group) {
            let slices = client.template_slices(&group).await.unwrap();
            assert_eq!(slices.len(), 1, "the NVIDIA driver's slice of {group}");
            templates.insert(group.clone(), slices.into_iter().next().unwrap());
        }
        objects
            .slices
            .push(Arc::new(node_slice(&templates[&group], &node.name)));
    }
    objects
}

/// The slice `node`'s driver publishes: the template's, as the node's own pool, each GPU with its own UUID.
fn node_slice(template: &ResourceSlice, node: &str) -> ResourceSlice {
    let mut slice = template.clone();
    slice.name = format!("{node}-gpu.nvidia.com").into();
    slice.pool.name = node.into();
    slice.scope = NodeScope::Node(node.into());
    for (minor, device) in slice.devices.iter_mut().enumerate() {
        let uuid = QualifiedName {
            domain: "gpu.nvidia.com".into(),
            id: "uuid".into(),
        };
        let value = AttrValue::Str(format!("GPU-{node}-{minor}").into());
        device.attributes.insert(uuid, value);
    }
    slice
}
