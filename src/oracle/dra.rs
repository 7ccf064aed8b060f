//! The stable DRA allocator written plainly: which devices a node reaches (complete pools at their newest
//! generation, by the scope of each slice or device), then every assignment tried in the scheduler's order
//! (claims, their requests, firstAvailable's sub-requests in order, each request's device sets in the order
//! of the devices) and the first that passes every rule wins. Each rule is checked on the whole assignment at
//! the end, not while devices are added, so no bookkeeping is shared with `simulator/dra`: a device taken
//! once (admin access may take one another claim took), a claim's 32 results at most, shared counters, matchAttribute.
//! Which devices a selector matches is asked of the caller (CEL is evaluated elsewhere, and tested there).

use super::filters::node_affinity;
use crate::model::{
    AllocatedDevice, Allocation, AllocationMode, ClaimSpec, Device, DeviceAsk, DeviceId,
    DeviceRequest, DeviceTaintEffect, DeviceToleration, NODE_NAME_FIELD, Name, Node, NodeScope,
    NodeSelector, NodeSelectorTerm, Operator, Requirement, ResourceSlice,
};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The most assignments tried for one question (one pod's claims on one node); past it the answer is
/// [`Verdict::TooLarge`]. A pod asking one device of eight tries eight, two of eight 28, four of eight 70;
/// the bound is there for a mix nobody meant to search by brute force.
pub(crate) const MAX_TRIES: usize = 100_000;

/// Results one claim may hold (`AllocationResultsMaxSize`).
const MAX_RESULTS: usize = 32;

/// A device the node reaches.
pub(crate) struct Reached<'a> {
    pub(crate) id: DeviceId,
    pub(crate) device: &'a Device,
    /// Where it is usable from: its slice's scope, or with per-device node selection its own.
    scope: &'a NodeScope,
    /// Its pool, in [`NodeDevices::pools`].
    pool: usize,
}

/// A pool the node reaches: its shared counters (thousandths of their units) and every device of it, those
/// other nodes reach too (devices in use anywhere take from the pool's counters).
struct Pool<'a> {
    counters: BTreeMap<&'a str, BTreeMap<&'a str, i128>>,
    devices: Vec<(DeviceId, &'a Device)>,
}

/// The devices a node reaches, in (driver, pool, slice name, device) order.
pub(crate) struct NodeDevices<'a> {
    pub(crate) devices: Vec<Reached<'a>>,
    pools: Vec<Pool<'a>>,
}

/// The answer for a pod's claims on a node.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// One allocation per claim, in the claims' order.
    Fits(Vec<Allocation>),
    Refused,
    /// More than [`MAX_TRIES`] assignments to try.
    TooLarge,
}

/// The devices `node` reaches: of each pool at its newest generation and complete (as many slices as it says
/// it has), the devices whose slice (or, with per-device node selection, whose own scope) names the node, a
/// node selector it matches, or every node.
pub(crate) fn reach<'a>(slices: &'a [Arc<ResourceSlice>], node: &Node) -> NodeDevices<'a> {
    let mut by_pool: BTreeMap<(&str, &str), Vec<&ResourceSlice>> = BTreeMap::new();
    for s in slices {
        by_pool
            .entry((&s.driver, &s.pool.name))
            .or_default()
            .push(s);
    }
    let mut out = NodeDevices {
        devices: Vec::new(),
        pools: Vec::new(),
    };
    for mut list in by_pool.into_values() {
        let newest = list.iter().map(|s| s.pool.generation).max().unwrap_or(0);
        list.retain(|s| s.pool.generation == newest);
        list.sort_by(|a, b| a.name.cmp(&b.name));
        if list.len() as i64 != list[0].pool.slice_count {
            continue;
        }
        let pool = out.pools.len();
        let mut counters: BTreeMap<&str, BTreeMap<&str, i128>> = BTreeMap::new();
        let mut devices = Vec::new();
        let mut reached = Vec::new();
        for s in list {
            for set in &s.shared_counters {
                let mine = counters.entry(&*set.name).or_default();
                mine.extend(set.counters.iter().map(|(c, q)| (&**c, q.millis())));
            }
            for d in &s.devices {
                let id = DeviceId {
                    driver: s.driver.clone(),
                    pool: s.pool.name.clone(),
                    device: d.name.clone(),
                };
                devices.push((id.clone(), d));
                let scope = match &s.scope {
                    NodeScope::PerDevice => d.scope.as_ref(),
                    other => Some(other),
                };
                if let Some(scope) = scope.filter(|scope| reaches(scope, node)) {
                    let device = d;
                    reached.push(Reached {
                        id,
                        device,
                        scope,
                        pool,
                    });
                }
            }
        }
        if !reached.is_empty() {
            out.pools.push(Pool { counters, devices });
            out.devices.extend(reached);
        }
    }
    out
}

