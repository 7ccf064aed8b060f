//! What is free on each place, kept in a [`FreeTree`], so that an equivalence group's first fit over the
//! cluster's places skips whole runs of full nodes. Offering every node to every group made placing the
//! affinity surge (5,000 nodes, 4,900 Deployments of 10 replicas with required hostname anti-affinity, one
//! replica a node) grow as groups x nodes: each group was checked against every node, and against every
//! node the groups before it had filled.
//!
//! It serves two kinds of groups and leaves the rest to [`place_all`], with the same answer:
//! - pods with no constraint on other pods, which fill places first fit;
//! - pods that keep apart by hostname: a required anti-affinity term keyed by hostname that they match
//!   themselves, and no constraint that reads other nodes (affinity, spread, other keys, devices). One pod
//!   a node, and whether a node takes one depends on that node alone, so the rotating search of
//!   [`place_all`] puts them on the first nodes, in order, that take one.

use crate::model::{Pod, PodList};
use crate::simulator::free_tree::FreeTree;
use crate::simulator::predicates::node_fit;
use crate::simulator::spread_mins::SpreadMins;
use crate::simulator::topology::{Place, PodTerms, Topology};
use crate::simulator::world::{Filling, place_all};

/// What is free on each place, for first fit in log time; a place that takes no pod has nothing free.
pub struct Rooms {
    tree: FreeTree,
}

/// How an equivalence group is placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// No constraint on other pods: places fill in closed form.
    Room,
    /// One a node by their own hostname anti-affinity, nothing read beyond the node.
    Apart,
    /// Anything else: [`place_all`] offers them every place.
    Other,
}

fn kind(topology: &Topology, pod: &Pod, terms: &PodTerms) -> Kind {
    if terms.simple {
        return Kind::Room;
    }
    let per_host = |t: &usize| topology.per_host(*t);
    let local = pod.needs().is_none()
        && terms.affinity().is_empty()
        && !terms.spreads()
        && terms.anti().iter().all(per_host)
        && terms.blocked_by().iter().all(per_host);
    let own = (terms.anti().iter()).any(|t| terms.matched_by().contains(t));
    if local && own {
        Kind::Apart
    } else {
        Kind::Other
    }
}

impl Rooms {
    /// The free room of `places`, as they are now.
    pub fn new(places: &[Place]) -> Rooms {
        let mut tree = FreeTree::with_capacity(places.len());
        for place in places {
            tree.push(&Rooms::room(place));
        }
        Rooms { tree }
    }

    fn room(place: &Place) -> crate::model::Resources {
        if place.accepts {
            place.free
        } else {
            crate::model::Resources::default()
        }
    }

    /// Places the pods of one equivalence group (`members` of `pods`, alike, with `terms`) as
    /// [`place_all`] would, and keeps the room of the places they went to; the place of each pod placed.
    pub fn place<'a>(
        &mut self,
        topology: &mut Topology,
        places: &mut [Place],
        pods: impl Into<PodList<'a>>,
        members: &[usize],
        terms: &PodTerms,
    ) -> Vec<usize> {
        let pods = pods.into();
        let Some(&first) = members.first() else {
            return Vec::new();
        };
        let pod = pods.get(first);
        let at = match kind(topology, pod, terms) {
            Kind::Other => place_all(topology, places, pods, members, terms),
            kind => self.first_fit(topology, places, (pod, terms), members.len(), kind),
        };
        for &p in &at {
            self.tree.set(p, &Rooms::room(&places[p]));
        }
        at
    }

    /// Up to `want` pods like `pod` on the first places, in order, that take them: as many as fit on each
    /// (room alone), or one a place (kept apart).
    fn first_fit(
        &mut self,
        topology: &mut Topology,
        places: &mut [Place],
        (pod, terms): (&Pod, &PodTerms),
        want: usize,
        kind: Kind,
    ) -> Vec<usize> {
        let filling = Filling::new(pod, terms);
        let mut mins = SpreadMins::default();
        let mut out = Vec::new();
        let mut from = 0;
        while out.len() < want {
            let Some(p) = self.tree.first_at_or_after(from, &pod.demand) else {
                break;
            };
            from = p + 1;
            if !places[p].accepts || node_fit(&pod.scheduling, &places[p].node).is_err() {
                continue;
            }
            let left = (want - out.len()) as u64;
            let k = match kind {
                Kind::Room => {
                    let scope = &mut mins.with_others(&[]);
                    filling.fill(topology, scope, places, p, left).0
                }
                _ => {
                    if !filling.fits(topology, &mut mins.with_others(&[]), places, p) {
                        continue;
                    }
                    topology.put(pod, terms, &mut places[p], 1);
                    1
                }
            };
            self.tree.set(p, &Rooms::room(&places[p]));
            out.extend(std::iter::repeat_n(p, k as usize));
        }
        out
    }
}
