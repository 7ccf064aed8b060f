//! A plan's steps taken again from the cluster as it was, through the predicates the searches ask: the
//! check of a plan the improvement phase changed, and its nodes and counts when it holds.

use super::plan::{Demand, PlanStep, Templates};
use crate::simulator::Filling;
use crate::simulator::SpreadMins;
use crate::simulator::{Place, PlaceKind, Topology};

/// The nodes and the counts after `steps`, each step's pods put as the searches put them (resources, host
/// ports, affinity, anti-affinity, spread, devices); `None` when a step's pods do not all fit.
pub(super) fn replay(
    topology: &Topology,
    existing: &[Place],
    templates: Templates,
    demands: &[Demand],
    steps: &[PlanStep],
) -> Option<(Vec<Place>, Topology)> {
    let mut topology = topology.clone();
    let mut mins = SpreadMins::default();
    let mut nodes: Vec<Place> = Vec::new();
    for step in steps {
        match *step {
            PlanStep::Add { zone } => {
                nodes.push(topology.copy(&templates.zones[zone], PlaceKind::Planned));
            }
            PlanStep::Put {
                node,
                demand,
                count,
            } => {
                let d = demands[demand];
                // Each pod goes on a node of the zone its search put it in, or, moved, of any zone: its
                // node selector, affinity and taints pass there, as `fill` asks of its caller.
                let filling = Filling::new(d.pod, d.terms);
                let (k, _) = filling.fill(
                    &mut topology,
                    &mut mins.with_others(existing),
                    &mut nodes,
                    node,
                    count,
                );
                if k < count {
                    return None;
                }
                let contents = &mut nodes[node].contents;
                match contents.last_mut() {
                    Some((e, c)) if *e == demand => *c += count,
                    _ => contents.push((demand, count)),
                }
            }
        }
    }
    Some((nodes, topology))
}
