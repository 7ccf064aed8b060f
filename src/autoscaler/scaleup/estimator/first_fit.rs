//! The searches that take the demands in an order and each pod to the first node that holds it:
//! cluster-autoscaler's own (its rotation over the nodes added) and first fit.

use super::packing::Packing;
use super::plan::Zones;
use crate::simulator::Filling;
use crate::simulator::Unfit;

/// First fit over the nodes added so far, then new nodes: returns the pods placed and, when an empty node
/// takes none, why. Pods whose spread constraints stop them on a node may fit on an older node once other
/// domains have caught up, so after such a stop every node is offered again before a new one is added.
pub(super) fn first_fit(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    count: u64,
) -> (u64, Option<Unfit>) {
    let pod = filling.pod();
    let mut remaining = count;
    // Through the tree when only resources matter (extended resources are not in the tree), and the pod may
    // go on a node of any zone (the tree does not know zones).
    let resources_only = filling.simple() && pod.extended.is_empty() && zones.all();
    let mut offer = true;
    loop {
        if offer && resources_only {
            while let Some(n) = packing.tree.first(&pod.demand).filter(|_| remaining > 0) {
                let (k, _) = packing.fill(filling, d, n, remaining);
                if k == 0 {
                    break;
                }
                remaining -= k;
            }
        } else if offer {
            // Pass after pass while a pass places pods and some node stopped them for the spread. Nodes
            // the pod's hostname terms refuse are passed over unchecked.
            loop {
                let (mut progress, mut spread) = (false, false);
                let open =
                    (packing.marks).open(&packing.topology, filling.terms(), packing.nodes.len());
                let mut at = packing.next_fit(&open, pod, 0);
                while let Some(n) = at.filter(|_| remaining > 0) {
                    if packing.in_zones(zones, n) {
                        let (k, why) = packing.fill(filling, d, n, remaining);
                        remaining -= k;
                        progress |= k > 0;
                        spread |= why == Some(Unfit::Spread);
                    }
                    at = packing.next_fit(&open, pod, n + 1);
                }
                if remaining == 0 || !(progress && spread) {
                    break;
                }
            }
        }
        if remaining == 0 || !packing.may_add() {
            return (count - remaining, None);
        }
        let (k, why) = packing.add_node(filling, zones, d, remaining);
        if k == 0 {
            // Not even an empty node takes it: no more nodes help this group.
            return (count - remaining, why);
        }
        remaining -= k;
        // Resources or a per-node constraint filled the new node: the older ones are no better than before.
        offer = why == Some(Unfit::Spread);
    }
}

/// cluster-autoscaler's search (estimator/binpacking_estimator.go): each pod tries the nodes added so
/// far in a rotating search from the node after the last one that took a pod, until one pod fits none;
/// the rest try only the node added last, and a new node when it refuses them. A pod an empty new node
/// refuses ends the group.
pub(super) fn upstream(
    packing: &mut Packing,
    filling: &mut Filling,
    zones: &Zones,
    d: usize,
    count: u64,
) -> (u64, Option<Unfit>) {
    let pod = filling.pod();
    let resources_only = filling.simple() && pod.extended.is_empty() && zones.all();
    let mut done = 0;
    // On the nodes added so far, one pod at a time.
    while done < count {
        let len = packing.nodes.len();
        if len == 0 {
            break;
        }
        let start = packing.last_index % len;
        let found = if resources_only {
            packing.tree.first_from(start, &pod.demand)
        } else {
            let open = (packing.marks).open(&packing.topology, filling.terms(), len);
            (packing.first_taking(filling, zones, &open, start, len))
                .or_else(|| packing.first_taking(filling, zones, &open, 0, start))
        };
        let Some(n) = found else { break };
        let (k, _) = packing.fill(filling, d, n, 1);
        if k == 0 {
            break;
        }
        done += 1;
        packing.last_index = (n + 1) % len;
    }
    // The rest on the node added last, or on new ones.
    while done < count {
        let last = packing.nodes.len().checked_sub(1);
        if let Some(last) = last.filter(|&n| packing.in_zones(zones, n)) {
            // Only what this group's pods can take: the node is theirs alone from here on.
            let (k, _) = packing.fill(filling, d, last, count - done);
            done += k;
            if done == count {
                break;
            }
        }
        if !packing.may_add() {
            break;
        }
        let (k, why) = packing.add_node(filling, zones, d, count - done);
        if k == 0 {
            return (done, why);
        }
        done += k;
    }
    (done, None)
}
