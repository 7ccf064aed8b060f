//! Devices across places: a claim several pods share, allocated once by the simulation, pins the pods after
//! the first to where its devices are, on registered nodes and on the copies of a group's template alike
//! (which share their node's name). And the whole GPUs a pod takes on a group's node, as it is priced.

use super::dra::{Dra, claimed_gpus};
use super::topology::{Place, PlaceKind, Topology};
use super::world::place_all;
use crate::model::{
    AllocationMode, AttrValue, ClaimNeeds, ClaimSpec, Device, DeviceAsk, DeviceClass,
    DeviceRequest, DraObjects, ExtendedClaim, NeededClaim, Node, NodeScope, Pod, PodDra, PoolRef,
    QualifiedName, ResourceSlice, Resources,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A node with 4 CPUs and one GPU (as a g4dn.xlarge).
fn node(name: &str) -> Arc<Node> {
    Arc::new(Node {
        name: name.into(),
        allocatable: Resources {
            cpu_millis: 4000,
            memory_bytes: 16 << 30,
            pods: 29,
            ..Default::default()
        },
        ready: true,
        ..Default::default()
    })
}

fn gpu_slice(node: &str) -> Arc<ResourceSlice> {
    Arc::new(ResourceSlice {
        name: format!("{node}-gpu").into(),
        driver: "gpu.nvidia.com".into(),
        pool: PoolRef {
            name: node.into(),
            generation: 0,
            slice_count: 1,
        },
        scope: NodeScope::Node(node.into()),
        devices: vec![nvidia_device("gpu-0", "gpu")],
        shared_counters: Vec::new(),
    })
}

/// A device of NVIDIA's driver of `kind` (`gpu`, `mig`).
fn nvidia_device(name: &str, kind: &str) -> Device {
    let kind_name = QualifiedName {
        domain: "gpu.nvidia.com".into(),
        id: "type".into(),
    };
    Device {
        name: name.into(),
        attributes: [(kind_name, AttrValue::Str(kind.into()))].into(),
        capacity: BTreeMap::new(),
        consumes: Vec::new(),
        taints: Vec::new(),
        scope: None,
        binding_conditions: false,
    }
}

fn objects(slices: Vec<Arc<ResourceSlice>>) -> DraObjects {
    DraObjects {
        classes: vec![Arc::new(DeviceClass {
            name: "gpu.nvidia.com".into(),
            selectors: Vec::new(),
            extended_resource_name: None,
            created: None,
        })],
        slices,
        ..DraObjects::default()
    }
}

fn one_gpu() -> Arc<ClaimSpec> {
    Arc::new(ClaimSpec {
        requests: vec![DeviceRequest {
            name: "gpu".into(),
            first_available: false,
            asks: vec![DeviceAsk {
                name: "".into(),
                class: "gpu.nvidia.com".into(),
                selectors: Vec::new(),
                mode: AllocationMode::ExactCount(1),
                admin_access: false,
                tolerations: Vec::new(),
            }],
        }],
        constraints: Vec::new(),
    })
}

/// `n` pods of `cpu` millicores that each name claim `ml/<claim>`, `shared` (`resourceClaimName`) or each
/// their own from a template.
fn pods(n: usize, cpu: u64, claim: &str, shared: bool) -> Vec<Pod> {
    let needs = Arc::new(ClaimNeeds {
        unallocated: vec![NeededClaim {
            name: format!("ml/{claim}").into(),
            spec: one_gpu(),
            shared,
        }],
        ..ClaimNeeds::default()
    });
    (0..n)
        .map(|i| Pod {
            dra: Some(Box::new(PodDra {
                needs: Some(needs.clone()),
                ..PodDra::default()
            })),
            ..Pod::pending(
                "ml",
                &format!("train-{i}"),
                Resources {
                    cpu_millis: cpu,
                    memory_bytes: 1 << 30,
                    pods: 1,
                    ..Default::default()
                },
            )
        })
        .collect()
}

/// Places all `pods` (alike) on `places`; where each went.
fn place(topology: &mut Topology, places: &mut [Place], pods: &[Pod]) -> Vec<usize> {
    let terms = topology.resolve(&pods[0]);
    let members: Vec<usize> = (0..pods.len()).collect();
    place_all(topology, places, pods, &members, &terms)
}

/// Three registered GPU nodes.
fn registered() -> (Topology, Vec<Place>) {
    let names = ["gpu-a", "gpu-b", "gpu-c"];
    let dra = Dra::new(&objects(names.iter().map(|n| gpu_slice(n)).collect()));
    let mut topology = Topology::default();
    let places = (names.iter())
        .map(|n| {
            let node = node(n);
            let mut place = topology.place(node.clone(), None, PlaceKind::Existing);
            place.devices = dra.devices_of(&node);
            place
        })
        .collect();
    (topology, places)
}

/// Three copies of a group's template (one node name, each its own GPU), as an estimation adds them.
fn template_copies() -> (Topology, Vec<Place>) {
    let dra = Dra::new(&objects(Vec::new()));
    let node = node("template-gpu");
    let mut topology = Topology::default();
    let mut template = topology.place(node.clone(), Some(0), PlaceKind::Planned);
    template.devices = dra.template_devices(&[gpu_slice("template-gpu")], &node);
    let places = (0..3)
        .map(|_| topology.copy(&template, PlaceKind::Planned))
        .collect();
    (topology, places)
}

#[test]
fn pods_sharing_a_claim_go_where_its_one_allocation_is() {
    for (what, (mut topology, mut places)) in [
        ("registered nodes", registered()),
        ("template copies", template_copies()),
    ] {
        // Two pods fit a node's CPUs: both on the node whose GPU the claim took, one GPU for both.
        let together = pods(2, 1000, "shared", true);
        let at = place(&mut topology, &mut places, &together);
        assert_eq!(at, [0, 0], "{what}");
        // Pods with a claim of their own each take a GPU, so each its node: the other nodes are free.
        let own = pods(3, 1000, "own", false);
        let at = place(&mut topology, &mut places, &own);
        assert_eq!(at, [1, 2], "{what}: one GPU a node left");
    }
}

#[test]
fn a_pod_pinned_by_its_shared_claim_to_a_full_node_goes_nowhere_else() {
    for (what, (mut topology, mut places)) in [
        ("registered nodes", registered()),
        ("template copies", template_copies()),
    ] {
        // Three CPUs each: the node the first went to has no room for the second, and no other node
        // has the claim's devices.
        let big = pods(2, 3000, "shared", true);
        let terms = topology.resolve(&big[0]);
        let at = place(&mut topology, &mut places, &big);
        assert_eq!(at, [0], "{what}");
        let why = super::world::explain(&topology, &places, &big[1], &terms, |_| false);
        assert!(
            why.contains("resourceclaim ml/shared is allocated on another node"),
            "{what}: {why}"
        );
        // Taken off again, the first gives the claim's GPU back: the second may allocate it anywhere.
        topology.take(&big[0], &terms, &mut places[0], 1);
        let at = place(&mut topology, &mut places, &big[1..]);
        assert_eq!(at.len(), 1, "{what}");
        let again = place(&mut topology, &mut places, &pods(1, 1000, "other", true));
        assert_eq!(again.len(), 1, "{what}: a GPU is free on another node");
        assert_ne!(again, at, "{what}");
    }
}

#[test]
fn a_pod_is_priced_with_the_whole_gpus_it_takes_on_a_groups_node() {
    let node = node("template-gpu");
    let mut slice = (*gpu_slice("template-gpu")).clone();
    slice.devices = vec![
        nvidia_device("gpu-0", "gpu"),
        nvidia_device("gpu-1", "gpu"),
        nvidia_device("gpu-2-mig-1g", "mig"),
    ];
    let dra = Dra::new(&objects(Vec::new()));
    let devices = dra.template_devices(&[Arc::new(slice)], &node);
    let devices = devices.as_deref();
    let asking = |count: u32| {
        let mut spec = (*one_gpu()).clone();
        spec.requests[0].asks[0].mode = AllocationMode::ExactCount(count);
        let mut pod = pods(1, 1000, "own", false).remove(0);
        pod.dra_mut().needs = Some(Arc::new(ClaimNeeds {
            unallocated: vec![NeededClaim {
                name: "ml/own".into(),
                spec: Arc::new(spec),
                shared: false,
            }],
            ..ClaimNeeds::default()
        }));
        pod
    };
    // Two whole GPUs; with three devices the third is a MIG slice, not a whole GPU.
    assert_eq!(claimed_gpus(&asking(2), &node, devices), 2);
    assert_eq!(claimed_gpus(&asking(3), &node, devices), 2);
    // Four: they cannot be allocated on this group's node, so it is priced as asking none.
    assert_eq!(claimed_gpus(&asking(4), &node, devices), 0);
    // A device plugin's GPUs serve a plain request where the node has them in its allocatable.
    let mut plugin = (*node).clone();
    plugin.allocatable.gpus = 4;
    let mut plain = pods(1, 1000, "own", false).remove(0);
    plain.dra_mut().needs = Some(Arc::new(ClaimNeeds {
        extended: vec![ExtendedClaim {
            resource: "nvidia.com/gpu".into(),
            count: 3,
            name: "for extended resource nvidia.com/gpu".into(),
            spec: one_gpu(),
        }],
        ..ClaimNeeds::default()
    }));
    assert_eq!(claimed_gpus(&plain, &plugin, devices), 3);
}
