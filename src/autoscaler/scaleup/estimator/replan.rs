//! A changed plan made whole: its steps taken again from the cluster as it was through the searches'
//! predicates, then the pods they leave out offered the plan and new nodes as the searches offer them. What
//! the repair (`repair`) and the exhaustive search (`exact`) each make of a plan they changed.

use super::affinity::offer_again;
use super::first_fit::first_fit;
use super::packing::Packing;
use super::plan::{Demand, Estimate, EstimateLimits, PlanStep, Templates, Zones};
use crate::simulator::Filling;
use crate::simulator::FreeTree;
use crate::simulator::{Place, Topology};

/// The cluster as it was and the estimate's demands: what a search packs, and what a plan is taken again
/// from.
#[derive(Clone, Copy)]
pub(super) struct Replan<'a> {
    pub topology: &'a Topology,
    pub existing: &'a [Place],
    pub templates: Templates<'a>,
    pub demands: &'a [Demand<'a>],
    pub limits: EstimateLimits,
}

impl Replan<'_> {
    /// `steps` taken again through the predicates, then the pods still left out offered the plan and new
    /// nodes, as the searches offer them: first those of `regroup`'s demand in its zones only, then
    /// `first`'s, then the others'. `None` when a step's pods no longer all fit.
    pub fn replan(
        &self,
        plan: &Estimate,
        steps: &[PlanStep],
        first: usize,
        regroup: Option<(usize, &Zones)>,
    ) -> Option<Estimate> {
        let demands = self.demands;
        let expected = plan.nodes.len() + 1;
        let tree = FreeTree::with_capacity(expected);
        let mut packing = Packing::new(
            self.topology,
            self.existing,
            self.templates,
            self.limits,
            expected,
            tree,
        );
        let mut placed = vec![0u64; demands.len()];
        for &step in steps {
            if !packing.take(demands, step) {
                return None;
            }
            if let PlanStep::Put { demand, count, .. } = step {
                placed[demand] += count;
            }
        }
        let mut unfit = plan.unfit.clone();
        if let Some((q, zones)) = regroup {
            let demand = demands[q];
            let mut filling = Filling::new(demand.pod, demand.terms);
            let want = demand.count - placed[q];
            placed[q] += first_fit(&mut packing, &mut filling, zones, q, want).0;
        }
        let others = (0..demands.len()).filter(|&d| d != first);
        for d in std::iter::once(first).chain(others) {
            let demand = demands[d];
            let want = demand.count - placed[d];
            if want == 0 {
                continue;
            }
            let Ok(zones) = Zones::of(self.templates, demand.pod) else {
                continue;
            };
            let mut filling = Filling::new(demand.pod, demand.terms);
            let (k, why) = first_fit(&mut packing, &mut filling, &zones, d, want);
            placed[d] += k;
            if why.is_some() {
                unfit[d] = why;
            }
        }
        offer_again(&mut packing, demands, &mut placed, &mut unfit);
        for (d, demand) in demands.iter().enumerate() {
            if placed[d] == demand.count {
                unfit[d] = None;
            }
        }
        Some(packing.into_estimate(placed, unfit, plan.ordering))
    }
}
