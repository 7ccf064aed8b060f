//! The allocator against a plain exhaustive search over small random nodes (ExactCount requests, some
//! with firstAvailable, attribute selectors, matchAttribute, devices in use): whenever some assignment of
//! devices meets every request, selector and constraint, `allocate` finds one (and what it finds is valid);
//! when none exists, it fails.

use super::fixtures::*;
use crate::model::{
    AllocationMode, AttrValue, ClaimSpec, Device, DeviceAsk, DeviceId, DeviceRequest, ResourceSlice,
};
use crate::simulator::dra::allocate::allocate;
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::Pools;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

const DRIVER: &str = "drv.example.com";

/// A random device: attribute `a` always, `b` sometimes.
#[derive(Clone, Debug)]
struct Dev {
    pool: usize,
    a: i64,
    b: Option<i64>,
    in_use: bool,
}

/// One way to meet a request: `count` devices, optionally with `a == value`.
#[derive(Clone, Debug)]
struct Sub {
    count: u32,
    a: Option<i64>,
}

/// A request: `exactly` (one sub) or `firstAvailable` (two).
#[derive(Clone, Debug)]
struct Req {
    subs: Vec<Sub>,
}

/// A claim: requests, optionally all matching attribute `a` or `b`.
#[derive(Clone, Debug)]
struct Claim {
    requests: Vec<Req>,
    match_on: Option<&'static str>,
}

fn dev() -> impl Strategy<Value = Dev> {
    (
        0..2usize,
        0..3i64,
        proptest::option::of(0..2i64),
        proptest::bool::weighted(0.2),
    )
        .prop_map(|(pool, a, b, in_use)| Dev { pool, a, b, in_use })
}

fn req() -> impl Strategy<Value = Req> {
    let sub = (1..3u32, proptest::option::of(0..3i64)).prop_map(|(count, a)| Sub { count, a });
    proptest::collection::vec(sub, 1..3).prop_map(|subs| Req { subs })
}

fn claim_strategy() -> impl Strategy<Value = Claim> {
    (
        proptest::collection::vec(req(), 1..3),
        prop_oneof![Just(None), Just(Some("a")), Just(Some("b"))],
    )
        .prop_map(|(requests, match_on)| Claim { requests, match_on })
}

fn attr(d: &Dev, which: &str) -> Option<i64> {
    if which == "a" { Some(d.a) } else { d.b }
}

/// Plain search: each request picks any of its subs; then every slot, in order, takes any unused free
/// device passing its selector; at the end every claim's constraint is checked.
fn exists(devs: &[Dev], claims: &[Claim]) -> bool {
    let requests: Vec<(usize, &Req)> = (claims.iter().enumerate())
        .flat_map(|(c, claim)| claim.requests.iter().map(move |r| (c, r)))
        .collect();
    let mut choice = vec![0usize; requests.len()];
    loop {
        let slots: Vec<(usize, &Sub)> = (requests.iter().zip(&choice))
            .flat_map(|(&(c, r), &k)| (0..r.subs[k].count).map(move |_| (c, &r.subs[k])))
            .collect();
        if assign(devs, claims, &slots, &mut Vec::new()) {
            return true;
        }
        // The next combination of sub choices, as an odometer.
        let mut i = 0;
        loop {
            let Some(&(_, r)) = requests.get(i) else {
                return false;
            };
            choice[i] += 1;
            if choice[i] < r.subs.len() {
                break;
            }
            choice[i] = 0;
            i += 1;
        }
    }
}

fn assign(
    devs: &[Dev],
    claims: &[Claim],
    slots: &[(usize, &Sub)],
    chosen: &mut Vec<(usize, usize)>,
) -> bool {
    let Some(&(c, r)) = slots.get(chosen.len()) else {
        return claims.iter().enumerate().all(|(ci, claim)| {
            let Some(which) = claim.match_on else {
                return true;
            };
            let values: Vec<Option<i64>> = (chosen.iter())
                .filter(|(cc, _)| *cc == ci)
                .map(|(_, d)| attr(&devs[*d], which))
                .collect();
            values.iter().all(|v| v.is_some() && *v == values[0])
        });
    };
    for (d, dev) in devs.iter().enumerate() {
        if dev.in_use || chosen.iter().any(|(_, x)| *x == d) || r.a.is_some_and(|a| a != dev.a) {
            continue;
        }
        chosen.push((c, d));
        if assign(devs, claims, slots, chosen) {
            return true;
        }
        chosen.pop();
    }
    false
}

