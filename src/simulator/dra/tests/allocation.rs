//! Each rule of the allocator on hand-built nodes like a g5.12xlarge (4 A10G) or a MIG-partitioned GPU.

use super::fixtures::*;
use crate::model::{
    AllocationMode, DeviceTaint, DeviceTaintEffect, DeviceToleration, Labels, NodeScope,
    NodeSelector, NodeSelectorTerm, Operator, Requirement,
};
use crate::oracle;
use crate::simulator::dra::allocation::allocate::allocate;
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::node_selector::allocation_usable_on;
use crate::simulator::dra::pools::{NodePools, Pools};
use crate::simulator::dra::unallocatable::{Unallocatable, Wanted};
use crate::simulator::dra::utilization::utilization;
use std::sync::Arc;

fn four_a10g() -> Vec<crate::model::Device> {
    (0..4)
        .map(|i| gpu(&format!("gpu-{i}"), "NVIDIA A10G", "23028Mi", "pci0000:00"))
        .collect()
}

#[test]
fn exact_count_takes_devices_in_order_and_pins_the_node() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", four_a10g())]);
    let n1 = node("n1");
    let node_pools = pools.for_node(&n1);
    assert_eq!(node_pools.device_count(), 4);
    let spec = claim(vec![exact("gpu", "gpu.nvidia.com", 2, &[])]);
    let allocations = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&spec]).unwrap();
    assert_eq!(device_names(&allocations[0]), ["gpu-0", "gpu-1"]);
    assert_eq!(&*allocations[0].devices[0].request, "gpu");
    assert!(allocation_usable_on(&allocations[0], &n1));
    assert!(
        !allocation_usable_on(&allocations[0], &node("n2")),
        "node-local devices pin the node"
    );
    assert!(pools.for_node(&node("n2")).is_empty());
}

#[test]
fn exact_count_two_with_one_free_says_what_the_node_has() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let devices = vec![
        gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00"),
        gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:00"),
    ];
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", devices)]);
    let n1 = node("n1");
    let held = [allocated_claim(&[id(NVIDIA, "n1", "gpu-0")], false)];
    let mut in_use = InUse::from_claims(&held);
    let spec = claim(vec![exact("gpu", "gpu.nvidia.com", 2, &[])]);
    let err = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&spec]).unwrap_err();
    assert!(!err.never_fits());
    assert_eq!(
        err,
        Unallocatable::NoFit {
            request: crate::simulator::dra::unallocatable::RequestRef {
                claim: 0,
                claims: 1,
                request: "gpu".into()
            },
            class: "gpu.nvidia.com".into(),
            wanted: Wanted::Count(2),
            matching: 2,
            free: 1,
        }
    );
    assert_eq!(
        err.to_string(),
        "cannot allocate all claims: request \"gpu\" (class gpu.nvidia.com, 2 devices): the node \
         has 2 matching devices, 1 free"
    );
    // One device is still free for a claim of one, and the other once the holder lets go.
    let one = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let got = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&one]).unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-1"]);
    in_use.remove(held[0].allocation.as_ref().unwrap());
    assert!(in_use.is_empty());
    assert!(allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&spec]).is_ok());
}

#[test]
fn claims_of_one_pod_do_not_share_devices() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", four_a10g())]);
    let n1 = node("n1");
    let a = claim(vec![exact("gpu", "gpu.nvidia.com", 3, &[])]);
    let b = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let got = allocate(
        &classes,
        &pools.for_node(&n1),
        &InUse::new(),
        &n1,
        &[&a, &b],
    )
    .unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-0", "gpu-1", "gpu-2"]);
    assert_eq!(device_names(&got[1]), ["gpu-3"]);
    let c = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let err = allocate(
        &classes,
        &pools.for_node(&n1),
        &InUse::new(),
        &n1,
        &[&a, &b, &c],
    )
    .unwrap_err();
    assert_eq!(
        err,
        Unallocatable::NotTogether,
        "each fits alone, not all three: {err}"
    );
}

