//! A removal simulation as one value: the loop's input, the drainability rules, what the PDBs still allow,
//! the topology and the places pods move between, and the mover that moves them. The planner, the
//! disruption stage and consolidation ask it to move a node's pods elsewhere and keep or undo the move,
//! instead of passing these six along to every step.

use crate::autoscaler::scaledown::plan::drainability::{PdbBudget, Rules};
use crate::autoscaler::scaledown::plan::removal::{FitsNowhere, Input, Mover, Undo};
use crate::simulator::{Place, Topology};

/// One pass of removal simulation over the places of `input`'s nodes (and any after them).
pub(in crate::autoscaler::scaledown) struct RemovalSimulation<'s, 'a> {
    pub(in crate::autoscaler::scaledown) input: &'s Input<'a>,
    pub(in crate::autoscaler::scaledown) rules: &'s Rules,
    /// How many more evictions each PDB allows, as removals are committed.
    pub(in crate::autoscaler::scaledown) pdbs: PdbBudget<'a>,
    pub(in crate::autoscaler::scaledown) topology: &'s mut Topology,
    pub(in crate::autoscaler::scaledown) places: &'s mut [Place],
    pub(in crate::autoscaler::scaledown) mover: Mover<'a>,
}

impl<'s, 'a> RemovalSimulation<'s, 'a> {
    /// A simulation whose mover tries the places in `order`.
    pub(in crate::autoscaler::scaledown) fn new(
        input: &'s Input<'a>,
        rules: &'s Rules,
        topology: &'s mut Topology,
        places: &'s mut [Place],
        order: Vec<usize>,
    ) -> RemovalSimulation<'s, 'a> {
        let mover = Mover::new(order, places, input);
        RemovalSimulation {
            input,
            rules,
            pdbs: PdbBudget::new(input.pdbs),
            topology,
            places,
            mover,
        }
    }

    /// Moves the pods `moving` of node `n` elsewhere, recording what changed in `undo`; where each went.
    pub(in crate::autoscaler::scaledown) fn move_pods(
        &mut self,
        n: usize,
        moving: &[usize],
        undo: &mut Undo,
    ) -> Result<Vec<(usize, usize)>, FitsNowhere> {
        (self.mover).move_pods(self.topology, self.places, n, moving, undo)
    }

    /// Puts back what a failed move changed.
    pub(in crate::autoscaler::scaledown) fn undo(&mut self, undo: Undo) {
        (self.mover).undo(undo, self.topology, self.places);
    }

    /// Whether node `n` takes pods from now on.
    pub(in crate::autoscaler::scaledown) fn set_accepts(&mut self, n: usize, accepts: bool) {
        self.mover.set_accepts(self.places, n, accepts);
    }

    /// Moves node `n`'s pods elsewhere and keeps the move (the node takes no pods any more), or undoes it and
    /// says which pod fits nowhere.
    pub(in crate::autoscaler::scaledown) fn remove(
        &mut self,
        n: usize,
        moving: &[usize],
    ) -> Result<Vec<(usize, usize)>, FitsNowhere> {
        let mut undo = Undo::default();
        match self.move_pods(n, moving, &mut undo) {
            Ok(destinations) => {
                self.set_accepts(n, false);
                self.mover.commit(n, &destinations);
                Ok(destinations)
            }
            Err(why) => {
                self.undo(undo);
                Err(why)
            }
        }
    }

    /// Moves each of node `n`'s pods `moving` where it fits and keeps the moves (the node takes no pods any
    /// more); those that fit nowhere are left to be pending (a node over its scheduled max goes anyway).
    pub(in crate::autoscaler::scaledown) fn remove_what_fits(
        &mut self,
        n: usize,
        moving: &[usize],
    ) {
        let mut placed = Vec::new();
        for &pod in moving {
            let mut undo = Undo::default();
            match self.move_pods(n, &[pod], &mut undo) {
                Ok(destinations) => placed.extend(destinations),
                Err(_) => self.undo(undo),
            }
        }
        self.set_accepts(n, false);
        self.mover.commit(n, &placed);
    }
}
