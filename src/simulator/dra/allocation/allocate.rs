//! `Allocate` for one node: the pod's claims that are not allocated yet, validated, searched for, and
//! turned into allocations (one per claim, in order), or the reason they cannot be. Called once per
//! candidate node, as the scheduler's DRA plugin does.

use super::diagnose::diagnose;
use super::prepare::{Selection, candidates, prepare};
use super::search::Search;
use crate::model::{AllocatedDevice, Allocation, ClaimSpec, Node};
use crate::simulator::dra::classes::DeviceClasses;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::node_selector::allocation_node_selector;
use crate::simulator::dra::pools::{NodePools, PoolState};
use crate::simulator::dra::unallocatable::Unallocatable;

/// Allocates `claims` on `node` from the pools it reaches, given the devices already in use. A selector
/// that fails on a device makes that device not match (it never aborts the search); if nothing fits, the
/// failure is what is reported.
pub fn allocate(
    classes: &DeviceClasses,
    pools: &NodePools,
    in_use: &InUse,
    node: &Node,
    claims: &[&ClaimSpec],
) -> Result<Vec<Allocation>, Unallocatable> {
    let mut selection = Selection {
        pools: &pools.pools,
        claims: claims.len(),
        failure: None,
    };
    let prepared = prepare(classes, &mut selection, claims)?;
    let mut search = Search::new(&prepared, selection, in_use, candidates(&pools.pools));
    if search.run()? {
        let mut allocations: Vec<Allocation> = vec![
            Allocation {
                devices: Vec::new(),
                node_selector: None,
            };
            claims.len()
        ];
        for t in &search.taken {
            let data = search.ask(t.claim, t.request, t.ask);
            let pooled = &pools.pools[t.dev.0 as usize].pool.devices[t.dev.1 as usize];
            allocations[t.claim].devices.push(AllocatedDevice {
                request: data.result_name.clone(),
                device: pooled.id.clone(),
                admin_access: data.ask.admin_access,
            });
        }
        for (c, allocation) in allocations.iter_mut().enumerate() {
            let devices = (search.taken.iter())
                .filter(|t| t.claim == c)
                .map(|t| &pools.pools[t.dev.0 as usize].pool.devices[t.dev.1 as usize]);
            allocation.node_selector = allocation_node_selector(devices, node);
        }
        return Ok(allocations);
    }
    let mut selection = search.into_selection();
    if let Some(failure) = selection.failure.take() {
        return Err(failure);
    }
    let invalid: Vec<String> = (pools.pools.iter())
        .filter_map(|p| match &p.pool.state {
            PoolState::Invalid(why) => Some(format!("{}/{}: {why}", p.pool.driver, p.pool.name)),
            _ => None,
        })
        .collect();
    if !invalid.is_empty() {
        return Err(Unallocatable::InvalidPools(invalid));
    }
    Err(diagnose(&prepared, &mut selection, in_use))
}