#[test]
fn all_takes_every_matching_device_or_nothing() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let mut devices = four_a10g();
    devices.push(mig("gpu-9-mig-1g", "1g.10gb"));
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", devices)]);
    let n1 = node("n1");
    let spec = claim(vec![exactly(
        "gpus",
        ask("gpu.nvidia.com", AllocationMode::All, &[]),
    )]);
    let got = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
    let in_use = InUse::from_claims(&[allocated_claim(&[id(NVIDIA, "n1", "gpu-2")], false)]);
    let err = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&spec]).unwrap_err();
    assert!(
        err.to_string().contains(
            "(class gpu.nvidia.com, all devices): the node has 4 matching devices, 3 free"
        ),
        "{err}"
    );
    // No matching device at all: a failure, not a success with nothing.
    let none = claim(vec![exactly(
        "gpus",
        ask("gpu.nvidia.com", AllocationMode::All, &["false"]),
    )]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&none]).unwrap_err();
    assert!(
        matches!(
            err,
            Unallocatable::NoFit {
                wanted: Wanted::All,
                matching: 0,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn first_available_falls_back_to_the_second_sub_request() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", four_a10g())]);
    let n1 = node("n1");
    let mut big = ask(
        "gpu.nvidia.com",
        AllocationMode::ExactCount(1),
        &["device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0"],
    );
    big.name = "big".into();
    let mut two = ask("gpu.nvidia.com", AllocationMode::ExactCount(2), &[]);
    two.name = "two-small".into();
    let spec = claim(vec![crate::model::DeviceRequest {
        name: "gpu".into(),
        first_available: true,
        asks: vec![big, two],
    }]);
    let got = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-0", "gpu-1"]);
    assert!(
        got[0]
            .devices
            .iter()
            .all(|d| &*d.request == "gpu/two-small")
    );
}

/// firstAvailable's preference: when both sub-requests could be met, the one listed first is allocated
/// (listed the other way round, the other is), by the allocator and by the plain one of `crate::oracle` alike.
#[test]
fn first_available_takes_the_first_sub_request_listed_when_several_fit() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let slices = [local_slice(NVIDIA, "n1", four_a10g())];
    let pools = Pools::new(&slices);
    let n1 = node("n1");
    let sub = |name: &str, count: u32| {
        let mut a = ask("gpu.nvidia.com", AllocationMode::ExactCount(count), &[]);
        a.name = name.into();
        a
    };
    let cases = [
        (vec![sub("one", 1), sub("two", 2)], "gpu/one", vec!["gpu-0"]),
        (
            vec![sub("two", 2), sub("one", 1)],
            "gpu/two",
            vec!["gpu-0", "gpu-1"],
        ),
    ];
    for (asks, chosen, devices) in cases {
        let spec = claim(vec![crate::model::DeviceRequest {
            name: "gpu".into(),
            first_available: true,
            asks,
        }]);
        let got = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap();
        assert_eq!(device_names(&got[0]), devices, "{chosen}");
        assert!(
            got[0].devices.iter().all(|d| &*d.request == chosen),
            "{got:?}"
        );
        let reached = oracle::reach(&slices, &n1);
        let selects = |a: &crate::model::DeviceAsk, d: &oracle::Reached| {
            classes.selects(a, &d.id.driver, d.device)
        };
        let held = std::collections::BTreeSet::new();
        let plain = oracle::allocate(
            &[&spec],
            &oracle::Ask {
                node: &n1,
                devices: &reached,
                in_use: &held,
                selects: &selects,
            },
        );
        let oracle::Verdict::Fits(plain) = plain else {
            panic!("the plain allocator refused {chosen}: {plain:?}");
        };
        assert_eq!(plain, got, "{chosen}");
    }
}

#[test]
fn match_attribute_keeps_requests_on_one_pcie_root() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let devices = vec![
        gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00"),
        gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:80"),
        gpu("gpu-2", "Tesla T4", "15Gi", "pci0000:80"),
    ];
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", devices)]);
    let n1 = node("n1");
    let t4 = "device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'";
    let mut spec = claim(vec![
        exact("a", "gpu.nvidia.com", 1, &[]),
        exact("b", "gpu.nvidia.com", 1, &[t4]),
    ]);
    let free = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap();
    assert_eq!(
        device_names(&free[0]),
        ["gpu-0", "gpu-2"],
        "unconstrained: the first device"
    );
    spec.constraints = vec![match_attribute(
        &["a", "b"],
        "resource.kubernetes.io",
        "pcieRoot",
    )];
    let got = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap();
    assert_eq!(
        device_names(&got[0]),
        ["gpu-1", "gpu-2"],
        "backtracked to the T4's root"
    );
    // The driver's own attributes are found by their fully qualified name.
    spec.constraints = vec![match_attribute(&[], NVIDIA, "productName")];
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap_err();
    assert_eq!(err, Unallocatable::NotTogether, "{err}");
}

