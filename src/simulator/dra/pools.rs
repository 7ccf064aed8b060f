//! Resource pools as the allocator gathers them (`pools_stable.go`): slices grouped by (driver, pool name),
//! only the newest generation kept, complete when all `slice_count` slices of that generation are there,
//! invalid when device names repeat or counters are referenced that the pool does not have. Indexed once so
//! that the pools a node reaches are a cheap look-up: node-local pools by node name, the others (allNodes,
//! nodeSelector, per-device node selection) matched against the node's labels. A pool whose slices did not
//! change since the last loop's pools is taken from them as it is, with what selectors made of its devices.

use super::classes::{SelectorFailure, SelectorSet};
use crate::model::{Device, DeviceId, FastMap, Name, Node, NodeScope, Quantity, ResourceSlice};
use crate::simulator::dra::cel::device_value::{DeviceValue, NoDeviceValue};
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

/// Every pool of the cluster at its newest generation.
#[derive(Debug, Default)]
pub struct Pools {
    /// Sorted by (driver, pool name).
    pools: Vec<Arc<Pool>>,
    /// Pools whose device slices are all node-local, by node name.
    by_node: FastMap<Name, Vec<u32>>,
    /// Pools some of whose devices any node may reach: matched per node.
    elsewhere: Vec<u32>,
}

/// Whether a pool can be allocated from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PoolState {
    Complete,
    /// Fewer slices of the newest generation than `slice_count`: being updated, nothing is taken from it.
    Incomplete {
        present: usize,
        expected: i64,
    },
    /// Why it is unusable.
    Invalid(String),
}

/// One pool.
#[derive(Debug)]
pub(crate) struct Pool {
    pub(crate) driver: Name,
    pub(crate) name: Name,
    pub(crate) state: PoolState,
    /// The devices of every slice of the newest generation, in slice order (slices by name).
    pub(crate) devices: Vec<PooledDevice>,
    /// The device slices: which nodes reach them, and their devices' range in `devices`.
    slices: Vec<(NodeScope, Range<u32>)>,
    /// `sharedCounters`, merged over the pool's slices.
    pub(crate) counters: BTreeMap<Name, BTreeMap<Name, Quantity>>,
    /// All device indices, shared by the nodes that reach every device.
    all: Arc<[u32]>,
    /// The slices it was built from, every generation, as given: what a later loop's must equal to reuse it.
    sources: Vec<Arc<ResourceSlice>>,
}

/// Whether a device passes a selector set.
type Verdict = (Arc<SelectorSet>, Result<bool, SelectorFailure>);

/// Verdicts a device keeps: a pool lives across loops, and the selector sets asked of it come and go with
/// claims; past this many the oldest is forgotten (evaluated again if asked again).
const MAX_VERDICTS: usize = 32;

/// A device of a pool, with what selectors make of it remembered.
#[derive(Debug)]
pub(crate) struct PooledDevice {
    pub(crate) id: DeviceId,
    slice: Arc<ResourceSlice>,
    index: usize,
    /// The nodes that reach it (its slice's, or its own with per-device node selection).
    pub(crate) scope: NodeScope,
    value: OnceLock<Result<DeviceValue, NoDeviceValue>>,
    verdicts: Mutex<Vec<Verdict>>,
}

impl PooledDevice {
    pub(crate) fn device(&self) -> &Device {
        &self.slice.devices[self.index]
    }

    /// Whether it passes `set`, evaluated once per distinct set.
    pub(crate) fn selected_by(&self, set: &Arc<SelectorSet>) -> Result<bool, SelectorFailure> {
        {
            let verdicts = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((_, verdict)) = verdicts.iter().find(|(s, _)| s.same_as(set)) {
                return verdict.clone();
            }
        }
        let value = self
            .value
            .get_or_init(|| DeviceValue::new(&self.id.driver, self.device()));
        let verdict = set.matches(value);
        let mut verdicts = self.verdicts.lock().unwrap_or_else(|p| p.into_inner());
        if verdicts.len() >= MAX_VERDICTS {
            drop(verdicts.remove(0));
        }
        verdicts.push((set.clone(), verdict.clone()));
        verdict
    }
}

/// Whether a node reaches devices of `scope`.
pub(crate) fn scope_matches(scope: &NodeScope, node: &Node) -> bool {
    match scope {
        NodeScope::Node(name) => **name == *node.name,
        NodeScope::All => true,
        NodeScope::Selector(selector) => selector.matches(&node.name, &node.labels),
        NodeScope::PerDevice => false,
    }
}