fn reaches(scope: &NodeScope, node: &Node) -> bool {
    match scope {
        NodeScope::Node(name) => **name == *node.name,
        NodeScope::All => true,
        NodeScope::Selector(selector) => node_affinity(selector, node),
        NodeScope::PerDevice => false,
    }
}

/// What the question is asked of: the node, its devices, the devices other claims hold (admin access holds
/// none), and which devices an ask's class and selectors match.
pub(crate) struct Ask<'q, 'a> {
    pub(crate) node: &'q Node,
    pub(crate) devices: &'q NodeDevices<'a>,
    pub(crate) in_use: &'q BTreeSet<DeviceId>,
    pub(crate) selects: &'q dyn Fn(&DeviceAsk, &Reached) -> bool,
}

/// One device picked.
struct Pick<'a> {
    claim: usize,
    request: &'a Name,
    /// The sub-request, for firstAvailable.
    sub: Option<&'a Name>,
    device: usize,
    admin: bool,
}

/// Why the search ends before trying everything.
enum Stop {
    /// Past [`MAX_TRIES`].
    TooLarge,
    /// An All request's device broke a matchAttribute of its claim: the allocator's `allocateDevice` with
    /// "must allocate" fails the whole allocation there, without trying another sub-request.
    Broken,
}

struct Search<'q, 'a> {
    ask: &'q Ask<'q, 'a>,
    claims: &'q [&'a ClaimSpec],
    requests: Vec<(usize, &'a DeviceRequest)>,
    picks: Vec<Pick<'a>>,
    tries: usize,
}

/// Allocates `claims` as the stable allocator does: the first assignment, in its order, that meets every
/// rule.
pub(crate) fn allocate(claims: &[&ClaimSpec], ask: &Ask<'_, '_>) -> Verdict {
    // Requests the API refuses: no way to meet them, a count of zero, a sub-request with admin access.
    let refused = |r: &DeviceRequest| {
        r.asks.is_empty()
            || (r.asks.iter()).any(|a| {
                a.mode == AllocationMode::ExactCount(0) || (r.first_available && a.admin_access)
            })
    };
    if claims.iter().any(|c| c.requests.iter().any(refused)) {
        return Verdict::Refused;
    }
    let mut search = Search {
        ask,
        claims,
        requests: (claims.iter().enumerate())
            .flat_map(|(c, claim)| claim.requests.iter().map(move |r| (c, r)))
            .collect(),
        picks: Vec::new(),
        tries: 0,
    };
    match search.request(0) {
        Err(Stop::TooLarge) => Verdict::TooLarge,
        Ok(false) | Err(Stop::Broken) => Verdict::Refused,
        Ok(true) => Verdict::Fits((0..claims.len()).map(|c| search.allocation(c)).collect()),
    }
}