#[test]
fn admin_access_uses_allocated_devices_without_taking_them() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let devices = vec![gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00")];
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", devices)]);
    let n1 = node("n1");
    let gpu0 = id(NVIDIA, "n1", "gpu-0");
    let in_use = InUse::from_claims(&[
        allocated_claim(std::slice::from_ref(&gpu0), false),
        allocated_claim(std::slice::from_ref(&gpu0), true),
    ]);
    assert!(in_use.contains(&gpu0));
    assert_eq!(
        InUse::from_claims(&[allocated_claim(std::slice::from_ref(&gpu0), true)]).len(),
        0
    );
    let mut admin = ask("gpu.nvidia.com", AllocationMode::ExactCount(1), &[]);
    admin.admin_access = true;
    let monitor = claim(vec![exactly("monitor", admin)]);
    let got = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&monitor]).unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-0"]);
    assert!(got[0].devices[0].admin_access);
    let mut after = in_use.clone();
    after.remove(&got[0]); // admin results were never counted: removing them changes nothing
    assert!(after.contains(&gpu0));
    let normal = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    // The device an admin holds is still in use for everyone else.
    let err = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &[&normal]).unwrap_err();
    assert!(
        matches!(
            err,
            Unallocatable::NoFit {
                matching: 1,
                free: 0,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn taints_need_tolerations() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let mut tainted = gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00");
    tainted.taints.push(DeviceTaint {
        key: "maintenance".into(),
        value: "true".into(),
        effect: DeviceTaintEffect::NoSchedule,
    });
    let mut informational = gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:00");
    informational.taints.push(DeviceTaint {
        key: "note".into(),
        value: "".into(),
        effect: DeviceTaintEffect::None,
    });
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", vec![tainted, informational])]);
    let n1 = node("n1");
    let one = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let got = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&one]).unwrap();
    assert_eq!(
        device_names(&got[0]),
        ["gpu-1"],
        "None taints are ignored, NoSchedule is not"
    );
    let two = claim(vec![exact("gpu", "gpu.nvidia.com", 2, &[])]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&two]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("the node has 2 matching devices, 1 free"),
        "{err}"
    );
    for (toleration, tolerated) in [
        (("maintenance", true, "", None), true),
        (
            (
                "maintenance",
                false,
                "true",
                Some(DeviceTaintEffect::NoSchedule),
            ),
            true,
        ),
        (("", true, "", None), true),
        (("maintenance", false, "false", None), false),
        (
            ("maintenance", true, "", Some(DeviceTaintEffect::NoExecute)),
            false,
        ),
    ] {
        let (key, exists, value, effect) = toleration;
        let mut tolerant = ask("gpu.nvidia.com", AllocationMode::ExactCount(2), &[]);
        tolerant.tolerations = vec![DeviceToleration {
            key: key.into(),
            exists,
            value: value.into(),
            effect,
        }];
        let spec = claim(vec![exactly("gpu", tolerant)]);
        let result = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]);
        assert_eq!(result.is_ok(), tolerated, "{toleration:?}");
    }
}

