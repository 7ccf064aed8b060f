//! Carrying out a scale-down (cluster-autoscaler's actuator), one step per loop so that a drain never holds
//! the loop up: taint the node `ToBeDeletedByClusterAutoscaler`, let the scheduler see the taint, evict its
//! pods through the Eviction API (PDBs are the API server's to enforce; refusals are retried up to
//! `--max-pod-eviction-time`), wait for them to go, then NodeGroupDeleteNodes over gRPC. Any failure takes
//! our taint back off and says why; the node is back in service.
//!
//! A node that goes for a disruption (expiry, drift) is drained as Karpenter drains it: a pod no eviction
//! may move (do-not-disrupt, safe-to-evict "false", an exhausted PodDisruptionBudget) holds the drain
//! instead of ending it (the other pods are evicted meanwhile), and once its group's `terminationGracePeriod`
//! has passed since the drain began, the pods still there are deleted past their budgets and the node goes.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::{ClusterError, ClusterSource, ClusterView};
use crate::autoscaler::scaledown::act::rotation::Rotations;
use crate::autoscaler::scaledown::plan::drainability::{self, Blocking, PdbBudget, Rules, Verdict};
use crate::autoscaler::scaledown::plan::planner::DeletionKind;
use crate::model::{
    DELETION_CANDIDATE_TAINT, Node, Phase, Pod, PodList, TO_BE_DELETED_TAINT, Taint, TaintEffect,
};
use std::collections::{BTreeMap, HashSet};
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

/// Why a node goes, which decides what a pod that cannot leave does to its drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Unneeded (scale-down, consolidation): such a pod ends the deletion, and the node stays.
    ScaleDown,
    /// Expired or drifted: such a pod holds the drain until `grace` (none: until it leaves) has passed
    /// since the drain began, and is then deleted.
    Disruption {
        reason: &'static str,
        grace: Option<Duration>,
    },
    /// Leaving (a Spot interruption, a scheduled event, a stopped instance: `autoscaler/leaving/`): drained
    /// at once, such a pod holds the drain until `at`, when the instance goes, and is then deleted; never
    /// held past it. Without `at` (a termination handler's taint says no time) it holds as long as it takes.
    Leaving {
        reason: &'static str,
        at: Option<SystemTime>,
    },
}

/// A node to start removing: which, its group, whether it has pods to move, and why it goes.
#[derive(Clone, Copy, Debug)]
pub struct DeletionOrder<'a> {
    pub node: &'a Node,
    pub group: &'a str,
    pub kind: DeletionKind,
    pub cause: Cause,
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
    pub cause: Cause,
    /// When the first eviction was tried (for a disruption: when the drain could first begin).
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
        cause: Cause,
    },
    /// The node is back in service (taint removed); why it could not go.
    Failed {
        node: String,
        group: String,
        why: String,
    },
    /// The node is back in service, nothing failed: its group started a managed node group update, whose
    /// nodes are EKS's to replace.
    Stopped {
        node: String,
        group: String,
        why: String,
    },
    /// Still draining; what it waits for, and for a disruption's drain a pod holds, the disruption's
    /// reason (`expired`, `drifted`).
    Draining {
        node: String,
        group: String,
        waiting: String,
        held: Option<&'static str>,
    },
}

/// The deletions in progress, and the terminate-first rotations whose replacement follows a deletion.
#[derive(Debug, Default)]
pub struct Actuator {
    in_flight: BTreeMap<String, Deletion>,
    pub(in crate::autoscaler::scaledown) rotations: Rotations,
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

    /// Starts removing the order's node: the taint goes on now; the drain begins at a later step.
    pub async fn start(
        &mut self,
        cluster: &dyn ClusterSource,
        order: DeletionOrder<'_>,
        now: SystemTime,
    ) -> Result<(), ClusterError> {
        let DeletionOrder {
            node,
            group,
            kind,
            cause,
        } = order;
        cluster.taint(&node.name, &to_be_deleted(now)).await?;
        self.in_flight.insert(
            node.name.clone(),
            Deletion {
                node: node.name.clone(),
                provider_id: node.provider_id.clone(),
                group: group.into(),
                empty: kind == DeletionKind::Empty,
                tainted_at: now,
                cause,
                drain_started: None,
                refused: Vec::new(),
            },
        );
        Ok(())
    }

