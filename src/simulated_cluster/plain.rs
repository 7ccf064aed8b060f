//! The simulated cluster's binding decision, made by rules the companion does not share: kube-scheduler's
//! filters written plainly and the DRA allocator by brute force (`crate::oracle`). The companion's placement
//! (asked of `simulator/`, as its loop plans) only says which node to try first, as kube-scheduler's scoring
//! would pick among those that pass; whether a pod may go there is the plain rules' alone. A pod the
//! companion places on a node the plain rules refuse is a [`Disagreement`], as is a pod the plain rules bind
//! where the companion found no node.

use crate::model::{Allocation, ClaimSpec, GPU_RESOURCE, Name, Node, Pod};
use crate::oracle::{self, Ask, Cluster, Verdict};
use crate::simulator::DeviceClasses;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

/// The companion's predicates and the simulated cluster's plain rules disagreed on a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// `namespace/name`.
    pub pod: String,
    pub kind: DisagreementKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DisagreementKind {
    /// The companion placed it on `node`; the plain rules refuse it there, for `reason`.
    Refused { node: String, reason: String },
    /// The companion found no node for it; the plain rules bound it on `node`.
    Unplaced { node: String },
}

impl fmt::Display for Disagreement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DisagreementKind::Refused { node, reason } => write!(
                f,
                "pod {} placed on {node} by the companion's predicates, refused there by the plain \
                 scheduler: {reason}",
                self.pod
            ),
            DisagreementKind::Unplaced { node } => write!(
                f,
                "pod {} fits nowhere by the companion's predicates, bound on {node} by the plain scheduler",
                self.pod
            ),
        }
    }
}

/// Where the plain rules bind each pod, with the allocations of the claims it needed allocated there (by
/// the names its needs give them).
pub(super) struct Bound {
    pub(super) pod: usize,
    pub(super) node: usize,
    pub(super) allocations: Vec<(Name, Allocation)>,
}

/// The pods `order` names, each on the first node that the plain rules admit it on, trying the node `planned`
/// gives it first: where each goes, and where the companion's placement disagreed.
pub(super) fn bind(
    nodes: &[Arc<Node>],
    pods: &[Pod],
    dra: &crate::model::DraObjects,
    order: &[usize],
    planned: &HashMap<usize, usize>,
) -> (Vec<Bound>, Vec<Disagreement>) {
    // Each pending pod as a node whose device plugins serve its extended resources counts it: with them.
    let served: Vec<Pod> = order.iter().map(|&i| with_extended(&pods[i])).collect();
    let mut cluster = Cluster {
        nodes: nodes.iter().map(|n| &**n).collect(),
        pods: (pods.iter())
            .filter(|p| p.holds_room())
            .filter_map(|p| {
                let at = nodes
                    .iter()
                    .position(|n| Some(&*n.name) == p.node_name.as_deref())?;
                Some((p, at))
            })
            .collect(),
    };
    let mut devices = Devices::new(dra);
    let mut bound = Vec::new();
    let mut disagreements = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let pod = &pods[i];
        let first = planned.get(&i).copied();
        let tries = first
            .into_iter()
            .chain((0..nodes.len()).filter(|&n| Some(n) != first));
        let mut placed = None;
        for n in tries {
            let node = &nodes[n];
            let asked = match served_by_plugins(pod, node) {
                true => &served[k],
                false => pod,
            };
            let verdict = oracle::admits(&cluster, asked, n)
                .map_err(str::to_string)
                .and_then(|()| devices.fit(pod, node));
            match verdict {
                Ok(allocations) => {
                    placed = Some((n, asked, allocations));
                    break;
                }
                Err(reason) if Some(n) == first => disagreements.push(Disagreement {
                    pod: format!("{}/{}", pod.namespace, pod.name),
                    kind: DisagreementKind::Refused {
                        node: node.name.clone(),
                        reason,
                    },
                }),
                Err(_) => {}
            }
        }
        let Some((n, asked, allocations)) = placed else {
            continue;
        };
        if first.is_none() {
            disagreements.push(Disagreement {
                pod: format!("{}/{}", pod.namespace, pod.name),
                kind: DisagreementKind::Unplaced {
                    node: nodes[n].name.clone(),
                },
            });
        }
        devices.hold(pod, &allocations);
        cluster.pods.push((asked, n));
        bound.push(Bound {
            pod: i,
            node: n,
            allocations,
        });
    }
    (bound, disagreements)
}

/// Whether `node`'s device plugins serve one of the pod's extended resources a DeviceClass stands for (it
/// has the resource in its allocatable; KEP-5004 then leaves devices out of it).
fn served_by_plugins(pod: &Pod, node: &Node) -> bool {
    pod.needs().is_some_and(|needs| {
        needs
            .extended
            .iter()
            .any(|c| plugin_serves(node, &c.resource))
    })
}

