//! The allocator against the plain one of `crate::oracle` (every assignment tried in the scheduler's order,
//! each rule checked on the whole) over small random nodes: ExactCount and All requests, firstAvailable,
//! admin access, attribute selectors, matchAttribute, device taints and tolerations, shared counters, devices
//! in use. Whenever some assignment meets every rule, `allocate` finds one, and picks the same sub-request of
//! each firstAvailable request as the first assignment in that order does (firstAvailable's preference);
//! when none exists, it fails.

use super::fixtures::*;
use crate::model::{
    AllocationMode, AttrValue, ClaimSpec, CounterConsumption, CounterSet, Device, DeviceAsk,
    DeviceId, DeviceRequest, DeviceTaint, DeviceTaintEffect, DeviceToleration, Quantity,
    ResourceSlice,
};
use crate::oracle::{self, Ask, Verdict};
use crate::simulator::dra::allocation::allocate::allocate;
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::pools::Pools;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

const DRIVER: &str = "drv.example.com";

/// A random device: attribute `a` always, `b` sometimes; a NoSchedule taint sometimes; sometimes a partition
/// taking `takes` of its pool's counter `mem` (3 a pool).
#[derive(Clone, Debug)]
struct Dev {
    pool: usize,
    a: i64,
    b: Option<i64>,
    in_use: bool,
    tainted: bool,
    takes: Option<i64>,
}

/// One way to meet a request: `count` devices (all matching ones with `all`), optionally with `a == value`,
/// tolerating the taint or not.
#[derive(Clone, Debug)]
struct Sub {
    count: u32,
    a: Option<i64>,
    all: bool,
    tolerates: bool,
}

/// A request: `exactly` (one sub, with admin access sometimes) or `firstAvailable` (two).
#[derive(Clone, Debug)]
struct Req {
    subs: Vec<Sub>,
    admin: bool,
}

/// A claim: requests, optionally all matching attribute `a` or `b`.
#[derive(Clone, Debug)]
struct Claim {
    requests: Vec<Req>,
    match_on: Option<&'static str>,
}

fn dev() -> impl Strategy<Value = Dev> {
    (
        (0..2usize, 0..3i64, proptest::option::of(0..2i64)),
        proptest::bool::weighted(0.2),
        proptest::bool::weighted(0.2),
        proptest::option::weighted(0.3, 1..3i64),
    )
        .prop_map(|((pool, a, b), in_use, tainted, takes)| Dev {
            pool,
            a,
            b,
            in_use,
            tainted,
            takes,
        })
}

fn req() -> impl Strategy<Value = Req> {
    let sub = (
        1..3u32,
        proptest::option::of(0..3i64),
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(count, a, all, tolerates)| Sub {
            count,
            a,
            all,
            tolerates,
        });
    (
        proptest::collection::vec(sub, 1..3),
        proptest::bool::weighted(0.15),
    )
        .prop_map(|(subs, admin)| Req {
            admin: admin && subs.len() == 1,
            subs,
        })
}