    /// Moves every deletion one step on, over the cluster as the ground's view shows it; a deletion in one of
    /// the `updating` groups is given up, its node back in service.
    pub async fn advance(
        &mut self,
        ground: &StepGround<'_>,
        updating: &HashSet<&str>,
        now: SystemTime,
    ) -> Vec<Outcome> {
        let cluster = ground.cluster;
        let mut outcomes = Vec::new();
        let names: Vec<String> = self.in_flight.keys().cloned().collect();
        for name in names {
            let deletion = self.in_flight.get_mut(&name).expect("in flight");
            let step = if updating.contains(deletion.group.as_str()) {
                let why = format!(
                    "{} started a managed node group update: EKS replaces its nodes",
                    deletion.group
                );
                DeletionStep::Stop(why)
            } else {
                step(ground, deletion, now).await
            };
            let (node, group, empty, cause) = (
                deletion.node.clone(),
                deletion.group.clone(),
                deletion.empty,
                deletion.cause,
            );
            match step {
                DeletionStep::Wait(waiting) => outcomes.push(Outcome::Draining {
                    node,
                    group,
                    waiting,
                    held: None,
                }),
                DeletionStep::Held(waiting) => outcomes.push(Outcome::Draining {
                    node,
                    group,
                    waiting,
                    held: match cause {
                        Cause::Disruption { reason, .. } => Some(reason),
                        // The leaving list says what holds it.
                        Cause::ScaleDown | Cause::Leaving { .. } => None,
                    },
                }),
                DeletionStep::Deleted => {
                    self.in_flight.remove(&name);
                    outcomes.push(Outcome::Deleted {
                        node,
                        group,
                        empty,
                        cause,
                    });
                }
                DeletionStep::Abort(why) => {
                    self.in_flight.remove(&name);
                    let why = back_in_service(cluster, &node, why).await;
                    outcomes.push(Outcome::Failed { node, group, why });
                }
                DeletionStep::Stop(why) => {
                    self.in_flight.remove(&name);
                    let why = back_in_service(cluster, &node, why).await;
                    outcomes.push(Outcome::Stopped { node, group, why });
                }
            }
        }
        outcomes
    }
}

/// Takes our taint off `node`, back in service; `why` it stays, with the taint's failure if it failed.
async fn back_in_service(cluster: &dyn ClusterSource, node: &str, why: String) -> String {
    match cluster.untaint(node, TO_BE_DELETED_TAINT).await {
        Ok(()) | Err(ClusterError::NoNode(_)) => why,
        Err(e) => format!("{why}; removing the taint failed too: {e}"),
    }
}

enum DeletionStep {
    Wait(String),
    /// Given up, not failed: its group started a managed node group update.
    Stop(String),
    /// A disruption's drain held by a pod that cannot leave (until its grace period, if it has one).
    Held(String),
    Deleted,
    Abort(String),
}

/// A node's pods by what its drain must do with them (DaemonSet, mirror and long-terminating pods stay).
struct PodsToMove<'a> {
    to_evict: Vec<&'a Pod>,
    /// Evicted or deleted, not gone yet.
    terminating: Vec<&'a Pod>,
    /// Pods no eviction may move, with why.
    blocked: Vec<(&'a Pod, String)>,
}