/// One A100's counters, the full GPU and two 1g.5gb MIG slices consuming them.
fn partitioned() -> Arc<crate::model::ResourceSlice> {
    let set = "gpu-0-counter-set";
    let full = consuming(
        gpu("gpu-0", "NVIDIA A100", "40Gi", "pci0000:00"),
        set,
        &[("memory", "40Gi"), ("slices", "7")],
    );
    let small = |n: &str| consuming(mig(n, "1g.5gb"), set, &[("memory", "5Gi"), ("slices", "1")]);
    let slice = local_slice(
        NVIDIA,
        "n1",
        vec![
            full,
            small("gpu-0-mig-1g.5gb-0"),
            small("gpu-0-mig-1g.5gb-1"),
        ],
    );
    let mut slice = Arc::unwrap_or_clone(slice);
    slice.shared_counters = vec![counter_set(set, &[("memory", "40Gi"), ("slices", "7")])];
    Arc::new(slice)
}

#[test]
fn partitionable_devices_share_counters() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[partitioned()]);
    let n1 = node("n1");
    let node_pools = pools.for_node(&n1);
    let whole = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let slice = claim(vec![exact("mig", "mig.nvidia.com", 1, &[])]);
    // Both at once: the full GPU leaves no counters for a slice.
    let err = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&whole, &slice]).unwrap_err();
    assert_eq!(err, Unallocatable::NotTogether);
    let two_slices = claim(vec![exact("mig", "mig.nvidia.com", 2, &[])]);
    assert!(allocate(&classes, &node_pools, &InUse::new(), &n1, &[&two_slices]).is_ok());

    // The full GPU allocated: no slice is available.
    let gpu_taken = InUse::from_claims(&[allocated_claim(&[id(NVIDIA, "n1", "gpu-0")], false)]);
    let err = allocate(&classes, &node_pools, &gpu_taken, &n1, &[&slice]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("the node has 2 matching devices, 0 free"),
        "{err}"
    );
    assert_eq!(used(&node_pools, &gpu_taken), 1.0);

    // A slice allocated: the full GPU is not available, the other slice is.
    let mig_taken = InUse::from_claims(&[allocated_claim(
        &[id(NVIDIA, "n1", "gpu-0-mig-1g.5gb-0")],
        false,
    )]);
    let err = allocate(&classes, &node_pools, &mig_taken, &n1, &[&whole]).unwrap_err();
    assert!(
        matches!(
            err,
            Unallocatable::NoFit {
                matching: 1,
                free: 0,
                ..
            }
        ),
        "{err:?}"
    );
    let got = allocate(&classes, &node_pools, &mig_taken, &n1, &[&slice]).unwrap();
    assert_eq!(device_names(&got[0]), ["gpu-0-mig-1g.5gb-1"]);
    // memory 5/40, slices 1/7: the set's highest share, over the one set its devices consume.
    assert!((used(&node_pools, &mig_taken) - 1.0 / 7.0).abs() < 1e-9);
}

/// The node's utilization: its busiest pool's.
fn used(pools: &NodePools, in_use: &InUse) -> f64 {
    utilization(pools, in_use).expect("a node-local pool").used
}

#[test]
fn utilization_is_allocated_over_total_devices() {
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", four_a10g())]);
    let node_pools = pools.for_node(&node("n1"));
    assert_eq!(used(&node_pools, &InUse::new()), 0.0);
    let in_use = InUse::from_claims(&[allocated_claim(
        &[id(NVIDIA, "n1", "gpu-0"), id(NVIDIA, "n1", "gpu-3")],
        false,
    )]);
    assert_eq!(used(&node_pools, &in_use), 0.5);
}

#[test]
fn utilization_names_the_busiest_pool() {
    const OTHER: &str = "gpu.example.com";
    let pools = Pools::new(&[
        local_slice(NVIDIA, "n1", four_a10g()),
        local_slice(OTHER, "n1", four_a10g()),
    ]);
    let node_pools = pools.for_node(&node("n1"));
    // Nothing allocated: the first pool, unused.
    let idle = utilization(&node_pools, &InUse::new()).unwrap();
    assert_eq!(idle.used, 0.0);
    // Two of NVIDIA's four, three of the other driver's: the other's pool decides.
    let in_use = InUse::from_claims(&[
        allocated_claim(
            &[id(NVIDIA, "n1", "gpu-0"), id(NVIDIA, "n1", "gpu-1")],
            false,
        ),
        allocated_claim(
            &[
                id(OTHER, "n1", "gpu-0"),
                id(OTHER, "n1", "gpu-1"),
                id(OTHER, "n1", "gpu-2"),
            ],
            false,
        ),
    ]);
    let busiest = utilization(&node_pools, &in_use).unwrap();
    assert_eq!(
        (&*busiest.driver, &*busiest.pool, busiest.used),
        (OTHER, "n1", 0.75)
    );
    assert_eq!(busiest.to_string(), "75% in pool gpu.example.com/n1");
    // Another node's pools are not this one's: it has no utilization of devices.
    assert_eq!(utilization(&pools.for_node(&node("n2")), &in_use), None);
}

