//! After a search: pods their pod affinity refused, offered the plan again once the partners packed after
//! them are there.

use super::first_fit::first_fit;
use super::packing::Packing;
use super::plan::{Demand, Zones};
use crate::simulator::Filling;
use crate::simulator::Unfit;

/// Pods refused for their pod affinity may be taken once pods packed after them are there (a pod wanting a
/// partner that scores lower): they are offered the plan's nodes again, group after group, until a pass
/// places none. Each pass that goes on placed a pod, so there are at most as many passes as pods. New nodes
/// are added for what is left when a new node would now hold the affinity (a partner in the zone a zonal
/// term asks for); for a hostname term a new node holds no partner, so none is tried. A topology spread's
/// pods are offered the older nodes again within [`first_fit`] already.
pub(super) fn offer_again(
    packing: &mut Packing,
    demands: &[Demand],
    placed: &mut [u64],
    unfit: &mut [Option<Unfit>],
) {
    // The partners each group had when the plan last refused it: until that grows, it is refused again.
    let mut partners_then: Vec<Option<u64>> = vec![None; demands.len()];
    loop {
        let mut progress = false;
        for (d, demand) in demands.iter().enumerate() {
            // Refused for its affinity, or stopped by a limit before partners it could join were placed.
            let refused = matches!(unfit[d], Some(Unfit::Affinity) | None);
            if placed[d] == demand.count || !refused || !demand.terms.wants_partners() {
                continue;
            }
            let partners = packing.topology.partners(demand.terms);
            if partners_then[d] == Some(partners) {
                continue;
            }
            partners_then[d] = Some(partners);
            let Ok(zones) = Zones::of(packing.templates, demand.pod) else {
                continue;
            };
            let mut filling = Filling::new(demand.pod, demand.terms);
            let want = demand.count - placed[d];
            let templates = packing.templates.zones;
            let (k, why) =
                if (templates.iter()).any(|t| packing.topology.affinity_holds(demand.terms, t)) {
                    // A new node would hold it: the plan's nodes, then new ones.
                    first_fit(packing, &mut filling, &zones, d, want)
                } else {
                    let k = offer_plan(packing, &mut filling, &zones, d, want);
                    (k, unfit[d].clone())
                };
            placed[d] += k;
            progress |= k > 0;
            unfit[d] = if placed[d] == demand.count { None } else { why };
        }
        if !progress {
            return;
        }
    }
}

/// Up to `want` pods on the plan's nodes that hold their affinity, in order; returns how many.
pub(super) fn offer_plan(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    want: u64,
) -> u64 {
    let terms = filling.terms();
    let mut done = 0;
    let open = (packing.marks).open(&packing.topology, terms, packing.nodes.len());
    let mut at = packing.next_fit(&open, filling.pod(), 0);
    while let Some(n) = at.filter(|_| done < want) {
        // Most nodes hold no partner: asked first, before the pod's whole fit.
        if packing.in_zones(zones, n) && (packing.topology).affinity_holds(terms, &packing.nodes[n])
        {
            done += packing.fill(filling, d, n, want - done).0;
        }
        at = packing.next_fit(&open, filling.pod(), n + 1);
    }
    done
}