fn claim_strategy() -> impl Strategy<Value = Claim> {
    (
        proptest::collection::vec(req(), 1..3),
        prop_oneof![Just(None), Just(Some("a")), Just(Some("b"))],
    )
        .prop_map(|(requests, match_on)| Claim { requests, match_on })
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
                    if d.tainted {
                        device.taints.push(DeviceTaint {
                            key: "t".into(),
                            value: "x".into(),
                            effect: DeviceTaintEffect::NoSchedule,
                        });
                    }
                    if let Some(takes) = d.takes {
                        device.consumes.push(CounterConsumption {
                            counter_set: "s".into(),
                            counters: [(
                                "mem".into(),
                                Quantity::from_millis(i128::from(takes) * 1000),
                            )]
                            .into(),
                        });
                    }
                    device
                })
                .collect();
            (!devices.is_empty())
                .then(|| local_slice(DRIVER, "n1", devices))
                .map(|s| {
                    let mut s = Arc::unwrap_or_clone(s);
                    s.pool.name = format!("pool-{p}").into();
                    s.shared_counters = vec![CounterSet {
                        name: "s".into(),
                        counters: [("mem".into(), Quantity::from_millis(3000))].into(),
                    }];
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
                            let mode = match sub.all {
                                true => AllocationMode::All,
                                false => AllocationMode::ExactCount(sub.count),
                            };
                            let mut ask = ask("dev", mode, &selectors);
                            ask.name = format!("s{j}").into();
                            ask.admin_access = r.admin;
                            if sub.tolerates {
                                ask.tolerations.push(DeviceToleration {
                                    key: "t".into(),
                                    exists: true,
                                    value: "".into(),
                                    effect: None,
                                });
                            }
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

/// Which sub-request of each request (in claims' order) the allocation chose: results name it
/// `r<i>/s<j>` (`r<i>` for exactly).
fn chosen(allocations: &[crate::model::Allocation], claims: &[Claim]) -> Vec<Option<usize>> {
    let mut out = Vec::new();
    for (allocation, claim) in allocations.iter().zip(claims) {
        for (i, r) in claim.requests.iter().enumerate() {
            let names: Vec<String> = match r.subs.len() > 1 {
                true => (0..r.subs.len()).map(|j| format!("r{i}/s{j}")).collect(),
                false => vec![format!("r{i}")],
            };
            let picked: BTreeSet<usize> = (allocation.devices.iter())
                .filter_map(|d| names.iter().position(|n| *n == *d.request))
                .collect();
            out.push((picked.len() == 1).then(|| *picked.first().unwrap()));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn allocate_agrees_with_the_plain_allocator_and_prefers_as_it_does(
        devs in proptest::collection::vec(dev(), 0..6),
        claims in proptest::collection::vec(claim_strategy(), 1..3),
    ) {
        agrees_with_the_plain_allocator(&devs, &claims)?;
    }
}

/// `allocate` over `devs` for `claims` finds an allocation exactly when the plain allocator does, picks the
/// same sub-request of each firstAvailable request, and takes a device in use only with admin access.
fn agrees_with_the_plain_allocator(devs: &[Dev], claims: &[Claim]) -> Result<(), TestCaseError> {
    let classes = DeviceClasses::new(&[class("dev", &["device.driver == 'drv.example.com'"])]);
    let slices = slices(devs);
    let pools = Pools::new(&slices);
    let n1 = node("n1");
    let held: Vec<DeviceId> = (devs.iter().enumerate())
        .filter(|(_, d)| d.in_use)
        .map(|(i, d)| id(DRIVER, &format!("pool-{}", d.pool), &format!("dev-{i}")))
        .collect();
    let in_use = InUse::from_claims(&[allocated_claim(&held, false)]);
    let specs = specs(claims);
    let refs: Vec<&ClaimSpec> = specs.iter().collect();
    let result = allocate(&classes, &pools.for_node(&n1), &in_use, &n1, &refs);
    let reached = oracle::reach(&slices, &n1);
    let selects =
        |ask: &DeviceAsk, d: &oracle::Reached| classes.selects(ask, &d.id.driver, d.device);
    let held: BTreeSet<DeviceId> = held.into_iter().collect();
    let plain = oracle::allocate(
        &refs,
        &Ask {
            node: &n1,
            devices: &reached,
            in_use: &held,
            selects: &selects,
        },
    );
    let expected = match plain {
        Verdict::Fits(allocations) => Some(allocations),
        Verdict::Refused => None,
        Verdict::TooLarge => unreachable!("six devices are far under the bound"),
    };
    prop_assert_eq!(
        result.is_ok(),
        expected.is_some(),
        "{:?} where the plain allocator found {:?}",
        result,
        expected
    );
    let (Ok(allocations), Some(expected)) = (result, expected) else {
        return Ok(());
    };
    prop_assert_eq!(allocations.len(), claims.len());
    // firstAvailable's preference: the first sub-request that leads to an allocation, request by request.
    prop_assert_eq!(chosen(&allocations, claims), chosen(&expected, claims));
    for allocation in &allocations {
        for d in &allocation.devices {
            let dev = &devs[index(&d.device)];
            prop_assert!(!dev.in_use || d.admin_access, "{:?} is in use", d.device);
        }
    }
    Ok(())
}

/// The case proptest saved before firstAvailable's sub-requests, admin access, taints and counters joined
/// the strategy (so its seed no longer makes it): three devices of one pool, none with `a == 0`, and one
/// claim whose firstAvailable asks for one with `a == 0` first and any one second. The second is chosen.
#[test]
fn a_first_sub_request_nothing_meets_falls_to_the_second() {
    let plain = |a, b| Dev {
        pool: 0,
        a,
        b,
        in_use: false,
        tainted: false,
        takes: None,
    };
    let devs = [plain(2, None), plain(1, Some(0)), plain(1, Some(0))];
    let sub = |a| Sub {
        count: 1,
        a,
        all: false,
        tolerates: false,
    };
    let claims = [Claim {
        requests: vec![Req {
            subs: vec![sub(Some(0)), sub(None)],
            admin: false,
        }],
        match_on: None,
    }];
    agrees_with_the_plain_allocator(&devs, &claims).unwrap();
}

/// A case the proptest found: the devices in use in one pool overdraw its counter (two taking 2 of 3), and
/// a claim asks for any one device. A free device of another pool, drawing from no counter, is taken, as
/// the allocator checks only the counters a device draws from.
#[test]
fn an_overdrawn_counter_refuses_no_device_that_draws_from_none() {
    let partition = Dev {
        pool: 1,
        a: 0,
        b: None,
        in_use: true,
        tainted: false,
        takes: Some(2),
    };
    let free = Dev {
        pool: 0,
        a: 0,
        b: None,
        in_use: false,
        tainted: false,
        takes: None,
    };
    let devs = [partition.clone(), free.clone(), partition, free];
    let any = Sub {
        count: 1,
        a: None,
        all: false,
        tolerates: false,
    };
    let claims = [Claim {
        requests: vec![Req {
            subs: vec![any],
            admin: false,
        }],
        match_on: None,
    }];
    agrees_with_the_plain_allocator(&devs, &claims).unwrap();
}

/// A case the proptest found: a claim whose devices must match on `b` (two of three have it), its first
/// request wanting two devices or else one, its second all devices or else one. The allocation is one
/// device with `b` for each request by their second ways; an earlier way that takes the device without `b`
/// is never a start the allocator holds, so the All request after it fails nothing.
#[test]
fn a_prefix_breaking_match_attribute_does_not_fail_a_later_all_request() {
    let d = |b| Dev {
        pool: 0,
        a: 0,
        b,
        in_use: false,
        tainted: false,
        takes: None,
    };
    let devs = [d(Some(1)), d(None), d(Some(1))];
    let s = |count, all| Sub {
        count,
        a: None,
        all,
        tolerates: false,
    };
    let claims = [Claim {
        requests: vec![
            Req {
                subs: vec![s(2, false), s(1, false)],
                admin: false,
            },
            Req {
                subs: vec![s(1, true), s(1, false)],
                admin: false,
            },
        ],
        match_on: Some("b"),
    }];
    agrees_with_the_plain_allocator(&devs, &claims).unwrap();
}
