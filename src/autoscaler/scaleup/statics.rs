//! The checks that hold for every node of a group (cluster-autoscaler's "static" predicates: node selector
//! and affinity, taints, room on an empty node, the DaemonSets' host ports), for each equivalence group,
//! computed once a loop. Groups whose templates are alike for what the pods read ([`alike::templates_key`])
//! share one column, so that fifty groups of one shape cost one pass over the pods, not fifty.

use crate::autoscaler::group::Group;
use crate::autoscaler::scaleup::alike::{self, Reads};
use crate::model::Pod;
use crate::simulator::Place;
use crate::simulator::served_by_plugins;
use crate::simulator::{Unfit, node_fit, resources_fit};
use std::collections::HashMap;

/// Static fits of equivalence groups on node groups, by class of node groups.
pub struct Statics {
    /// Each node group's class.
    class: Vec<usize>,
    /// Per equivalence group, its fit on each class's templates (any zone).
    fits: Vec<Vec<Result<(), Unfit>>>,
    classes: usize,
}

impl Statics {
    /// The static fits of `exemplars` (one per equivalence group) on `groups`.
    pub fn new(groups: &[Group], exemplars: &[&Pod]) -> Statics {
        let reads = Reads::of(exemplars.iter().copied());
        let mut first: HashMap<String, usize> = HashMap::new();
        let mut columns: Vec<usize> = Vec::new();
        let class: Vec<usize> = (groups.iter().enumerate())
            .map(|(gi, group)| {
                let key = alike::templates_key(group, gi, &reads);
                *first.entry(key).or_insert_with(|| {
                    columns.push(gi);
                    columns.len() - 1
                })
            })
            .collect();
        let fits = (exemplars.iter())
            .map(|pod| {
                (columns.iter())
                    .map(|&gi| {
                        let mut fits = groups[gi].templates().iter().map(|t| static_fit(pod, t));
                        match fits.clone().find(Result::is_ok) {
                            Some(ok) => ok,
                            None => fits.next().unwrap_or(Ok(())),
                        }
                    })
                    .collect()
            })
            .collect();
        Statics {
            class,
            fits,
            classes: columns.len(),
        }
    }

    /// Equivalence group `e`'s static fit on node group `gi`.
    pub fn of(&self, e: usize, gi: usize) -> &Result<(), Unfit> {
        &self.fits[e][self.class[gi]]
    }

    /// Node group `gi`'s class: groups of one class have the same static fits.
    pub fn class(&self, gi: usize) -> usize {
        self.class[gi]
    }

    pub fn classes(&self) -> usize {
        self.classes
    }
}

/// Checks that hold for every node of a group: node selector and affinity, taints, room on an empty node
/// (after its DaemonSet pods), host ports the DaemonSets take.
pub fn static_fit(pod: &Pod, template: &Place) -> Result<(), Unfit> {
    node_fit(&pod.scheduling, &template.node)?;
    resources_fit(
        &pod.demand,
        &pod.extended,
        &template.free,
        &template.free_extended,
    )?;
    // Extended resources devices could serve, where the group's device plugin serves them instead.
    if let Some((demand, extended)) = served_by_plugins(pod, &template.node) {
        resources_fit(&demand, &extended, &template.free, &template.free_extended)?;
    }
    if pod
        .scheduling
        .host_ports
        .iter()
        .any(|p| template.ports.iter().any(|q| p.conflicts(q)))
    {
        return Err(Unfit::HostPorts);
    }
    Ok(())
}
