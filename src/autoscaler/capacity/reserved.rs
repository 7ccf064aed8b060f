//! Nodes on capacity paid for ahead: removing one for low utilization saves nothing while its reservation
//! is paid for, so scale-down and consolidation keep it (`ReservedCapacity`), unless its group's disruption
//! entry says `scaleDownReserved: true`. Empty ones too: an empty node of a block costs nothing more to keep.
//!
//! Which nodes: every node of a Capacity Block group while one of its blocks is active (the group launches
//! into its blocks alone); in any other group, as many of its nodes as its active reservations have
//! instances in use (`total - available`), the oldest first (the first launched took the reservation, as
//! EC2 fills an open reservation before On-Demand capacity). Expiry, drift and repair are no low
//! utilization: they replace reserved nodes as any.

use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::group::GroupFacts;
use crate::model::{CapacityType, Node, Reservation, ReservationType};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::SystemTime;

/// The nodes (by name) scale-down keeps for their reserved capacity at `now`, each with why in words.
pub fn reserved_nodes(
    facts: &[GroupFacts],
    (nodes, node_group): (&[Arc<Node>], &[Option<usize>]),
    config: Option<&DisruptionConfig>,
    now: SystemTime,
) -> HashMap<String, String> {
    let mut kept = HashMap::new();
    // Per group: how many of its nodes are reserved (`None`: all) and why.
    let reserved: Vec<Option<(Option<u32>, String)>> = (facts.iter())
        .map(|f| {
            let state = f.state.as_ref()?;
            let scale_down = config.and_then(|c| c.policy_for(&f.group.id));
            if scale_down.is_some_and(|p| p.scale_down_reserved()) {
                return None;
            }
            let active: Vec<&Reservation> = (state.reservations.iter())
                .filter(|r| r.active(now))
                .collect();
            let block = (state.capacity_type == Some(CapacityType::CapacityBlock))
                .then(|| {
                    active
                        .iter()
                        .find(|r| r.kind == ReservationType::CapacityBlock)
                })
                .flatten();
            if let Some(block) = block {
                let until = block.end.map(|e| humantime::format_rfc3339_seconds(e).to_string());
                let why = format!(
                    "on capacity block {}, paid for until {}: removing it saves nothing \
                     (scaleDownReserved: true lets it go)",
                    block.id,
                    until.unwrap_or_default()
                );
                return Some((None, why));
            }
            let used: u32 = active.iter().map(|r| r.total - r.available).sum();
            let ids: Vec<&str> = active.iter().map(|r| r.id.as_str()).collect();
            let why = format!(
                "on capacity reservation {} ({used} instance(s) in use, the group's oldest nodes): removing \
                 it saves nothing (scaleDownReserved: true lets it go)",
                ids.join(", ")
            );
            (used > 0).then_some((Some(used), why))
        })
        .collect();
    let mut members: HashMap<usize, Vec<&Node>> = HashMap::new();
    for (node, g) in nodes.iter().zip(node_group) {
        if let Some(g) = g.filter(|&g| reserved[g].is_some()) {
            members.entry(g).or_default().push(node);
        }
    }
    for (g, mut members) in members {
        let Some((count, why)) = &reserved[g] else {
            continue;
        };
        members.sort_by(|a, b| a.created.cmp(&b.created).then(a.name.cmp(&b.name)));
        let count = count.map_or(members.len(), |c| c as usize);
        for node in members.into_iter().take(count) {
            kept.insert(node.name.clone(), why.clone());
        }
    }
    kept
}
