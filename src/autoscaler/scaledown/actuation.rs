//! Carrying out a scale-down (cluster-autoscaler's actuator), one step per loop so that a drain never holds
//! the loop up: taint the node `ToBeDeletedByClusterAutoscaler`, let the scheduler see the taint, evict its
//! pods through the Eviction API (PDBs are the API server's to enforce; refusals are retried up to
//! `--max-pod-eviction-time`), wait for them to go, then NodeGroupDeleteNodes over gRPC. Any failure takes
//! our taint back off and says why; the node is back in service.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::{ClusterError, ClusterSource, ClusterView};
use crate::autoscaler::scaledown::drain::{self, Blocking, PdbBudget, Rules, Verdict};
use crate::model::{
    DELETION_CANDIDATE_TAINT, Node, Phase, Pod, PodList, TO_BE_DELETED_TAINT, Taint, TaintEffect,
};
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Pacing of deletions.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    /// `--node-delete-delay-after-taint`: let the scheduler see the taint before the first eviction.
    pub delay_after_taint: Duration,
    /// `--max-pod-eviction-time`: how long refused evictions are retried.
    pub max_pod_eviction_time: Duration,
    /// `--max-graceful-termination-sec`: the most grace an evicted pod gets.
    pub max_graceful_termination: Duration,
}

impl Default for Pacing {
    fn default() -> Pacing {
        Pacing {
            delay_after_taint: Duration::from_secs(5),
            max_pod_eviction_time: Duration::from_secs(120),
            max_graceful_termination: Duration::from_secs(600),
        }
    }
}

/// One node on its way out.
#[derive(Clone, Debug)]
pub struct Deletion {
    pub node: String,
    pub provider_id: String,
    pub group: String,
    /// Planned with no pod to move: it is aborted if pods arrive.
    pub empty: bool,
    pub tainted_at: SystemTime,
    /// When the first eviction was tried.
    drain_started: Option<SystemTime>,
    /// Why the last evictions were refused.
    refused: Vec<String>,
}

/// How a deletion ended.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// NodeGroupDeleteNodes succeeded; `empty` when the node was removed with no pod to move.
    Deleted {
        node: String,
        group: String,
        empty: bool,
    },
    /// The node is back in service (taint removed); why it could not go.
    Failed {
        node: String,
        group: String,
        why: String,
    },
    /// Still draining; what it waits for.
    Draining {
        node: String,
        group: String,
        waiting: String,
    },
}

/// The deletions in progress.
#[derive(Debug, Default)]
pub struct Actuator {
    in_flight: BTreeMap<String, Deletion>,
}

/// The taint that marks a node being removed: NoSchedule, valued with the time (unix seconds) as upstream.
pub fn to_be_deleted(now: SystemTime) -> Taint {
    stamped(TO_BE_DELETED_TAINT, TaintEffect::NoSchedule, now)
}

/// The soft taint on unneeded nodes: PreferNoSchedule, valued with the time as upstream.
pub fn deletion_candidate(now: SystemTime) -> Taint {
    stamped(DELETION_CANDIDATE_TAINT, TaintEffect::PreferNoSchedule, now)
}

fn stamped(key: &str, effect: TaintEffect, now: SystemTime) -> Taint {
    Taint {
        key: key.into(),
        value: now
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs()
            .to_string(),
        effect,
    }
}

impl Actuator {
    pub fn in_flight(&self) -> impl Iterator<Item = &Deletion> {
        self.in_flight.values()
    }

    pub fn contains(&self, node: &str) -> bool {
        self.in_flight.contains_key(node)
    }

    /// Deletions that have pods to evict.
    pub fn drains(&self) -> usize {
        self.in_flight.values().filter(|d| !d.empty).count()
    }

    /// Starts removing `node` of `group`: the taint goes on now; the drain begins at a later step.
    pub async fn start(
        &mut self,
        cluster: &dyn ClusterSource,
        node: &Node,
        group: &str,
        empty: bool,
        now: SystemTime,
    ) -> Result<(), ClusterError> {
        cluster.taint(&node.name, &to_be_deleted(now)).await?;
        self.in_flight.insert(
            node.name.clone(),
            Deletion {
                node: node.name.clone(),
                provider_id: node.provider_id.clone(),
                group: group.into(),
                empty,
                tainted_at: now,
                drain_started: None,
                refused: Vec::new(),
            },
        );
        Ok(())
    }