impl Pool {
    fn build(driver: Name, name: Name, sources: Vec<Arc<ResourceSlice>>) -> Pool {
        let mut slices = sources.clone();
        let newest = slices.iter().map(|s| s.pool.generation).max().unwrap_or(0);
        slices.retain(|s| s.pool.generation == newest);
        slices.sort_by(|a, b| a.name.cmp(&b.name));
        let expected = slices.first().map_or(0, |s| s.pool.slice_count);
        let mut state = if slices.len() as i64 == expected {
            PoolState::Complete
        } else {
            PoolState::Incomplete {
                present: slices.len(),
                expected,
            }
        };
        let mut invalid = |why: String| {
            if !matches!(state, PoolState::Invalid(_)) {
                state = PoolState::Invalid(why);
            }
        };
        let mut counters: BTreeMap<Name, BTreeMap<Name, Quantity>> = BTreeMap::new();
        for set in slices.iter().flat_map(|s| &s.shared_counters) {
            if counters
                .insert(set.name.clone(), set.counters.clone())
                .is_some()
            {
                invalid(format!("duplicate counter set {:?}", set.name));
            }
        }
        let mut devices = Vec::new();
        let mut ranges = Vec::new();
        let mut names = BTreeSet::new();
        for slice in &slices {
            let start = devices.len() as u32;
            for (index, device) in slice.devices.iter().enumerate() {
                if !names.insert(device.name.clone()) {
                    invalid(format!("duplicate device name {:?}", device.name));
                }
                for consumption in &device.consumes {
                    match counters.get(&consumption.counter_set) {
                        None => invalid(format!(
                            "device {:?} consumes counter set {:?}, which the pool does not have",
                            device.name, consumption.counter_set
                        )),
                        Some(set) => {
                            if let Some(missing) =
                                consumption.counters.keys().find(|c| !set.contains_key(*c))
                            {
                                invalid(format!(
                                    "device {:?} consumes counter {missing:?} of set {:?}, which \
                                     does not have it",
                                    device.name, consumption.counter_set
                                ));
                            }
                        }
                    }
                }
                let scope = match (&slice.scope, &device.scope) {
                    (NodeScope::PerDevice, Some(own)) => own.clone(),
                    (NodeScope::PerDevice, None) => NodeScope::PerDevice, // reaches no node
                    (scope, _) => scope.clone(),
                };
                devices.push(PooledDevice {
                    id: DeviceId {
                        driver: driver.clone(),
                        pool: name.clone(),
                        device: device.name.clone(),
                    },
                    slice: slice.clone(),
                    index,
                    scope,
                    value: OnceLock::new(),
                    verdicts: Mutex::default(),
                });
            }
            // Counter-only slices (no devices, shared counters) reach no node by themselves.
            if !slice.devices.is_empty() || slice.shared_counters.is_empty() {
                ranges.push((slice.scope.clone(), start..devices.len() as u32));
            }
        }
        let all = (0..devices.len() as u32).collect();
        Pool {
            driver,
            name,
            state,
            devices,
            slices: ranges,
            counters,
            all,
            sources,
        }
    }

    /// Whether it was built from `slices` (the same objects, or equal ones).
    fn built_from(&self, slices: &[Arc<ResourceSlice>]) -> bool {
        self.sources.len() == slices.len()
            && (self.sources.iter().zip(slices)).all(|(a, b)| Arc::ptr_eq(a, b) || a == b)
    }

    /// The devices `node` reaches, and whether any slice of the pool targets it at all.
    fn visible(&self, node: &Node) -> (Arc<[u32]>, bool) {
        let mut targets = false;
        let mut visible = Vec::new();
        for (scope, range) in &self.slices {
            if let NodeScope::PerDevice = scope {
                for i in range.clone() {
                    if scope_matches(&self.devices[i as usize].scope, node) {
                        targets = true;
                        visible.push(i);
                    }
                }
            } else if scope_matches(scope, node) {
                targets = true;
                visible.extend(range.clone());
            }
        }
        if visible.len() == self.devices.len() {
            (self.all.clone(), targets)
        } else {
            (visible.into(), targets)
        }
    }

    /// Whether every device slice is node-local (only such pools count for a node's utilization, as
    /// cluster-autoscaler reads a node's local slices).
    pub(crate) fn node_local(&self) -> bool {
        !self.slices.is_empty()
            && (self.slices.iter()).all(|(scope, _)| matches!(scope, NodeScope::Node(_)))
    }
}

