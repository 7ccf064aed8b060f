//! The world the loop plans in, as cluster-autoscaler's ClusterSnapshot: the nodes with the pods they hold,
//! each group's template (one per zone for a group in several) with its DaemonSet pods on it, and the nodes
//! already asked for, placed where their instances are or where their group will launch them. Pending pods
//! that fit in it as it is (upstream's FilterOutSchedulable) are placed here, so scale-up plans only for the
//! rest, and scale-down later finds the room they took.

use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::clustersnapshot::zones;
use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::degradation::BatchingBudget;
use crate::autoscaler::group::{Group, GroupFacts, Totals};
use crate::autoscaler::quotas::QuotaBook;
use crate::autoscaler::status::{Placed, UPCOMING};
use crate::model::{CapacityQuota, FastSet, LabelProjection, Node, Pod, PodList, ZONE_LABEL};
use crate::simulator::Dra;
use crate::simulator::EquivalenceGroup;
use crate::simulator::node_fit;
use crate::simulator::{Place, PlaceKind, PodTerms, Topology};
use crate::simulator::{Rooms, build_places, pods_by_node};
use std::collections::HashSet;
use std::sync::Arc;

/// What the snapshot is built from: the view and what the earlier stages found in it.
pub struct Inputs<'a> {
    pub view: &'a ClusterView,
    /// The view's pods and headroom's virtual pods after them.
    pub pods: PodList<'a>,
    /// Pods that hold room on a node (bound or nominated, not expendable).
    pub bound: &'a [usize],
    /// Every pod a DaemonSet runs.
    pub daemonsets: &'a [usize],
    /// Each view node's group, by node index.
    pub node_group: &'a [Option<usize>],
    pub facts: &'a [GroupFacts],
    pub counts: &'a [Counts],
    /// Nodes on their way out: they take no pod.
    pub deleting: &'a HashSet<String>,
    pub projection: &'a LabelProjection,
    /// The last loop's DRA state, to take what did not change from (`ClusterSnapshot::dra`).
    pub last_dra: Option<&'a Dra>,
    /// The CapacityQuotas enforced (none with `--capacity-quotas-enabled=false`); invalid ones are left out.
    pub quotas: &'a [CapacityQuota],
}

/// The pending pods that fit in the snapshot as it is.
pub struct Fitted {
    /// Each equivalence group's terms.
    pub terms: Vec<PodTerms>,
    /// How many of each equivalence group's pods (from the front) were placed.
    pub done: Vec<usize>,
    /// Each placed pod, and where.
    pub placed: Vec<Placed>,
}

#[derive(Clone)]
pub struct ClusterSnapshot {
    pub topology: Topology,
    /// The view's nodes first, by node index; then the upcoming nodes.
    pub places: Vec<Place>,
    /// The pods on each of the view's nodes (bound, nominated, or placed there this loop), by node index.
    pub on_node: Vec<Vec<usize>>,
    /// The cluster's DRA state this loop, when it has devices: the next loop's `last_dra`.
    pub dra: Option<Arc<Dra>>,
    /// The valid CapacityQuotas, what the view's nodes use of them, and what each template adds: the
    /// quota part of [`ClusterSnapshot::totals`].
    pub quotas: Arc<QuotaBook>,
}