    /// Moves every deletion one step on, over the cluster as `view` shows it.
    pub async fn advance(
        &mut self,
        cluster: &dyn ClusterSource,
        client: &ProviderClient,
        view: &ClusterView,
        rules: &Rules,
        pacing: &Pacing,
        now: SystemTime,
    ) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        let names: Vec<String> = self.in_flight.keys().cloned().collect();
        for name in names {
            let deletion = self.in_flight.get_mut(&name).expect("in flight");
            let step = step(cluster, client, view, rules, pacing, deletion, now).await;
            let (node, group, empty) = (
                deletion.node.clone(),
                deletion.group.clone(),
                deletion.empty,
            );
            match step {
                Step::Wait(waiting) => outcomes.push(Outcome::Draining {
                    node,
                    group,
                    waiting,
                }),
                Step::Deleted => {
                    self.in_flight.remove(&name);
                    outcomes.push(Outcome::Deleted { node, group, empty });
                }
                Step::Abort(why) => {
                    self.in_flight.remove(&name);
                    let why = match cluster.untaint(&node, TO_BE_DELETED_TAINT).await {
                        Ok(()) | Err(ClusterError::NoNode(_)) => why,
                        Err(e) => format!("{why}; removing the taint failed too: {e}"),
                    };
                    outcomes.push(Outcome::Failed { node, group, why });
                }
            }
        }
        outcomes
    }
}

enum Step {
    Wait(String),
    Deleted,
    Abort(String),
}

/// A node's pods by what its drain must do with them (DaemonSet, mirror and long-terminating pods stay).
struct Leaving<'a> {
    to_evict: Vec<&'a Pod>,
    /// Evicted or deleted, not gone yet.
    terminating: Vec<&'a Pod>,
    /// Pods no eviction may move, with why.
    blocked: Vec<(&'a Pod, String)>,
}

fn leaving<'a>(
    pods: impl Iterator<Item = &'a Pod>,
    rules: &Rules,
    pdbs: &PdbBudget,
    now: SystemTime,
) -> Leaving<'a> {
    let mut sorted = Leaving {
        to_evict: Vec::new(),
        terminating: Vec::new(),
        blocked: Vec::new(),
    };
    for pod in pods {
        match drain::classify(pod, rules, pdbs, now) {
            Verdict::Stays => {}
            // The API server enforces budgets; a refusal is retried.
            Verdict::Evicted { .. } | Verdict::Blocks(Blocking::NotEnoughPdb, _) => {
                if pod.deleted.is_some() {
                    sorted.terminating.push(pod);
                } else {
                    sorted.to_evict.push(pod);
                }
            }
            Verdict::Blocks(_, why) => sorted.blocked.push((pod, why)),
        }
    }
    sorted
}