fn plugin_serves(node: &Node, resource: &str) -> bool {
    match resource == GPU_RESOURCE {
        true => node.allocatable.gpus > 0,
        false => node.extended.get(resource).is_some_and(|&n| n > 0),
    }
}

/// The pod with its requests of extended resources a class stands for back in its demand (they were taken
/// out while it waits, to be placed either way).
fn with_extended(pod: &Pod) -> Pod {
    let mut pod = pod.clone();
    if let Some(needs) = pod.needs().cloned() {
        for claim in &needs.extended {
            match &*claim.resource == GPU_RESOURCE {
                true => pod.demand.gpus += claim.count,
                false => {
                    pod.extended.insert(claim.resource.to_string(), claim.count);
                }
            }
        }
    }
    pod
}

/// The devices the binding takes as it goes: those allocated already, and the shared claims allocated this
/// pass (the first of their pods allocates them; the others go where that allocation is usable).
struct Devices<'d> {
    dra: &'d crate::model::DraObjects,
    classes: DeviceClasses,
    in_use: BTreeSet<crate::model::DeviceId>,
    shared: HashMap<Name, Allocation>,
}

impl<'d> Devices<'d> {
    fn new(dra: &'d crate::model::DraObjects) -> Devices<'d> {
        let mut devices = Devices {
            dra,
            classes: DeviceClasses::new(&dra.classes),
            in_use: BTreeSet::new(),
            shared: HashMap::new(),
        };
        for allocation in dra.claims.iter().filter_map(|c| c.allocation.as_ref()) {
            devices.take(allocation);
        }
        devices
    }

    /// Admin access holds no device from other claims.
    fn take(&mut self, allocation: &Allocation) {
        let held = allocation.devices.iter().filter(|d| !d.admin_access);
        self.in_use.extend(held.map(|d| d.device.clone()));
    }

    /// The allocations the pod's claims get on `node`, or why they cannot be allocated there: claims
    /// allocated already must be usable from it; the others, and its extended resources no device plugin
    /// of the node serves, are allocated from the devices it reaches.
    fn fit(&self, pod: &Pod, node: &Node) -> Result<Vec<(Name, Allocation)>, String> {
        let Some(needs) = pod.needs() else {
            return Ok(Vec::new());
        };
        if let Some(missing) = &needs.missing {
            return Err(missing.to_string());
        }
        let usable = |a: &Allocation| {
            (a.node_selector.as_ref()).is_none_or(|s| oracle::node_affinity(s, node))
        };
        if let Some(pinned) = needs.allocated.iter().find(|c| !usable(&c.allocation)) {
            return Err(format!("claim {} is allocated elsewhere", pinned.name));
        }
        let mut to_allocate: Vec<(&Name, &ClaimSpec)> = Vec::new();
        for claim in &needs.unallocated {
            match self.shared.get(&claim.name).filter(|_| claim.shared) {
                Some(a) if !usable(a) => {
                    return Err(format!("claim {} is allocated elsewhere", claim.name));
                }
                Some(_) => {}
                None => to_allocate.push((&claim.name, &claim.spec)),
            }
        }
        for claim in needs.extended.iter() {
            if !plugin_serves(node, &claim.resource) {
                to_allocate.push((&claim.name, &claim.spec));
            }
        }
        if to_allocate.is_empty() {
            return Ok(Vec::new());
        }
        let reached = oracle::reach(&self.dra.slices, node);
        let selects = |ask: &crate::model::DeviceAsk, d: &oracle::Reached| {
            self.classes.selects(ask, &d.id.driver, d.device)
        };
        let ask = Ask {
            node,
            devices: &reached,
            in_use: &self.in_use,
            selects: &selects,
        };
        let specs: Vec<&ClaimSpec> = to_allocate.iter().map(|(_, s)| *s).collect();
        match oracle::allocate(&specs, &ask) {
            Verdict::Fits(allocations) => Ok((to_allocate.iter().map(|(n, _)| (*n).clone()))
                .zip(allocations)
                .collect()),
            Verdict::Refused => Err("cannot allocate all claims".to_string()),
            Verdict::TooLarge => Err(format!(
                "more than {} device assignments to try",
                oracle::MAX_TRIES
            )),
        }
    }

    /// The pod is bound with `allocations`: their devices are held, shared claims' for the pods after it.
    fn hold(&mut self, pod: &Pod, allocations: &[(Name, Allocation)]) {
        let shared: BTreeSet<&Name> = (pod.needs().into_iter())
            .flat_map(|n| n.unallocated.iter().filter(|c| c.shared).map(|c| &c.name))
            .collect();
        for (name, allocation) in allocations {
            self.take(allocation);
            if shared.contains(name) {
                self.shared.insert(name.clone(), allocation.clone());
            }
        }
    }
}
