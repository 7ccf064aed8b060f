//! The deletions a loop may start, as cluster-autoscaler's scale-down budgets admit them: at most
//! `--max-scale-down-parallelism` in progress, `--max-drain-parallelism` of them draining, and
//! `--max-empty-bulk-delete` empty nodes a loop; a zeroOrMaxNodeScaling group is admitted whole or not at all.

use crate::autoscaler::scaledown::act::actuation::Actuator;
use crate::autoscaler::scaledown::plan::planner::{DeletionKind, Held, Removable, Unremovable};
use crate::autoscaler::scaledown::plan::removal::GroupInfo;
use crate::autoscaler::scaledown::settings::ScaleDownSettings;
use std::collections::HashMap;

/// The nodes whose deletion starts this loop, and those the budgets hold back.
pub struct Admitted<'p> {
    pub start: Vec<&'p Removable>,
    pub held: Vec<Held<'p>>,
}

/// What is left of each budget this loop.
struct Room {
    slots: usize,
    drains: usize,
    empties: usize,
}

/// Admits `ready` nodes (in the order they come: empty first, then those whose drain no PDB slows) under the
/// budgets, after the deletions already in progress. Admitted as if every
/// deletion starts: one that fails to start sets the failure cooldown, so its room is not handed to another
/// node this loop.
pub fn admit<'p>(
    ready: Vec<&'p Removable>,
    groups: &[GroupInfo],
    sd: &ScaleDownSettings,
    actuator: &Actuator,
) -> Admitted<'p> {
    let mut room = Room {
        slots: sd
            .max_parallelism
            .saturating_sub(actuator.in_flight().count()),
        drains: sd.max_drain_parallelism.saturating_sub(actuator.drains()),
        empties: sd.max_empty_bulk_delete,
    };
    // A zeroOrMaxNodeScaling group needs room for all its nodes at once (within the parallelism; the
    // drain budget would never let a group of several occupied nodes go whole).
    let mut whole: HashMap<usize, usize> = HashMap::new();
    for r in &ready {
        if groups[r.group].options.zero_or_max {
            *whole.entry(r.group).or_default() += 1;
        }
    }
    let mut admitted: HashMap<usize, bool> = HashMap::new();
    let mut out = Admitted {
        start: Vec::new(),
        held: Vec::new(),
    };
    for r in ready {
        let fits = match whole.get(&r.group) {
            // Reserved whole, so that nodes after it cannot take its room.
            Some(&all) => *admitted
                .entry(r.group)
                .or_insert_with(|| room.take_whole(all)),
            None => room.take_one(r.kind()),
        };
        if fits {
            out.start.push(r);
        } else {
            out.held.push(Held {
                removable: r,
                reason: Unremovable::DeletionBudgetReached,
                detail: room.why_full(r.kind(), sd, actuator),
            });
        }
    }
    out
}

impl Room {
    fn take_whole(&mut self, all: usize) -> bool {
        let room = all <= self.slots;
        if room {
            self.slots -= all;
        }
        room
    }

    fn take_one(&mut self, kind: DeletionKind) -> bool {
        let budget = match kind {
            DeletionKind::Empty => &mut self.empties,
            DeletionKind::Drain => &mut self.drains,
        };
        let room = self.slots > 0 && *budget > 0;
        if room {
            self.slots -= 1;
            *budget -= 1;
        }
        room
    }

    /// Which budget a node that did not fit ran into.
    fn why_full(&self, kind: DeletionKind, sd: &ScaleDownSettings, actuator: &Actuator) -> String {
        if kind == DeletionKind::Empty && self.empties == 0 && self.slots > 0 {
            format!(
                "{} empty node(s) already go this loop (--max-empty-bulk-delete)",
                sd.max_empty_bulk_delete
            )
        } else {
            format!(
                "{} deletion(s) in progress (--max-scale-down-parallelism {}), {} draining \
                 (--max-drain-parallelism {})",
                actuator.in_flight().count(),
                sd.max_parallelism,
                actuator.drains(),
                sd.max_drain_parallelism
            )
        }
    }
}