impl ClusterSnapshot {
    /// Builds the snapshot for the pending pods of `pending` (their terms need the topology to know their
    /// keys), and fills each group's templates in `groups`.
    pub fn build<'e>(
        input: &Inputs,
        pending: impl IntoIterator<Item = &'e EquivalenceGroup>,
        groups: &mut [Group],
    ) -> ClusterSnapshot {
        let Inputs {
            view,
            pods,
            bound,
            daemonsets,
            ..
        } = *input;
        let exemplars: Vec<&Pod> = pending.into_iter().map(|eg| eg.exemplar(pods)).collect();
        let on_node = pods_by_node(&view.nodes, pods, bound);
        let (mut topology, mut places) = build_places(
            &view.nodes,
            input.node_group,
            pods,
            &on_node,
            &exemplars,
            input.projection,
        );
        // Devices (DRA) only where the cluster has any: a cluster without them pays nothing here.
        let with_templates = input.facts.iter().any(|f| !f.template_slices.is_empty());
        let dra = (!view.dra.is_empty() || with_templates)
            .then(|| Arc::new(Dra::after(&view.dra, input.last_dra)));
        for (place, node) in places.iter_mut().zip(view.nodes.iter()) {
            if input.deleting.contains(&node.name) {
                place.accepts = false;
            }
            if let Some(dra) = &dra {
                place.devices = dra.devices_of(node);
            }
        }
        let daemonsets = daemonset_exemplars(pods, daemonsets, &view.daemonsets);
        // Each group's nodes, in one pass: looking through every node for each group grew as groups x nodes.
        let mut nodes_of = vec![Vec::new(); input.facts.len()];
        for (n, g) in input.node_group.iter().enumerate() {
            if let Some(g) = *g {
                nodes_of[g].push(n);
            }
        }
        for (gi, f) in input.facts.iter().enumerate() {
            let Some(node) = &f.template else { continue };
            // Every zone's template publishes what the group's template does.
            let devices = (dra.as_ref()).and_then(|d| d.template_devices(&f.template_slices, node));
            let mut place = |n: &Arc<Node>| {
                let mut template = template_place(&mut topology, n, gi, &daemonsets);
                template.devices = devices.clone();
                template
            };
            let template = place(node);
            let variants: Vec<Place> = zones::templates(node, &f.zones)
                .iter()
                .map(&mut place)
                .collect();
            let upcoming = input.counts[gi].upcoming;
            if variants.is_empty() {
                for _ in 0..upcoming {
                    places.push(topology.copy(&template, PlaceKind::Upcoming));
                }
            } else {
                // Upcoming nodes where their instances are, or where the group will launch them.
                let names: Vec<&str> = variants
                    .iter()
                    .map(|v| v.node.labels[ZONE_LABEL].as_str())
                    .collect();
                let mut per_zone = vec![0u64; names.len()];
                for &n in &nodes_of[gi] {
                    let zone = view.nodes[n].labels.get(ZONE_LABEL).map(String::as_str);
                    if let Some(z) = names.iter().position(|name| Some(*name) == zone) {
                        per_zone[z] += 1;
                    }
                }
                let coming = input.counts[gi]
                    .unregistered
                    .iter()
                    .filter_map(|&i| zones::of_instance(&f.instances[i].id));
                for z in zones::upcoming(&names, &mut per_zone, coming, upcoming) {
                    places.push(topology.copy(&variants[z], PlaceKind::Upcoming));
                }
            }
            groups[gi].template = Some(template);
            groups[gi].zones = variants;
        }
        let templates = groups.iter().map(|g| g.templates());
        let quotas = Arc::new(QuotaBook::new(input.quotas, &view.nodes, templates));
        ClusterSnapshot {
            on_node,
            topology,
            places,
            dra,
            quotas,
        }
    }

    /// FilterOutSchedulable: the pending pods that fit where nodes are or are coming take that room, and need
    /// nothing new; tried group by group while `budget` lasts.
    pub fn place_pending(
        &mut self,
        pods: PodList<'_>,
        pending: &[EquivalenceGroup],
        groups: &[Group],
        budget: &mut BatchingBudget,
    ) -> Fitted {
        let mut placed = Vec::new();
        let terms: Vec<PodTerms> = pending
            .iter()
            .map(|eg| self.topology.resolve(eg.exemplar(pods)))
            .collect();
        let mut done = vec![0usize; pending.len()];
        // A pod refused for its pod affinity or a topology spread may be taken once pods placed after it
        // are there (the partner it wants, the domains it must keep level with): such pods are offered the
        // nodes again, pass after pass, until a pass places none; each pass that goes on placed a pod.
        let waits_on_others = |eg: &EquivalenceGroup| {
            let scheduling = &eg.exemplar(pods).scheduling;
            !scheduling.affinity.is_empty() || !scheduling.spread.is_empty()
        };
        // First fit over the places' free room: groups are not offered the nodes already full.
        let mut rooms = Rooms::new(&self.places);
        let mut first_pass = true;
        loop {
            let mut progress = false;
            for (e, eg) in pending.iter().enumerate() {
                if budget.spent(e) {
                    break; // the groups not tried wait for the next loop (`BatchingBudget::left_from`)
                }
                let rest = &eg.pods[done[e]..];
                if rest.is_empty() || !(first_pass || waits_on_others(eg)) {
                    continue;
                }
                let at = rooms.place(&mut self.topology, &mut self.places, pods, rest, &terms[e]);
                progress |= !at.is_empty();
                for (k, p) in at.into_iter().enumerate() {
                    let place = &self.places[p];
                    let node = match place.kind {
                        PlaceKind::Existing => {
                            // Scale-down must find these a place too, as upstream's snapshot holds them.
                            self.on_node[p].push(rest[k]);
                            place.node.name.clone()
                        }
                        _ => UPCOMING.into(),
                    };
                    placed.push(Placed {
                        pod: pods[rest[k]].key(),
                        node,
                        node_group: place.group.map(|g| groups[g].id.clone()),
                    });
                    done[e] += 1;
                }
            }
            if !progress {
                break;
            }
            first_pass = false;
        }
        Fitted {
            terms,
            done,
            placed,
        }
    }

    /// The nodes, cores and memory the cluster has or has asked for, for the cluster-wide limits, and what
    /// the nodes each CapacityQuota matches use.
    pub fn totals(&self) -> Totals {
        Totals::of(&self.places, &self.quotas)
    }
}

/// A group's template as a place, with the DaemonSet pods that would run on such a node already on it.
fn template_place(
    topology: &mut Topology,
    node: &Arc<Node>,
    group: usize,
    daemonsets: &[Pod],
) -> Place {
    let mut template = topology.place(node.clone(), Some(group), PlaceKind::Planned);
    for ds in daemonsets {
        if node_fit(&ds.scheduling, node).is_ok() {
            template.free = template.free.minus(&ds.demand);
            template
                .ports
                .extend(ds.scheduling.host_ports.iter().cloned());
        }
    }
    template
}

/// One pod per DaemonSet, from the pods DaemonSets run (`running`, indices into `pods`) and their templates:
/// what each would add to a new node. A running pod is preferred (admission may
/// have changed its requests); DaemonSets with no pod running yet come from their template. A running pod
/// loses the node its controller pinned it to (`matchFields` on `metadata.name`), as upstream's template
/// pods do, so that it asks of a new node only what its DaemonSet asks.
fn daemonset_exemplars(pods: PodList<'_>, running: &[usize], templates: &[Pod]) -> Vec<Pod> {
    let mut seen = FastSet::default();
    // A DaemonSet's pods come in a row (one a node): a pod of the DaemonSet before it is known without a
    // lookup.
    let mut last = None;
    (running.iter().map(|&i| pods.get(i)))
        .chain(templates)
        .filter(|p| {
            let uid = p.controller.as_ref().map(|c| c.uid.as_str());
            let new = last.is_none_or(|last| last != uid) && seen.insert(uid);
            last = Some(uid);
            new
        })
        .map(|p| Pod {
            scheduling: Arc::new(p.scheduling.for_any_node()),
            ..p.clone()
        })
        .collect()
}
