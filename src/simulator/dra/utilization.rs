//! A node's DRA utilization as cluster-autoscaler computes it (`utils/utilization.go`): per node-local pool,
//! allocated devices over all devices, or for a pool of partitionable devices, per counter set the most
//! consumed counter's share, averaged over the counter sets its devices consume; the node's utilization is
//! its highest pool's. CPU and memory do not count for a node that has such pools.

use super::in_use::InUse;
use super::pools::{NodePools, Pool, PoolState};
use crate::model::Name;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// How used a node's busiest pool is, and which pool that is: what its utilization says and what decides
/// it.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolUse {
    pub driver: Name,
    pub pool: Name,
    /// Allocated over total, 0 to 1.
    pub used: f64,
}

impl fmt::Display for PoolUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let percent = self.used * 100.0;
        write!(f, "{percent:.0}% in pool {}/{}", self.driver, self.pool)
    }
}

/// The busiest of the node's node-local pools (the first of those equally used); `None` when it has none.
/// A pool that is incomplete or invalid counts as fully used (cluster-autoscaler cannot compute it and
/// keeps the node).
pub fn utilization(pools: &NodePools, in_use: &InUse) -> Option<PoolUse> {
    let mut busiest: Option<PoolUse> = None;
    for p in pools.pools.iter().filter(|p| p.pool.node_local()) {
        let used = pool_utilization(&p.pool, in_use);
        if busiest.as_ref().is_none_or(|b| used > b.used) {
            busiest = Some(PoolUse {
                driver: p.pool.driver.clone(),
                pool: p.pool.name.clone(),
                used,
            });
        }
    }
    busiest
}

fn pool_utilization(pool: &Pool, in_use: &InUse) -> f64 {
    if pool.state != PoolState::Complete {
        return 1.0;
    }
    let allocated = || pool.devices.iter().filter(|d| in_use.contains(&d.id));
    if pool.counters.is_empty() {
        if pool.devices.is_empty() {
            return 0.0;
        }
        return allocated().count() as f64 / pool.devices.len() as f64;
    }
    let referenced: BTreeSet<&Name> = (pool.devices.iter())
        .flat_map(|d| d.device().consumes.iter().map(|c| &c.counter_set))
        .collect();
    if referenced.is_empty() {
        return 0.0;
    }
    let mut consumed: BTreeMap<(&Name, &Name), i128> = BTreeMap::new();
    for pooled in allocated() {
        for consumption in &pooled.device().consumes {
            for (counter, q) in &consumption.counters {
                *consumed
                    .entry((&consumption.counter_set, counter))
                    .or_default() += q.millis();
            }
        }
    }
    let mut sum = 0.0;
    for (set, counters) in &pool.counters {
        let highest = (counters.iter())
            .filter(|(_, total)| total.millis() != 0)
            .map(|(counter, total)| {
                let used = consumed.get(&(set, counter)).copied().unwrap_or(0);
                used as f64 / total.millis() as f64
            })
            .fold(0.0, f64::max);
        sum += highest / referenced.len() as f64;
    }
    sum
}