#[test]
fn binding_conditions_and_more_than_32_devices() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let mut waiting = gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00");
    waiting.binding_conditions = true;
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", vec![waiting])]);
    let n1 = node("n1");
    let one = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    // A device with binding conditions is never picked: the stable allocator does not support them.
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&one]).unwrap_err();
    assert!(
        matches!(err, Unallocatable::NoFit { matching: 0, .. }),
        "{err:?}"
    );
    let many = claim(vec![exact("gpu", "gpu.nvidia.com", 33, &[])]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&many]).unwrap_err();
    assert!(err.never_fits());
    assert_eq!(
        err.to_string(),
        "claim #1: number of requested devices 33 exceeds the claim limit of 32"
    );
    let unknown = claim(vec![exact("gpu", "nope.example.com", 1, &[])]);
    let err = allocate(
        &classes,
        &pools.for_node(&n1),
        &InUse::new(),
        &n1,
        &[&unknown],
    )
    .unwrap_err();
    assert!(err.never_fits());
    assert_eq!(
        err.to_string(),
        "request \"gpu\": device class nope.example.com not found"
    );
}

#[test]
fn node_selector_slices_reach_labelled_nodes_and_merge_into_the_allocation() {
    let classes = DeviceClasses::new(&[class("nic", &["device.driver == 'nic.example.com'"])]);
    let zone_a = NodeSelector {
        terms: vec![NodeSelectorTerm {
            expressions: vec![Requirement {
                key: "zone".into(),
                operator: Operator::In,
                values: vec!["a".into()],
            }],
            fields: vec![],
        }],
    };
    let pools = Pools::new(&[
        slice(
            "nic.example.com",
            "fabric",
            pool("fabric", 0, 1),
            NodeScope::Selector(zone_a),
            vec![device("nic-0")],
        ),
        slice(
            "nic.example.com",
            "any",
            pool("any", 0, 1),
            NodeScope::All,
            vec![device("nic-1")],
        ),
    ]);
    let mut in_a = node("n1");
    in_a.labels = Labels::from([("zone".to_string(), "a".to_string())]);
    let in_b = node("n2");
    assert_eq!(pools.for_node(&in_a).device_count(), 2);
    assert_eq!(pools.for_node(&in_b).device_count(), 1);
    let spec = claim(vec![exact("nic", "nic", 1, &[])]);
    let got = allocate(
        &classes,
        &pools.for_node(&in_a),
        &InUse::new(),
        &in_a,
        &[&spec],
    )
    .unwrap();
    // Pools are in (driver, pool) order: "any" before "fabric".
    assert_eq!(device_names(&got[0]), ["nic-1"]);
    assert_eq!(
        got[0].node_selector, None,
        "allNodes devices are usable anywhere"
    );
    let both = claim(vec![exact("nic", "nic", 2, &[])]);
    let got = allocate(
        &classes,
        &pools.for_node(&in_a),
        &InUse::new(),
        &in_a,
        &[&both],
    )
    .unwrap();
    let selector = got[0].node_selector.clone().expect("the fabric's zone");
    assert!(allocation_usable_on(&got[0], &in_a));
    assert!(!allocation_usable_on(&got[0], &in_b));
    assert_eq!(selector.terms.len(), 1);
}

#[test]
fn what_a_loop_shares_across_threads_is_send_and_sync() {
    fn shared<T: Send + Sync>() {}
    shared::<DeviceClasses>();
    shared::<Pools>();
    shared::<crate::simulator::dra::pools::NodePools>();
    shared::<InUse>();
    shared::<Unallocatable>();
}