async fn step(
    cluster: &dyn ClusterSource,
    client: &ProviderClient,
    view: &ClusterView,
    rules: &Rules,
    pacing: &Pacing,
    d: &mut Deletion,
    now: SystemTime,
) -> Step {
    let Some(node) = view.nodes.iter().find(|n| n.name == d.node) else {
        return Step::Abort("the node left the cluster before it was deleted".into());
    };
    if node.provider_id != d.provider_id {
        return Step::Abort("the node's providerID changed: it is another instance".into());
    }
    if now < d.tainted_at + pacing.delay_after_taint {
        return Step::Wait("the scheduler to see the taint".into());
    }
    // What must still leave: re-checked now, as pods may have arrived before the taint did.
    let pdbs = PdbBudget::new(&view.pdbs);
    let on_node = PodList::from(&view.pods)
        .into_iter()
        .filter(|p| p.node_name.as_deref() == Some(&d.node));
    let Leaving {
        to_evict,
        terminating,
        blocked,
    } = leaving(on_node, rules, &pdbs, now);
    if let Some((_, why)) = blocked.first() {
        return Step::Abort(format!("a pod that cannot be evicted arrived: {why}"));
    }
    if d.empty && !(to_evict.is_empty() && terminating.is_empty()) {
        return Step::Abort(format!(
            "planned as empty, but pods arrived: {}",
            to_evict
                .iter()
                .chain(&terminating)
                .map(|p| p.key())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !to_evict.is_empty() {
        let started = *d.drain_started.get_or_insert(now);
        d.refused.clear();
        for pod in &to_evict {
            let grace = Duration::from_secs(pod.disruption.grace_period_seconds)
                .min(pacing.max_graceful_termination);
            match cluster.evict(&pod.namespace, &pod.name, grace).await {
                Ok(()) | Err(ClusterError::NoPod(_)) => {}
                Err(ClusterError::EvictionRefused { pod, why }) => {
                    d.refused.push(format!("{pod}: {why}"));
                }
                Err(e) => return Step::Abort(format!("evicting {}: {e}", pod.key())),
            }
        }
        if !d.refused.is_empty() {
            if now.duration_since(started).unwrap_or_default() > pacing.max_pod_eviction_time {
                return Step::Abort(format!(
                    "evictions still refused after --max-pod-eviction-time {}: {}",
                    humantime::format_duration(pacing.max_pod_eviction_time),
                    d.refused.join("; ")
                ));
            }
            return Step::Wait(format!("refused evictions: {}", d.refused.join("; ")));
        }
        return Step::Wait(format!("{} evicted pod(s) to stop", to_evict.len()));
    }
    if !terminating.is_empty() {
        let started = d.drain_started.unwrap_or(d.tainted_at);
        let limit = pacing.max_pod_eviction_time
            + pacing.max_graceful_termination
            + Duration::from_secs(30);
        if now.duration_since(started).unwrap_or_default() > limit {
            return Step::Abort(format!(
                "pods still terminating after {}: {}",
                humantime::format_duration(limit),
                terminating
                    .iter()
                    .map(|p| p.key())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        return Step::Wait(format!("{} evicted pod(s) to stop", terminating.len()));
    }
    if let Some(step) = unseen_pods(cluster, &d.node, rules, &pdbs, now).await {
        return step;
    }
    match client
        .delete_nodes(&d.group, &[(d.node.clone(), d.provider_id.clone())])
        .await
    {
        Ok(()) => Step::Deleted,
        Err(e) => Step::Abort(format!("NodeGroupDeleteNodes failed: {e}")),
    }
}

/// The view comes from a cache: a pod bound since its last event would be deleted with the node. What the
/// cluster says now decides; a pod the view missed ends this deletion as a pod that arrived would. `None`
/// when nothing stands in the way.
async fn unseen_pods(
    cluster: &dyn ClusterSource,
    node: &str,
    rules: &Rules,
    pdbs: &PdbBudget<'_>,
    now: SystemTime,
) -> Option<Step> {
    match cluster.pods_on(node).await {
        Ok(None) => None,
        Ok(Some(pods)) => {
            let running = pods.iter().filter(|p| p.phase != Phase::Terminal);
            let found = leaving(running, rules, pdbs, now);
            let blocked = found.blocked.iter().map(|(p, _)| *p);
            // Any pod on its way out, blocked or not, is waited for.
            let stopping = (found.terminating.iter().copied())
                .chain(blocked.clone().filter(|p| p.deleted.is_some()))
                .next();
            if let Some(pod) = stopping {
                return Some(Step::Wait(format!("{} to stop", pod.key())));
            }
            let missed: Vec<String> = (found.to_evict.iter().copied())
                .chain(blocked)
                .map(Pod::key)
                .collect();
            (!missed.is_empty()).then(|| {
                Step::Abort(format!(
                    "pods the cluster view had not shown were on it: {}",
                    missed.join(", ")
                ))
            })
        }
        Err(e) => Some(Step::Wait(format!(
            "its pods to be read before deletion: {e}"
        ))),
    }
}