fn slices(devs: &[Dev]) -> Vec<Arc<ResourceSlice>> {
    (0..2)
        .filter_map(|p| {
            let devices: Vec<Device> = (devs.iter().enumerate())
                .filter(|(_, d)| d.pool == p)
                .map(|(i, d)| {
                    let mut device = device(&format!("dev-{i}"));
                    device
                        .attributes
                        .insert(qn(DRIVER, "a"), AttrValue::Int(d.a));
                    if let Some(b) = d.b {
                        device.attributes.insert(qn(DRIVER, "b"), AttrValue::Int(b));
                    }
                    device
                })
                .collect();
            (!devices.is_empty())
                .then(|| local_slice(DRIVER, "n1", devices))
                .map(|s| {
                    let mut s = Arc::unwrap_or_clone(s);
                    s.pool.name = format!("pool-{p}").into();
                    Arc::new(s)
                })
        })
        .collect()
}

fn specs(claims: &[Claim]) -> Vec<ClaimSpec> {
    (claims.iter())
        .map(|c| {
            let requests = (c.requests.iter().enumerate())
                .map(|(i, r)| {
                    let asks: Vec<DeviceAsk> = (r.subs.iter().enumerate())
                        .map(|(j, sub)| {
                            let selector = sub
                                .a
                                .map(|a| format!("device.attributes['{DRIVER}'].a == {a}"));
                            let selectors: Vec<&str> =
                                selector.iter().map(String::as_str).collect();
                            let mut ask =
                                ask("dev", AllocationMode::ExactCount(sub.count), &selectors);
                            ask.name = format!("s{j}").into();
                            ask
                        })
                        .collect();
                    DeviceRequest {
                        name: format!("r{i}").into(),
                        first_available: asks.len() > 1,
                        asks,
                    }
                })
                .collect();
            let mut spec = claim(requests);
            if let Some(which) = c.match_on {
                spec.constraints = vec![match_attribute(&[], DRIVER, which)];
            }
            spec
        })
        .collect()
}

fn index(id: &DeviceId) -> usize {
    id.device.trim_start_matches("dev-").parse().unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn allocate_agrees_with_a_plain_exhaustive_search(
        devs in proptest::collection::vec(dev(), 0..6),
        claims in proptest::collection::vec(claim_strategy(), 1..3),
    ) {
        let classes = DeviceClasses::new(&[class("dev", &["device.driver == 'drv.example.com'"])]);
        let pools = Pools::new(&slices(&devs));
        let n1 = node("n1");
        let held: Vec<DeviceId> = (devs.iter().enumerate())
            .filter(|(_, d)| d.in_use)
            .map(|(i, d)| id(DRIVER, &format!("pool-{}", d.pool), &format!("dev-{i}")))
            .collect();
        let in_use = InUse::from_claims(&[allocated_claim(&held, false)]);
        let specs = specs(&claims);
        let refs: Vec<&ClaimSpec> = specs.iter().collect();
        let result = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &refs);
        let expected = exists(&devs, &claims);
        prop_assert_eq!(result.is_ok(), expected, "{:?}", result);
        let Ok(allocations) = result else { return Ok(()) };
        prop_assert_eq!(allocations.len(), claims.len());
        let mut used = BTreeSet::new();
        for (allocation, claim) in allocations.iter().zip(&claims) {
            for (i, r) in claim.requests.iter().enumerate() {
                // Which sub-request was chosen: results name it `r<i>/s<j>` (`r<i>` for exactly).
                let names: Vec<String> = if r.subs.len() > 1 {
                    (0..r.subs.len()).map(|j| format!("r{i}/s{j}")).collect()
                } else {
                    vec![format!("r{i}")]
                };
                let chosen: BTreeSet<usize> = (allocation.devices.iter())
                    .filter_map(|d| names.iter().position(|n| *n == *d.request))
                    .collect();
                prop_assert_eq!(chosen.len(), 1, "one sub-request of r{} chosen", i);
                let j = *chosen.first().unwrap();
                let sub = &r.subs[j];
                let mine: Vec<usize> = (allocation.devices.iter())
                    .filter(|d| *d.request == *names[j])
                    .map(|d| index(&d.device))
                    .collect();
                prop_assert_eq!(mine.len(), sub.count as usize);
                for d in mine {
                    prop_assert!(!devs[d].in_use, "dev-{} is in use", d);
                    prop_assert!(sub.a.is_none_or(|a| a == devs[d].a), "dev-{} fails the selector", d);
                    prop_assert!(used.insert(d), "dev-{} used twice", d);
                }
            }
            if let Some(which) = claim.match_on {
                let values: BTreeSet<Option<i64>> = (allocation.devices.iter())
                    .map(|d| attr(&devs[index(&d.device)], which))
                    .collect();
                prop_assert!(values.len() == 1 && !values.contains(&None), "constraint on {}: {:?}", which, values);
            }
        }
    }
}

/// The cases proptest saved for this file replay into the strategy of the test above (its arguments, as it
/// writes them).
#[test]
fn the_saved_cases_replay() {
    let cases = (
        proptest::collection::vec(dev(), 0..6),
        proptest::collection::vec(claim_strategy(), 1..3),
    );
    let replayed = crate::saved_seeds::replay(file!(), &["devs", "claims"], cases, &[]);
    assert_eq!(replayed, crate::saved_seeds::count(file!()));
}
