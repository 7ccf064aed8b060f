//! Why a search found nothing, in terms a user can act on: the first request that the node cannot meet even
//! alone (how many devices match, how many of them are free), or else that the requests only conflict with
//! each other.

use super::counters::Counters;
use super::prepare::{ClaimData, Selection, candidates};
use super::taints::tolerated;
use crate::model::AllocationMode;
use crate::simulator::dra::in_use::InUse;
use crate::simulator::dra::unallocatable::{RequestRef, Unallocatable, Wanted};

pub(crate) fn diagnose(
    claims: &[ClaimData],
    selection: &mut Selection,
    in_use: &InUse,
) -> Unallocatable {
    let pools = selection.pools;
    let devices = candidates(pools);
    let counters: Vec<Option<Counters>> = (pools.iter())
        .map(|p| Counters::available(&p.pool, in_use))
        .collect();
    for (c, claim) in claims.iter().enumerate() {
        for request in &claim.requests {
            // The request fails alone when none of its asks can be met alone; report its first ask.
            let mut first = None;
            for data in &request.asks {
                let (mut matching, mut free) = (0, 0);
                let pool_devices: &[_] = match &data.all {
                    Some(all) => all,
                    None => &devices,
                };
                for &dev in pool_devices {
                    if data.all.is_none() && !selection.selectable(c, data, dev) {
                        continue;
                    }
                    matching += 1;
                    let pooled = &pools[dev.0 as usize].pool.devices[dev.1 as usize];
                    let device = pooled.device();
                    let unused = data.ask.admin_access || !in_use.contains(&pooled.id);
                    let counters_left = device.consumes.is_empty()
                        || counters[dev.0 as usize]
                            .as_ref()
                            .is_none_or(|c| c.fits(device));
                    if unused && counters_left && tolerated(device, &data.ask.tolerations) {
                        free += 1;
                    }
                }
                let (wanted, met) = match data.ask.mode {
                    AllocationMode::ExactCount(n) => (Wanted::Count(n), free >= n as usize),
                    AllocationMode::All => (Wanted::All, matching > 0 && free == matching),
                };
                if met {
                    first = None;
                    break;
                }
                first.get_or_insert(Unallocatable::NoFit {
                    request: RequestRef {
                        claim: c,
                        claims: claims.len(),
                        request: data.result_name.clone(),
                    },
                    class: data.set.class.clone(),
                    wanted,
                    matching,
                    free,
                });
            }
            if let Some(no_fit) = first {
                return no_fit;
            }
        }
    }
    Unallocatable::NotTogether
}
