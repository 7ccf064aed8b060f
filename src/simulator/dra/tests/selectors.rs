//! CEL selectors as NVIDIA's examples write them: product names, memory quantities, driver versions, and
//! what a broken selector does.

use super::fixtures::*;
use crate::model::{AllocationMode, AttrValue, Device};
use crate::simulator::dra::allocation::allocate::allocate;
use crate::simulator::dra::cel::selector::SelectorErrorKind;
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::Pools;
use crate::simulator::dra::unallocatable::Unallocatable;
use std::sync::Arc;

/// The names of the devices (of one node holding `devices`) that pass `selector` on top of the GPU class,
/// through an "All" request; empty when none does.
fn matching(devices: Vec<Device>, selector: &str) -> Result<Vec<String>, Unallocatable> {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", devices)]);
    let n1 = node("n1");
    let spec = claim(vec![exactly(
        "gpu",
        ask("gpu.nvidia.com", AllocationMode::All, &[selector]),
    )]);
    match allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]) {
        Ok(allocations) => Ok(device_names(&allocations[0])
            .into_iter()
            .map(String::from)
            .collect()),
        Err(Unallocatable::NoFit { matching: 0, .. }) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn a10g_and_t4() -> Vec<Device> {
    vec![
        gpu("gpu-0", "Tesla T4", "15Gi", "pci0000:00"),
        gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:00"),
    ]
}

#[test]
fn product_name_lower_ascii_matches() {
    let selector =
        "device.attributes['gpu.nvidia.com'].productName.lowerAscii().matches('^.*a10g.*$')";
    assert_eq!(matching(a10g_and_t4(), selector).unwrap(), ["gpu-1"]);
    let upper = "device.attributes['gpu.nvidia.com'].productName.upperAscii() == 'TESLA T4'";
    assert_eq!(matching(a10g_and_t4(), upper).unwrap(), ["gpu-0"]);
}

#[test]
fn memory_quantity_compare() {
    let at_least_20gi = "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('20Gi')) >= 0";
    assert_eq!(matching(a10g_and_t4(), at_least_20gi).unwrap(), ["gpu-1"]);
    let exactly_15gi = "device.capacity['gpu.nvidia.com'].memory == quantity('15360Mi')";
    assert_eq!(
        matching(a10g_and_t4(), exactly_15gi).unwrap(),
        ["gpu-0"],
        "== is semantic"
    );
    let arithmetic = "device.capacity['gpu.nvidia.com'].memory.sub(quantity('15Gi')).isGreaterThan(quantity('0')) \
                      && quantity('1Gi').add(1).asInteger() == 1073741825";
    assert_eq!(matching(a10g_and_t4(), arithmetic).unwrap(), ["gpu-1"]);
    let none = "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('40Gi'))";
    assert!(matching(a10g_and_t4(), none).unwrap().is_empty());
}

#[test]
fn semver_compare() {
    let mut old = gpu("gpu-0", "Tesla T4", "15Gi", "pci0000:00");
    old.attributes.insert(
        qn(NVIDIA, "driverVersion"),
        AttrValue::Version("535.54.3".into()),
    );
    let new = gpu("gpu-1", "NVIDIA A10G", "23028Mi", "pci0000:00"); // 570.133.20
    let devices = || vec![old.clone(), new.clone()];
    let recent =
        "device.attributes['gpu.nvidia.com'].driverVersion.compareTo(semver('550.0.0')) >= 0";
    assert_eq!(matching(devices(), recent).unwrap(), ["gpu-1"]);
    let older =
        "device.attributes['gpu.nvidia.com'].driverVersion.isLessThan(semver('v550', true))";
    assert_eq!(matching(devices(), older).unwrap(), ["gpu-0"]);
    let parts = "device.attributes['gpu.nvidia.com'].driverVersion.major() == 570 \
                 && device.attributes['gpu.nvidia.com'].cudaComputeCapability.minor() == 6 \
                 && semver('1.2.3+a') == semver('1.2.3+b')";
    assert_eq!(matching(devices(), parts).unwrap(), ["gpu-1"]);
}

#[test]
fn unknown_domains_are_empty_and_bind_works() {
    let other = "device.attributes['other.example.com'].size() == 0 \
                 && cel.bind(nv, device.attributes['gpu.nvidia.com'], nv.productName == 'Tesla T4')";
    assert_eq!(matching(a10g_and_t4(), other).unwrap(), ["gpu-0"]);
    let guarded = "has(device.attributes['gpu.nvidia.com'].nope) \
                   || device.attributes['gpu.nvidia.com'].?nope.orValue('x') == 'x'";
    assert_eq!(
        matching(a10g_and_t4(), guarded).unwrap(),
        ["gpu-0", "gpu-1"]
    );
}

#[test]
fn compile_error_says_so_and_other_claims_still_allocate() {
    let classes = DeviceClasses::new(&nvidia_classes());
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", a10g_and_t4())]);
    let n1 = node("n1");
    let node_pools = pools.for_node(&n1);
    let bad = claim(vec![exact("broken", "gpu.nvidia.com", 1, &["1 +"])]);
    let good = claim(vec![exact("gpu", "gpu.nvidia.com", 1, &[])]);
    let err = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&good, &bad]).unwrap_err();
    assert!(err.never_fits(), "{err}");
    let Unallocatable::Selector { error, .. } = &err else {
        panic!("expected a selector error, got {err}");
    };
    assert_eq!(error.kind, SelectorErrorKind::Compile);
    let text = err.to_string();
    assert!(
        text.starts_with("claim #2, request \"broken\": selector \"1 +\": CEL compile error:"),
        "{text}"
    );
    // The error is remembered for that selector only: the node still allocates other claims.
    let allocations = allocate(&classes, &node_pools, &InUse::new(), &n1, &[&good]).unwrap();
    assert_eq!(device_names(&allocations[0]), ["gpu-0"]);
}