impl<'a> Search<'_, 'a> {
    /// Request `r` onwards: `Ok(true)` with `picks` the first complete assignment.
    fn request(&mut self, r: usize) -> Result<bool, Stop> {
        let Some(&(_, request)) = self.requests.get(r) else {
            self.tries += 1;
            return match self.tries <= MAX_TRIES {
                true => Ok(self.valid()),
                false => Err(Stop::TooLarge),
            };
        };
        let devices = &self.ask.devices.devices;
        for ask in &request.asks {
            let matching: Vec<usize> = (0..devices.len())
                .filter(|&d| !devices[d].device.binding_conditions)
                .filter(|&d| (self.ask.selects)(ask, &devices[d]))
                .collect();
            match ask.mode {
                // Every matching device, and at least one.
                AllocationMode::All => {
                    if !matching.is_empty() && self.take_all(r, ask, &matching)? {
                        if self.request(r + 1)? {
                            return Ok(true);
                        }
                        self.picks.truncate(self.picks.len() - matching.len());
                    }
                }
                AllocationMode::ExactCount(n) => {
                    let free: Vec<usize> = (matching.into_iter())
                        .filter(|&d| self.usable(ask, d))
                        .collect();
                    let mut sets = Combinations::new(free.len(), n as usize);
                    while let Some(at) = sets.next_set() {
                        let set: Vec<usize> = at.iter().map(|&i| free[i]).collect();
                        if self.with(r, ask, &set)? {
                            return Ok(true);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    fn pick(&self, r: usize, ask: &'a DeviceAsk, device: usize) -> Pick<'a> {
        let (claim, request) = self.requests[r];
        Pick {
            claim,
            request: &request.name,
            sub: request.first_available.then_some(&ask.name),
            device,
            admin: ask.admin_access,
        }
    }

    /// Request `r` met by `ask` with the devices `set`, then the requests after it. A set that takes a device
    /// already taken or breaks a matchAttribute of its claim goes no further: the allocator never holds such
    /// a prefix, so an All request after it must not fail the whole allocation on its account (only whole
    /// assignments are valid or not, so this prunes nothing valid).
    fn with(&mut self, r: usize, ask: &'a DeviceAsk, set: &[usize]) -> Result<bool, Stop> {
        let before = self.picks.len();
        for &device in set {
            let pick = self.pick(r, ask, device);
            let taken = self.picks.iter().any(|p| clash(p, &pick));
            self.picks.push(pick);
            if taken {
                self.picks.truncate(before);
                return Ok(false);
            }
        }
        if !self.constraints_hold(self.requests[r].0) {
            self.picks.truncate(before);
            return Ok(false);
        }
        let done = self.request(r + 1)?;
        if !done {
            self.picks.truncate(before);
        }
        Ok(done)
    }

    /// An All request takes its devices one by one, in order, as the allocator does: a device it cannot take
    /// (held, taken already, untolerated, its counters short) fails the sub-request; one that breaks a
    /// matchAttribute of its claim fails the whole allocation. `Ok(true)` with them all in `picks`.
    fn take_all(&mut self, r: usize, ask: &'a DeviceAsk, all: &[usize]) -> Result<bool, Stop> {
        let before = self.picks.len();
        let claim = self.requests[r].0;
        for &device in all {
            let pick = self.pick(r, ask, device);
            let taken = self.picks.iter().any(|p| clash(p, &pick));
            self.picks.push(pick);
            if !self.usable(ask, device) || taken || !self.counters_hold() {
                self.picks.truncate(before);
                return Ok(false);
            }
            if !self.constraints_hold(claim) {
                self.picks.truncate(before);
                return Err(Stop::Broken);
            }
        }
        Ok(true)
    }

    /// A device the ask may take on its own: its taints tolerated, and not held by another claim (admin
    /// access may take a held device).
    fn usable(&self, ask: &DeviceAsk, d: usize) -> bool {
        let reached = &self.ask.devices.devices[d];
        tolerated(reached.device, &ask.tolerations)
            && (ask.admin_access || !self.ask.in_use.contains(&reached.id))
    }

    /// Whether the whole assignment meets the rules between devices.
    fn valid(&self) -> bool {
        let picks = &self.picks;
        let claims = self.claims.len();
        let too_many =
            (0..claims).any(|c| picks.iter().filter(|p| p.claim == c).count() > MAX_RESULTS);
        let twice =
            (picks.iter().enumerate()).any(|(i, a)| picks[i + 1..].iter().any(|b| clash(a, b)));
        !too_many && !twice && self.counters_hold() && (0..claims).all(|c| self.constraints_hold(c))
    }

    /// Every counter a picked device consumes covers what the pool's devices in use and the devices picked
    /// consume of it; a device consuming from a counter its pool does not have cannot be taken. Only the
    /// counters picked devices draw from are checked, as the allocator checks a device's own consumption:
    /// a pool whose devices in use already overdraw a counter refuses no device that does not draw from it.
    fn counters_hold(&self) -> bool {
        let at = self.ask.devices;
        (at.pools.iter().enumerate()).all(|(p, pool)| {
            let picked: Vec<&Device> = (self.picks.iter())
                .map(|pick| &at.devices[pick.device])
                .filter(|d| d.pool == p)
                .map(|d| d.device)
                .collect();
            let drawn: BTreeSet<(&str, &str)> = (picked.iter())
                .flat_map(|d| &d.consumes)
                .flat_map(|c| c.counters.keys().map(|k| (&*c.counter_set, &**k)))
                .collect();
            if drawn.is_empty() {
                return true;
            }
            let has = |(set, counter): &(&str, &str)| {
                (pool.counters.get(set)).is_some_and(|c| c.contains_key(counter))
            };
            if !drawn.iter().all(has) {
                return false;
            }
            let held = (pool.devices.iter())
                .filter(|(id, _)| self.ask.in_use.contains(id))
                .map(|(_, d)| *d);
            let mut left = pool.counters.clone();
            for device in held.chain(picked) {
                for consumption in &device.consumes {
                    for (counter, q) in &consumption.counters {
                        // A counter the pool lacks: refused above when picked, nothing to take when held.
                        if let Some(value) = (left.get_mut(&*consumption.counter_set))
                            .and_then(|set| set.get_mut(&**counter))
                        {
                            *value -= q.millis();
                        }
                    }
                }
            }
            (drawn.iter()).all(|(set, counter)| left[set][counter] >= 0)
        })
    }

    /// Each matchAttribute of claim `c`: the devices of the requests it names (all when it names none; a
    /// request, or one sub-request as `request/sub`) have the attribute, all of one value.
    fn constraints_hold(&self, c: usize) -> bool {
        self.claims[c].constraints.iter().all(|constraint| {
            let covers = |p: &Pick| {
                constraint.requests.is_empty()
                    || constraint.requests.iter().any(|n| {
                        **n == **p.request
                            || p.sub
                                .is_some_and(|s| n.split_once('/') == Some((&**p.request, &**s)))
                    })
            };
            let mut values = (self.picks.iter())
                .filter(|p| p.claim == c && covers(p))
                .map(|p| {
                    (self.ask.devices.devices[p.device].device.attributes)
                        .get(&constraint.attribute)
                });
            let Some(first) = values.next() else {
                return true;
            };
            first.is_some() && values.all(|v| v == first)
        })
    }

    /// Claim `c`'s allocation: its devices in the order picked, and where they are usable from (the node by
    /// name when one is node-local; else the node selectors of its devices as one term; else anywhere).
    fn allocation(&self, c: usize) -> Allocation {
        let mine: Vec<&Pick> = self.picks.iter().filter(|p| p.claim == c).collect();
        let devices = (mine.iter())
            .map(|p| AllocatedDevice {
                request: match p.sub {
                    Some(sub) => format!("{}/{sub}", p.request).into(),
                    None => p.request.clone(),
                },
                device: self.ask.devices.devices[p.device].id.clone(),
                admin_access: p.admin,
            })
            .collect();
        let scopes: Vec<&NodeScope> = (mine.iter())
            .map(|p| self.ask.devices.devices[p.device].scope)
            .collect();
        Allocation {
            devices,
            node_selector: node_selector(&scopes, self.ask.node),
        }
    }
}

/// Whether `later` may not take the device `earlier` took (picks in the search's order): a claim takes a
/// device once; a pick without admin access takes none that any pick before it took; admin access may take
/// one that another claim took before it (`allocateDevice`: `allocatingDeviceForClaim` for admin access,
/// `deviceInUse` otherwise).
fn clash(earlier: &Pick, later: &Pick) -> bool {
    earlier.device == later.device && (earlier.claim == later.claim || !later.admin)
}

fn node_selector(scopes: &[&NodeScope], node: &Node) -> Option<NodeSelector> {
    if scopes.iter().any(|s| matches!(s, NodeScope::Node(_))) {
        let pin = Requirement {
            key: NODE_NAME_FIELD.to_string(),
            operator: Operator::In,
            values: vec![node.name.clone()],
        };
        return Some(NodeSelector {
            terms: vec![NodeSelectorTerm {
                expressions: Vec::new(),
                fields: vec![pin],
            }],
        });
    }
    let mut merged = NodeSelectorTerm::default();
    let mut any = false;
    for scope in scopes {
        let NodeScope::Selector(selector) = scope else {
            continue;
        };
        any = true;
        for term in &selector.terms {
            for r in &term.expressions {
                if !merged.expressions.contains(r) {
                    merged.expressions.push(r.clone());
                }
            }
            for r in &term.fields {
                if !merged.fields.contains(r) {
                    merged.fields.push(r.clone());
                }
            }
        }
    }
    any.then(|| NodeSelector {
        terms: vec![merged],
    })
}

/// Every NoSchedule and NoExecute taint of the device has a toleration (an empty key or a missing effect
/// matches any; `Exists` any value); other effects do not keep devices.
fn tolerated(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    let keeps = |e: DeviceTaintEffect| {
        matches!(
            e,
            DeviceTaintEffect::NoSchedule | DeviceTaintEffect::NoExecute
        )
    };
    (device.taints.iter().filter(|t| keeps(t.effect))).all(|taint| {
        tolerations.iter().any(|t| {
            t.effect.is_none_or(|e| e == taint.effect)
                && (t.key.is_empty() || t.key == taint.key)
                && (t.exists || t.value == taint.value)
        })
    })
}

/// The sets of `n` of `len` positions, in lexicographic order, one at a time.
struct Combinations {
    len: usize,
    at: Vec<usize>,
    /// The set `at` is yet to be given.
    fresh: bool,
}

impl Combinations {
    fn new(len: usize, n: usize) -> Combinations {
        Combinations {
            len,
            at: (0..n).collect(),
            fresh: n <= len,
        }
    }

    fn next_set(&mut self) -> Option<&[usize]> {
        if self.fresh {
            self.fresh = false;
            return Some(&self.at);
        }
        let n = self.at.len();
        if n > self.len {
            return None;
        }
        // The rightmost position that can still move, moved, and those after it right behind it.
        let i = (0..n).rev().find(|&i| self.at[i] < self.len - n + i)?;
        self.at[i] += 1;
        for j in i + 1..n {
            self.at[j] = self.at[j - 1] + 1;
        }
        Some(&self.at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CounterConsumption, CounterSet, PoolRef, Quantity};

    /// Forty partitions each taking one of a counter the pool has seven of: no eight of them fit together,
    /// and there are far more sets of eight than the bound, so the search says it stopped; asked for seven,
    /// the first set it tries fits.
    #[test]
    fn a_search_past_the_bound_says_so_and_one_under_it_answers() {
        let takes_one = CounterConsumption {
            counter_set: "s".into(),
            counters: [("c".into(), Quantity::from_millis(1000))].into(),
        };
        let devices = (0..40)
            .map(|i| Device {
                name: format!("d{i}").into(),
                attributes: BTreeMap::new(),
                capacity: BTreeMap::new(),
                consumes: vec![takes_one.clone()],
                taints: Vec::new(),
                scope: None,
                binding_conditions: false,
            })
            .collect();
        let slices = [Arc::new(ResourceSlice {
            name: "n1-slice".into(),
            driver: "drv".into(),
            pool: PoolRef {
                name: "n1".into(),
                generation: 0,
                slice_count: 1,
            },
            scope: NodeScope::Node("n1".into()),
            devices,
            shared_counters: vec![CounterSet {
                name: "s".into(),
                counters: [("c".into(), Quantity::from_millis(7000))].into(),
            }],
        })];
        let node = Node {
            name: "n1".into(),
            ..Node::default()
        };
        let reached = reach(&slices, &node);
        let in_use = BTreeSet::new();
        let ask = Ask {
            node: &node,
            devices: &reached,
            in_use: &in_use,
            selects: &|_, _| true,
        };
        let claim = |count| ClaimSpec {
            requests: vec![DeviceRequest {
                name: "r".into(),
                first_available: false,
                asks: vec![DeviceAsk {
                    name: "".into(),
                    class: "c".into(),
                    selectors: Vec::new(),
                    mode: AllocationMode::ExactCount(count),
                    admin_access: false,
                    tolerations: Vec::new(),
                }],
            }],
            constraints: Vec::new(),
        };
        assert!(matches!(allocate(&[&claim(8)], &ask), Verdict::TooLarge));
        let Verdict::Fits(seven) = allocate(&[&claim(7)], &ask) else {
            panic!("seven of forty fit");
        };
        let names: Vec<&str> = seven[0].devices.iter().map(|d| &*d.device.device).collect();
        assert_eq!(names, ["d0", "d1", "d2", "d3", "d4", "d5", "d6"]);
    }
}