impl Pools {
    pub fn new(slices: &[Arc<ResourceSlice>]) -> Pools {
        Pools::reusing(slices, &Pools::default())
    }

    /// The pools of `slices`, each taken from `last` (an earlier loop's) when its slices are the same: its
    /// devices keep their CEL values and verdicts, so an unchanged cluster evaluates no selector again.
    pub fn reusing(slices: &[Arc<ResourceSlice>], last: &Pools) -> Pools {
        let mut grouped: BTreeMap<(Name, Name), Vec<Arc<ResourceSlice>>> = BTreeMap::new();
        for slice in slices {
            (grouped
                .entry((slice.driver.clone(), slice.pool.name.clone()))
                .or_default())
            .push(slice.clone());
        }
        let mut pools = Pools::default();
        for (i, ((driver, name), slices)) in grouped.into_iter().enumerate() {
            let found =
                (last.pools).binary_search_by(|p| (&*p.driver, &*p.name).cmp(&(&*driver, &*name)));
            let pool = match found {
                Ok(at) if last.pools[at].built_from(&slices) => last.pools[at].clone(),
                _ => Arc::new(Pool::build(driver, name, slices)),
            };
            let local: BTreeSet<Name> = (pool.slices.iter())
                .filter_map(|(scope, _)| match scope {
                    NodeScope::Node(node) => Some(node.clone()),
                    _ => None,
                })
                .collect();
            if pool.node_local() {
                for node in local {
                    pools.by_node.entry(node).or_default().push(i as u32);
                }
            } else if !pool.slices.is_empty() {
                pools.elsewhere.push(i as u32);
            }
            pools.pools.push(pool);
        }
        pools
    }

    /// The pools `node` reaches, sorted by (driver, pool).
    pub fn for_node(&self, node: &Node) -> NodePools {
        let local = self
            .by_node
            .get(node.name.as_str())
            .map_or(&[][..], Vec::as_slice);
        let mut candidates: Vec<u32> = local.iter().chain(&self.elsewhere).copied().collect();
        candidates.sort_unstable();
        let pools: Vec<NodePool> = (candidates.into_iter())
            .filter_map(|i| {
                let pool = &self.pools[i as usize];
                let (visible, targets) = pool.visible(node);
                targets.then(|| NodePool {
                    pool: pool.clone(),
                    visible,
                })
            })
            .collect();
        NodePools {
            pools: pools.into(),
        }
    }

    /// Every pool's (driver, name) with why it cannot be used, for reports.
    pub fn unusable(&self) -> Vec<(Name, Name, String)> {
        (self.pools.iter())
            .filter_map(|p| match &p.state {
                PoolState::Complete => None,
                PoolState::Incomplete { present, expected } => Some((
                    p.driver.clone(),
                    p.name.clone(),
                    format!("{present} of {expected} slices present"),
                )),
                PoolState::Invalid(why) => Some((p.driver.clone(), p.name.clone(), why.clone())),
            })
            .collect()
    }
}

/// The pools one node reaches: cheap to clone, in (driver, pool) order.
#[derive(Clone, Debug, Default)]
pub struct NodePools {
    pub(crate) pools: Arc<[NodePool]>,
}

/// A pool and the devices of it one node reaches.
#[derive(Clone, Debug)]
pub(crate) struct NodePool {
    pub(crate) pool: Arc<Pool>,
    pub(crate) visible: Arc<[u32]>,
}

impl NodePools {
    pub fn is_empty(&self) -> bool {
        self.pools.is_empty()
    }

    /// Devices the node reaches in pools that can be allocated from.
    pub fn device_count(&self) -> usize {
        (self.pools.iter())
            .filter(|p| p.pool.state == PoolState::Complete)
            .map(|p| p.visible.len())
            .sum()
    }

    /// The (driver, pool) of each pool the node reaches.
    pub fn keys(&self) -> impl Iterator<Item = (Name, Name)> + '_ {
        (self.pools.iter()).map(|p| (p.pool.driver.clone(), p.pool.name.clone()))
    }

    /// The drivers whose devices the node reaches, each once, sorted.
    pub fn drivers(&self) -> Vec<Name> {
        let set: BTreeSet<Name> = self.pools.iter().map(|p| p.pool.driver.clone()).collect();
        set.into_iter().collect()
    }
}