#[test]
fn runtime_errors_and_non_bool_results_are_reported_not_matched() {
    let missing = matching(
        a10g_and_t4(),
        "device.attributes['gpu.nvidia.com'].nope == 'x'",
    )
    .unwrap_err();
    let text = missing.to_string();
    assert!(
        text.contains("CEL runtime error") && text.contains("nope"),
        "{text}"
    );
    assert!(text.contains("has()"), "the scheduler's hint: {text}");
    assert!(
        !missing.never_fits(),
        "another node's devices may have the attribute"
    );
    let not_bool = matching(
        a10g_and_t4(),
        "device.attributes['gpu.nvidia.com'].productName",
    )
    .unwrap_err();
    assert!(
        not_bool
            .to_string()
            .contains("could not be converted to bool"),
        "{not_bool}"
    );
    // A class whose selector fails says it is the class's.
    let classes = DeviceClasses::new(&[class("broken", &["device.nope"])]);
    assert_eq!(
        classes.compile_errors(),
        vec![],
        "it compiles; it fails when run"
    );
    let pools = Pools::new(&[local_slice(NVIDIA, "n1", a10g_and_t4())]);
    let n1 = node("n1");
    let spec = claim(vec![exact("gpu", "broken", 1, &[])]);
    let err = allocate(&classes, &pools.for_node(&n1), &InUse::new(), &n1, &[&spec]).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("request \"gpu\": class broken: selector"),
        "{err}"
    );
}

#[test]
fn a_bad_regex_is_a_runtime_error_of_its_selector() {
    let selector = "device.attributes['gpu.nvidia.com'].productName.matches('(a10g')";
    let err = matching(a10g_and_t4(), selector).unwrap_err();
    let Unallocatable::Selector { error, .. } = &err else {
        panic!("expected a selector error, got {err}");
    };
    assert_eq!(error.kind, SelectorErrorKind::Runtime);
    assert_eq!(error.expression.as_ref(), selector);
    assert!(error.message.contains("'(a10g' not a valid regex"), "{err}");
    // Global form, and a good pattern after the bad one is cached: each selector gets its own answer.
    let global = "matches(device.attributes['gpu.nvidia.com'].productName, '(?i)^nvidia a10g$')";
    assert_eq!(matching(a10g_and_t4(), global).unwrap(), ["gpu-1"]);
    let again = matching(a10g_and_t4(), selector).unwrap_err();
    assert!(
        matches!(&again, Unallocatable::Selector { error, .. } if error.kind == SelectorErrorKind::Runtime),
        "{again:?}"
    );
}

#[test]
fn a_version_that_is_not_semver_fails_the_selectors_that_reach_it() {
    let mut bad = gpu("gpu-0", "Tesla T4", "15Gi", "pci0000:00");
    bad.attributes.insert(
        qn(NVIDIA, "driverVersion"),
        AttrValue::Version("570.1".into()),
    );
    let err = matching(vec![bad], "true").unwrap_err();
    assert!(err.to_string().contains("invalid semver"), "{err}");
}

#[test]
fn class_compile_errors_are_kept() {
    let classes = DeviceClasses::new(&[
        class("broken", &["device.driver =="]),
        nvidia_classes()[0].clone(),
    ]);
    let errors = classes.compile_errors();
    assert_eq!(errors.len(), 1);
    assert_eq!(&*errors[0].0, "broken");
    assert!(classes.get("gpu.nvidia.com").is_some());
    let _: &Arc<_> = classes.get("broken").unwrap();
}
