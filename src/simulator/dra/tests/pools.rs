//! Pools: only the newest generation counts, an incomplete pool offers nothing, an invalid one is reported.

use super::fixtures::*;
use crate::model::NodeScope;
use crate::simulator::dra::allocation::allocate::allocate;
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::Pools;
use crate::simulator::dra::unallocatable::Unallocatable;

#[test]
fn incomplete_pool_offers_nothing() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let n1 = node("n1");
    let first_of_two = slice(
        NVIDIA,
        "s0",
        pool("n1", 0, 2),
        NodeScope::Node("n1".into()),
        vec![gpu("gpu-0", "NVIDIA A10G", "23028Mi", "pci0000:00")],
    );
    let pools = Pools::new(std::slice::from_ref(&first_of_two));
    let node_pools = pools.for_node(&n1);
    assert!(!node_pools.is_empty(), "the node reaches the pool");
    assert_eq!(
        node_pools.device_count(),
        0,
        "but may take none of its devices"
    );
    let one = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let err = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&one]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("the node has 0 matching devices, 0 free"),
        "{err}"
    );
    let all = claim(vec![exactly(
        "gpus",
        ask("gpu.nvidia.com", crate::model::AllocationMode::All, &[]),
    )]);
    let err = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&all]).unwrap_err();
    assert!(matches!(err, Unallocatable::PoolNotReady { .. }), "{err}");
    assert!(!err.never_fits());
    assert_eq!(pools.unusable().len(), 1);

    let second = slice(
        NVIDIA,
        "s1",
        pool("n1", 0, 2),
        NodeScope::Node("n1".into()),
        vec![gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:00")],
    );
    let pools = Pools::new(&[first_of_two, second]);
    assert_eq!(
        pools.for_node(&n1).device_count(),
        2,
        "complete once both are there"
    );
}

#[test]
fn newer_generation_wins() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let n1 = node("n1");
    let scope = || NodeScope::Node("n1".into());
    let old = slice(
        NVIDIA,
        "s",
        pool("n1", 0, 1),
        scope(),
        vec![gpu("gpu-0", "NVIDIA A10G", "23028Mi", "r")],
    );
    let new = slice(
        NVIDIA,
        "s",
        pool("n1", 1, 1),
        scope(),
        vec![gpu("gpu-0", "Tesla T4", "15Gi", "r")],
    );
    let pools = Pools::new(&[new.clone(), old.clone()]);
    assert_eq!(
        pools.for_node(&n1).device_count(),
        1,
        "the old slice's device is not counted twice"
    );
    let t4 = claim(vec![exact(
        "gpu",
        "gpu.nvidia.com",
        1,
        &["device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'"],
    )]);
    assert!(allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&t4]).is_ok());
    let a10g = claim(vec![exact(
        "gpu",
        "gpu.nvidia.com",
        1,
        &["device.attributes['gpu.nvidia.com'].productName == 'NVIDIA A10G'"],
    )]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&a10g]).unwrap_err();
    // The older generation's A10G is not offered.
    assert!(
        matches!(
            err,
            Unallocatable::NoFit {
                matching: 0,
                free: 0,
                ..
            }
        ),
        "{err:?}"
    );
    // A newer generation still being published hides the older complete one.
    let newer_incomplete = slice(NVIDIA, "s2", pool("n1", 2, 2), scope(), vec![]);
    let pools = Pools::new(&[new, old, newer_incomplete]);
    assert_eq!(pools.for_node(&n1).device_count(), 0);
}

#[test]
fn invalid_pools_are_reported_when_nothing_fits() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let n1 = node("n1");
    let twice = vec![
        gpu("gpu-0", "NVIDIA A10G", "23028Mi", "r"),
        gpu("gpu-0", "NVIDIA A10G", "23028Mi", "r"),
    ];
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", twice)]);
    let one = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&one]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "cannot allocate all claims: invalid resource pools were encountered: gpu.nvidia.com/n1: \
         duplicate device name \"gpu-0\""
    );
    let bad_counter = vec![consuming(
        gpu("gpu-0", "A", "1", "r"),
        "missing-set",
        &[("memory", "1")],
    )];
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", bad_counter)]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&one]).unwrap_err();
    assert!(
        err.to_string()
            .contains("consumes counter set \"missing-set\""),
        "{err}"
    );
}

#[test]
fn per_device_node_selection_reaches_each_device_s_node() {
    let mut on_n1 = device("d1");
    on_n1.scope = Some(NodeScope::Node("n1".into()));
    let mut everywhere = device("d2");
    everywhere.scope = Some(NodeScope::All);
    let pools = Pools::new(&[slice(
        "x.example.com",
        "s",
        pool("p", 0, 1),
        NodeScope::PerDevice,
        vec![on_n1, everywhere],
    )]);
    assert_eq!(pools.for_node(&node("n1")).device_count(), 2);
    assert_eq!(pools.for_node(&node("n2")).device_count(), 1);
}