/// A disruption's drain also leaves Karpenter's `karpenter.sh/do-not-disrupt` pods in place (upstream's
/// rules, which scale-down follows, do not read that annotation).
fn leaving<'a>(
    pods: impl Iterator<Item = &'a Pod>,
    rules: &Rules,
    pdbs: &PdbBudget,
    cause: Cause,
    now: SystemTime,
) -> PodsToMove<'a> {
    let mut sorted = PodsToMove {
        to_evict: Vec::new(),
        terminating: Vec::new(),
        blocked: Vec::new(),
    };
    for pod in pods {
        if pod.disruption.do_not_disrupt && !matches!(cause, Cause::ScaleDown) {
            let why = format!("{}: annotated karpenter.sh/do-not-disrupt", pod.key());
            sorted.blocked.push((pod, why));
            continue;
        }
        match drainability::classify(pod, rules, pdbs, now) {
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

/// What a deletion's step works with: the cluster it evicts from and the provider that deletes the instance,
/// the loop's view, the drainability rules and the pacing flags.
pub struct StepGround<'g> {
    pub cluster: &'g dyn ClusterSource,
    pub client: &'g ProviderClient,
    pub view: &'g ClusterView,
    pub rules: &'g Rules,
    pub pacing: &'g Pacing,
}

async fn step(ground: &StepGround<'_>, d: &mut Deletion, now: SystemTime) -> DeletionStep {
    let StepGround {
        cluster,
        client,
        view,
        rules,
        pacing,
    } = *ground;
    let Some(node) = view.nodes.iter().find(|n| n.name == d.node) else {
        return DeletionStep::Abort("the node left the cluster before it was deleted".into());
    };
    if node.provider_id != d.provider_id {
        return DeletionStep::Abort("the node's providerID changed: it is another instance".into());
    }
    if now < d.tainted_at + pacing.delay_after_taint {
        return DeletionStep::Wait("the scheduler to see the taint".into());
    }
    if d.holds() {
        d.drain_started.get_or_insert(now);
    }
    let forced = d.forced_at().is_some_and(|at| now >= at);
    // What must still leave: re-checked now, as pods may have arrived before the taint did.
    let pdbs = PdbBudget::new(&view.pdbs);
    let on_node = PodList::from(&view.pods)
        .into_iter()
        .filter(|p| p.node_name.as_deref() == Some(&d.node));
    let PodsToMove {
        to_evict,
        terminating,
        blocked,
    } = leaving(on_node, rules, &pdbs, d.cause, now);
    if let Some((_, why)) = blocked.first().filter(|_| !forced) {
        if !d.holds() {
            return DeletionStep::Abort(format!("a pod that cannot be evicted arrived: {why}"));
        }
        // The pods that may leave do meanwhile, as Karpenter's drain evicts around the ones it waits for:
        // only those still there at the end of the grace period are deleted past their budgets.
        if !to_evict.is_empty()
            && let DeletionStep::Abort(failed) = evict(cluster, pacing, d, &to_evict, now).await
        {
            return DeletionStep::Abort(failed);
        }
        return DeletionStep::Held(format!("{why} ({})", d.until()));
    }
    if d.empty && !(to_evict.is_empty() && terminating.is_empty()) {
        return DeletionStep::Abort(format!(
            "planned as empty, but pods arrived: {}",
            to_evict
                .iter()
                .chain(&terminating)
                .map(|p| p.key())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Past the grace period, what is still there is deleted; once nothing is, the node goes.
    let remaining: Vec<&Pod> = (blocked.iter().map(|(p, _)| *p))
        .chain(to_evict.iter().copied())
        .chain(terminating.iter().copied())
        .collect();
    if forced && !remaining.is_empty() {
        return force(cluster, remaining).await;
    }
    if !to_evict.is_empty() {
        return evict(cluster, pacing, d, &to_evict, now).await;
    }
    if !terminating.is_empty() {
        return still_terminating(pacing, d, &terminating, now);
    }
    match unseen_pods(cluster, &d.node, rules, &pdbs, d.cause, now).await {
        // A disruption drains what the view missed at the next step instead of giving up.
        Some(DeletionStep::Abort(why)) if d.holds() => return DeletionStep::Wait(why),
        Some(step) => return step,
        None => {}
    }
    match client
        .delete_nodes(&d.group, &[(d.node.clone(), d.provider_id.clone())])
        .await
    {
        Ok(()) => DeletionStep::Deleted,
        Err(e) => DeletionStep::Abort(format!("NodeGroupDeleteNodes failed: {e}")),
    }
}

/// Evicts what must leave, within the grace each pod allows; refusals are retried until
/// `--max-pod-eviction-time`, then end the deletion (or hold a disruption's).
async fn evict(
    cluster: &dyn ClusterSource,
    pacing: &Pacing,
    d: &mut Deletion,
    to_evict: &[&Pod],
    now: SystemTime,
) -> DeletionStep {
    let started = *d.drain_started.get_or_insert(now);
    d.refused.clear();
    for pod in to_evict {
        let grace = Duration::from_secs(pod.disruption.grace_period_seconds)
            .min(pacing.max_graceful_termination);
        match cluster.evict(&pod.namespace, &pod.name, grace).await {
            Ok(()) | Err(ClusterError::NoPod(_)) => {}
            Err(ClusterError::EvictionRefused { pod, why }) => {
                d.refused.push(format!("{pod}: {why}"));
            }
            Err(e) => return DeletionStep::Abort(format!("evicting {}: {e}", pod.key())),
        }
    }
    if !d.refused.is_empty() {
        let late = now.duration_since(started).unwrap_or_default() > pacing.max_pod_eviction_time;
        if late && d.holds() {
            let refused = d.refused.join("; ");
            return DeletionStep::Held(format!("refused evictions: {refused} ({})", d.until()));
        }
        if late {
            return DeletionStep::Abort(format!(
                "evictions still refused after --max-pod-eviction-time {}: {}",
                humantime::format_duration(pacing.max_pod_eviction_time),
                d.refused.join("; ")
            ));
        }
        return DeletionStep::Wait(format!("refused evictions: {}", d.refused.join("; ")));
    }
    DeletionStep::Wait(format!("{} evicted pod(s) to stop", to_evict.len()))
}

/// Waits for evicted pods to stop, up to the eviction time and the longest grace period (plus a margin).
fn still_terminating(
    pacing: &Pacing,
    d: &Deletion,
    terminating: &[&Pod],
    now: SystemTime,
) -> DeletionStep {
    let started = d.drain_started.unwrap_or(d.tainted_at);
    let limit =
        pacing.max_pod_eviction_time + pacing.max_graceful_termination + Duration::from_secs(30);
    if now.duration_since(started).unwrap_or_default() > limit && !d.holds() {
        return DeletionStep::Abort(format!(
            "pods still terminating after {}: {}",
            humantime::format_duration(limit),
            terminating
                .iter()
                .map(|p| p.key())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    DeletionStep::Wait(format!("{} evicted pod(s) to stop", terminating.len()))
}

impl Deletion {
    /// Whether a pod that cannot leave holds this deletion (a disruption) instead of ending it.
    fn holds(&self) -> bool {
        !matches!(self.cause, Cause::ScaleDown)
    }

    /// When the pods still on the node are deleted past their budgets: the drain's start plus the group's
    /// `terminationGracePeriod`, for a disruption that has one.
    fn forced_at(&self) -> Option<SystemTime> {
        match self.cause {
            Cause::Disruption { grace: Some(g), .. } => self.drain_started.map(|s| s + g),
            Cause::Leaving { at, .. } => at,
            _ => None,
        }
    }

    /// Until when a held drain waits, for the status.
    fn until(&self) -> String {
        match self.forced_at() {
            Some(at) if matches!(self.cause, Cause::Leaving { .. }) => format!(
                "forced at {}, when the instance goes",
                humantime::format_rfc3339_seconds(at)
            ),
            Some(at) => format!(
                "forced at {} by its terminationGracePeriod",
                humantime::format_rfc3339_seconds(at)
            ),
            None if matches!(self.cause, Cause::Leaving { .. }) => {
                "no deadline is known: the drain waits for it".into()
            }
            None => "no terminationGracePeriod: the drain waits for it".into(),
        }
    }
}

/// Deletes `pods` past their PodDisruptionBudgets: the grace period of a disruption's drain has run out, so
/// they get a second to stop (Karpenter gives what is left of the deadline, at least a second).
async fn force(cluster: &dyn ClusterSource, pods: Vec<&Pod>) -> DeletionStep {
    let mut deleted = 0;
    for pod in pods {
        match cluster
            .delete_pod(&pod.namespace, &pod.name, Duration::from_secs(1))
            .await
        {
            Ok(()) | Err(ClusterError::NoPod(_)) => deleted += 1,
            Err(e) => return DeletionStep::Wait(format!("deleting {}: {e}", pod.key())),
        }
    }
    DeletionStep::Wait(format!(
        "{deleted} pod(s) deleted past their budgets: the terminationGracePeriod ended"
    ))
}

/// The view comes from a cache: a pod bound since its last event would be deleted with the node. What the
/// cluster says now decides; a pod the view missed ends this deletion as a pod that arrived would. `None`
/// when nothing stands in the way.
async fn unseen_pods(
    cluster: &dyn ClusterSource,
    node: &str,
    rules: &Rules,
    pdbs: &PdbBudget<'_>,
    cause: Cause,
    now: SystemTime,
) -> Option<DeletionStep> {
    match cluster.pods_on(node).await {
        Ok(None) => None,
        Ok(Some(pods)) => {
            let running = pods.iter().filter(|p| p.phase != Phase::Terminal);
            let found = leaving(running, rules, pdbs, cause, now);
            let blocked = found.blocked.iter().map(|(p, _)| *p);
            // Any pod on its way out, blocked or not, is waited for.
            let stopping = (found.terminating.iter().copied())
                .chain(blocked.clone().filter(|p| p.deleted.is_some()))
                .next();
            if let Some(pod) = stopping {
                return Some(DeletionStep::Wait(format!("{} to stop", pod.key())));
            }
            let missed: Vec<String> = (found.to_evict.iter().copied())
                .chain(blocked)
                .map(Pod::key)
                .collect();
            (!missed.is_empty()).then(|| {
                DeletionStep::Abort(format!(
                    "pods the cluster view had not shown were on it: {}",
                    missed.join(", ")
                ))
            })
        }
        Err(e) => Some(DeletionStep::Wait(format!(
            "its pods to be read before deletion: {e}"
        ))),
    }
}
