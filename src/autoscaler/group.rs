//! A node group as the stages see it: what the provider said of it this loop (`GroupFacts`, read by the
//! cluster state, scale-down and consolidation), and as the planners see it (`Group`: its templates with
//! their DaemonSet pods, and why it may not grow; scale-up, consolidation and the health check share it).

use crate::autoscaler::quotas::{QuotaBook, QuotaLedger};
use crate::model::{
    GroupOptions, Instance, Node, NodeGroup, NodeGroupState, NodeGroupStatus, ResourceSlice,
    ZONE_LABEL,
};
use crate::simulator::Place;
use std::sync::Arc;

/// A node group with what the provider said of it this loop.
pub struct GroupFacts {
    pub group: NodeGroup,
    pub target: i32,
    pub instances: Vec<Instance>,
    pub template: Option<Arc<Node>>,
    /// The ResourceSlices a new node of it publishes (DRA), when the provider says them: in its template
    /// (`resourceSliceBytes`, field 3), else in `ekscale.v1.NodeGroups/TemplateResourceSlices`.
    pub template_slices: Vec<Arc<ResourceSlice>>,
    /// Its Availability Zones, when the provider says them.
    pub zones: Vec<String>,
    /// Its EKS status and the image of its new nodes, when the provider says them
    /// (`ekscale.v1.NodeGroups/DescribeNodeGroups`).
    pub state: Option<NodeGroupState>,
    /// What GetOptions says, over the companion's defaults.
    pub options: GroupOptions,
    pub problem: Option<String>,
}

impl GroupFacts {
    /// A managed node group update is replacing its nodes: EKS's to remove, so nothing of it is scaled
    /// down and its target is never lowered meanwhile.
    pub fn updating(&self) -> bool {
        (self.state.as_ref()).is_some_and(|s| s.status == NodeGroupStatus::Updating)
    }

    /// The image its new nodes get, when the provider says it.
    pub fn image(&self) -> Option<&str> {
        self.state.as_ref()?.image.as_deref()
    }
}

/// A node group as the planner sees it.
#[derive(Clone, Debug)]
pub struct Group {
    pub id: String,
    pub min_size: i32,
    pub max_size: i32,
    pub target_size: i32,
    /// The template node with its DaemonSet pods already on it; `None` when the provider has none.
    pub template: Option<Place>,
    /// For a group whose Auto Scaling group spans several zones: its template in each zone, with the
    /// DaemonSet pods that would run there (`template` is the first); empty for a group in one zone.
    pub zones: Vec<Place>,
    /// Why it may not grow this loop (backoff, failed instances, ...).
    pub skip: Option<String>,
    /// Filled when the expander prices options.
    pub node_price: Option<f64>,
    /// The provider's `zeroOrMaxNodeScaling`: the group is either empty or at its max size, so any
    /// scale-up takes it to max, or does not happen.
    pub zero_or_max: bool,
    /// New nodes of it that go to capacity already paid for (the available instances of its active
    /// reservations, of its open Capacity Blocks): priced 0/h by the expander (`autoscaler/capacity/`).
    pub prepaid: u32,
    /// Its `skip` is a Capacity Block with no free instance: a limit one node less lifts (the instance it
    /// frees is the block's), not a hold, so a drifted or expired node of it may be terminated first.
    pub full: bool,
}

impl Group {
    /// Its template in every zone it launches in: one, or one per zone.
    pub fn templates(&self) -> &[Place] {
        if self.zones.is_empty() {
            self.template.as_slice()
        } else {
            &self.zones
        }
    }
}

/// Nodes, cores and memory the cluster has or has asked for, and what the nodes each CapacityQuota matches
/// use: what the cluster-wide flags and the quotas are checked against.
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub nodes: u64,
    pub cpu_millis: u64,
    pub memory_bytes: u64,
    pub quotas: QuotaLedger,
}

impl Totals {
    /// The nodes, cores and memory of `places`, and their use of `quotas`' limits.
    pub fn of(places: &[Place], quotas: &Arc<QuotaBook>) -> Totals {
        let mut totals = Totals {
            quotas: QuotaLedger::of(quotas, places),
            ..Totals::default()
        };
        for p in places {
            totals.nodes += 1;
            totals.cpu_millis += p.node.capacity.cpu_millis;
            totals.memory_bytes += p.node.capacity.memory_bytes;
        }
        totals
    }

    /// One more node of group `group` from `template`, counted everywhere it counts.
    pub fn add(&mut self, group: usize, template: &Node) {
        self.nodes += 1;
        self.cpu_millis += template.capacity.cpu_millis;
        self.memory_bytes += template.capacity.memory_bytes;
        self.quotas.add(Some(group), template, 1);
    }
}

/// How many of each group's places (nodes, upcoming, planned) each of its zones holds, for every group in one
/// pass over the places: where a group's Auto Scaling group launches next is its zone with the fewest.
pub fn nodes_per_zone(groups: &[Group], places: &[Place]) -> Vec<Vec<u64>> {
    let zone = |p: &Place| p.node.labels.get(ZONE_LABEL).cloned();
    let zones: Vec<Vec<Option<String>>> = (groups.iter())
        .map(|g| g.templates().iter().map(zone).collect())
        .collect();
    let mut counts: Vec<Vec<u64>> = zones.iter().map(|z| vec![0; z.len()]).collect();
    for place in places {
        let Some(g) = place.group.filter(|&g| zones[g].len() > 1) else {
            continue;
        };
        let here = zone(place);
        if let Some(z) = zones[g].iter().position(|z| *z == here) {
            counts[g][z] += 1;
        }
    }
    counts
}
