//! Replacements in progress (consolidation's actuation, and expiry's and drift's surge-first replacements)
//! and the per-node timers consolidation keeps.
//!
//! A replacement launches its new node first (IncreaseSize +1 on the target group) and waits. Only once that
//! node is Ready, and the old nodes' pods are simulated again and still fit, are the old nodes handed to
//! scale-down's deletion (taint, evict under PDBs, re-read, delete). A new node that is not Ready within the
//! target group's provision time is removed, the old nodes are left as they were, and the group is backed
//! off. The timers: a node is replaced only after `--consolidation-stable-time` with no pod scheduled to it,
//! and a node in a replacement that went ahead (the old nodes drained, or the new node) is left alone for a
//! day.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::scaledown::act::actuation::Cause;
use crate::autoscaler::scaledown::consolidation::search::{NotConsolidatedBecause, ONCE_A_DAY};
use crate::autoscaler::scaledown::plan::unneeded::Timers;
use crate::autoscaler::scaledown::report::ScaleDownReport;
use crate::autoscaler::scaledown::settings::ConsolidationSettings;
use crate::autoscaler::status::ReplacementStatus;
use crate::model::{Node, Pod, PodList};
use std::collections::{HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One replacement between its launch and the end of its old nodes' drains.
#[derive(Clone, Debug)]
pub struct InFlight {
    /// The nodes it replaces (names) and their groups.
    pub old: Vec<String>,
    pub old_groups: Vec<String>,
    pub group: String,
    pub saving: f64,
    /// Why the old nodes go: consolidation (scale-down's drain) or expiry and drift (a drain that waits
    /// for blocked pods until its grace period).
    pub cause: Cause,
    pub launched_at: SystemTime,
    /// The group's instances when the new node was asked for: the new one is the first not among them.
    known: HashSet<String>,
    /// The new node's instance, once the provider lists it.
    instance: Option<String>,
    /// Its node, once registered and Ready.
    pub ready: Option<String>,
    /// Handed to scale-down's deletion: the old nodes still draining.
    draining: Option<HashSet<String>>,
}

impl InFlight {
    /// A replacement of `old` (of `old_groups`) by a new node of `group`, its launch asked for at `now`.
    pub fn new(
        old: Vec<String>,
        old_groups: Vec<String>,
        group: String,
        saving: f64,
        now: SystemTime,
    ) -> InFlight {
        InFlight {
            old,
            old_groups,
            group,
            saving,
            cause: Cause::ScaleDown,
            launched_at: now,
            known: HashSet::new(),
            instance: None,
            ready: None,
            draining: None,
        }
    }

    /// The same replacement, of an expired or drifted node.
    pub fn for_disruption(self, cause: Cause) -> InFlight {
        InFlight { cause, ..self }
    }

    /// `single` or `multi` (consolidation), `expired` or `drifted`.
    pub fn kind(&self) -> &'static str {
        match self.cause {
            Cause::Disruption { reason, .. } | Cause::Leaving { reason, .. } => reason,
            Cause::ScaleDown if self.old.len() > 1 => "multi",
            Cause::ScaleDown => "single",
        }
    }

    fn report(&self, state: &str, detail: String) -> ReplacementStatus {
        ReplacementStatus {
            nodes: self.old.clone(),
            node_group: self.group.clone(),
            new_node: self.ready.clone(),
            kind: self.kind().into(),
            state: state.into(),
            detail,
            saving_per_hour: self.saving,
        }
    }
}

#[derive(Default)]
pub struct Replacements {
    in_flight: Vec<InFlight>,
    /// The nodes of replacements that went ahead (the old ones and the new one, when the old ones were handed
    /// to the deletions), by name, and when: left alone for a day. A replacement given up before disturbed
    /// nothing: its target group's backoff, not this, keeps it from being tried again at once.
    recent: HashMap<String, SystemTime>,
    /// Per node: since when no pod was scheduled to it, and (hashed) the pods on it then.
    stable: HashMap<String, (SystemTime, HashSet<u64>)>,
}

fn pod_hash(pod: &Pod) -> u64 {
    let mut h = DefaultHasher::new();
    (&*pod.namespace, &pod.name).hash(&mut h);
    h.finish()
}

impl Replacements {
    /// Replacements launched and not yet done: what `--max-consolidation-parallelism` counts.
    pub fn count(&self) -> usize {
        self.in_flight.len()
    }

    /// The old nodes of every replacement in progress: scale-down neither removes them nor moves pods there.
    pub fn old_nodes(&self) -> impl Iterator<Item = &str> {
        self.in_flight
            .iter()
            .flat_map(|r| r.old.iter().map(String::as_str))
    }

    /// Old nodes of `group` whose replacement has not handed them to the deletions yet: they will leave it.
    pub fn leaving(&self, group: &str) -> usize {
        (self.in_flight.iter())
            .filter(|r| r.draining.is_none())
            .flat_map(|r| &r.old_groups)
            .filter(|g| *g == group)
            .count()
    }

    /// Replacements whose new node is Ready and whose old nodes are not handed over yet.
    pub fn ready(&self) -> impl Iterator<Item = (usize, &InFlight)> {
        (self.in_flight.iter().enumerate())
            .filter(|(_, r)| r.ready.is_some() && r.draining.is_none())
    }

    /// Records the pods on each node this loop: a pod not there before restarts its node's stable time.
    /// Pending pods placed on a node this loop count as scheduled to it.
    pub fn track(
        &mut self,
        view: &ClusterView,
        on_node: &[Vec<usize>],
        pods: PodList<'_>,
        now: SystemTime,
    ) {
        let mut stable = HashMap::with_capacity(view.nodes.len());
        for (n, node) in view.nodes.iter().enumerate() {
            let here: HashSet<u64> = on_node[n].iter().map(|&p| pod_hash(pods.get(p))).collect();
            let since = match self.stable.remove(&node.name) {
                Some((since, before)) if here.is_subset(&before) => since,
                _ => now,
            };
            stable.insert(node.name.clone(), (since, here));
        }
        self.stable = stable;
        self.recent
            .retain(|_, at| now.duration_since(*at).unwrap_or_default() < ONCE_A_DAY);
    }

    /// The nodes consolidation leaves alone this loop, with why: those of replacements in progress, those in a
    /// replacement less than a day ago, and (unless the timers count as [`Timers::Elapsed`]) those not stable
    /// long enough.
    pub fn held(
        &self,
        nodes: &[Arc<Node>],
        settings: &ConsolidationSettings,
        timers: Timers,
        now: SystemTime,
    ) -> HashMap<usize, (NotConsolidatedBecause, String)> {
        let mut held = HashMap::new();
        let mut busy: HashMap<&str, &InFlight> = HashMap::new();
        for r in &self.in_flight {
            for name in r.old.iter().chain(&r.ready) {
                busy.insert(name, r);
            }
        }
        for (n, node) in nodes.iter().enumerate() {
            if let Some(r) = busy.get(node.name.as_str()) {
                let why = format!(
                    "{} -> a new {} node: {}",
                    r.old.join(", "),
                    r.group,
                    if r.draining.is_some() {
                        "draining"
                    } else {
                        "waiting for the new node"
                    }
                );
                held.insert(n, (NotConsolidatedBecause::ConsolidationInProgress, why));
            } else if let Some(at) = self.recent.get(&node.name) {
                let ago = now.duration_since(*at).unwrap_or_default();
                let why = format!(
                    "in a replacement {} ago: one consolidation a node a day",
                    short(ago)
                );
                held.insert(n, (NotConsolidatedBecause::ConsolidatedRecently, why));
            } else if timers == Timers::Kept {
                let since = self.stable.get(&node.name).map_or(now, |(s, _)| *s);
                let stable = now.duration_since(since).unwrap_or_default();
                if stable < settings.stable_time {
                    let why = format!(
                        "no pod scheduled to it for {} of {} (--consolidation-stable-time)",
                        short(stable),
                        humantime::format_duration(settings.stable_time)
                    );
                    held.insert(n, (NotConsolidatedBecause::NotStableLongEnough, why));
                }
            }
        }
        held
    }

    /// A replacement whose new node was asked for at `now`.
    pub fn launched(&mut self, mut r: InFlight, facts: &[GroupFacts]) {
        r.known = facts
            .iter()
            .filter(|f| f.group.id == r.group)
            .flat_map(|f| f.instances.iter().map(|i| i.id.clone()))
            .collect();
        // Instances other replacements are waiting for are theirs, not this one's.
        r.known
            .extend(self.in_flight.iter().filter_map(|o| o.instance.clone()));
        self.in_flight.push(r);
    }

    /// Follows each replacement waiting for its node: which instance is its, whether its node is Ready; one
    /// not Ready within its group's provision time is abandoned (its instance removed). Replacements whose
    /// old nodes left meanwhile are forgotten. Returns their states, and the groups to back off.
    pub async fn watch(
        &mut self,
        client: &ProviderClient,
        mode: WatchMode,
        view: &ClusterView,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut report = ScaleDownReport::default();
        let names: HashSet<&str> = view.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut taken: HashSet<String> = (self.in_flight.iter())
            .filter_map(|r| r.instance.clone())
            .collect();
        let mut keep = Vec::new();
        for mut r in std::mem::take(&mut self.in_flight) {
            match follow(&mut r, view, &names, facts, &mut taken, now) {
                Followed::Waiting(state, detail) => {
                    report.status.replacements.push(r.report(state, detail));
                    keep.push(r);
                }
                Followed::Ready => keep.push(r),
                Followed::Gone(detail) => report
                    .status
                    .replacements
                    .push(r.report("abandoned", detail)),
                Followed::TooLate { why, cleaned_up } => {
                    // A group being updated keeps its target: its new node stays, as any other.
                    let updating = facts.iter().any(|f| f.group.id == r.group && f.updating());
                    let new_node = if mode == WatchMode::PlanOnly || updating {
                        AbandonedNode::Stays
                    } else if cleaned_up {
                        AbandonedNode::CleanedUp
                    } else {
                        AbandonedNode::Removed
                    };
                    let (detail, error) = abandon(client, new_node, &r, view, &why).await;
                    report.errors.extend(error);
                    report.backoffs.push((r.group.clone(), why));
                    report
                        .status
                        .replacements
                        .push(r.report("abandoned", detail));
                }
            }
        }
        self.in_flight = keep;
        report
    }

    /// The old nodes of replacement `i` go to scale-down's deletion; its new node is left alone for a day.
    pub fn hand_over(&mut self, i: usize, now: SystemTime) -> (&InFlight, ReplacementStatus) {
        let r = &mut self.in_flight[i];
        r.draining = Some(r.old.iter().cloned().collect());
        for node in r.old.iter().chain(&r.ready) {
            self.recent.insert(node.clone(), now);
        }
        let detail = format!(
            "the new node {} is Ready; the old node(s) drain",
            r.ready.as_deref().unwrap_or("")
        );
        let report = r.report("replacing", detail);
        (r, report)
    }

    /// Replacement `i` is given up before its old nodes drain: the pods no longer fit without them. Its new
    /// node stays as any other (scale-down removes it if it is not needed).
    pub fn give_up(&mut self, i: usize, why: String) -> ReplacementStatus {
        self.in_flight.remove(i).report("abandoned", why)
    }

    /// Whether `node` is an old node a replacement handed to scale-down's deletion.
    pub fn draining(&self, node: &str) -> bool {
        self.in_flight
            .iter()
            .any(|r| r.draining.as_ref().is_some_and(|d| d.contains(node)))
    }

    /// A handed-over old node is gone or back in service (`fate`): the replacement is done once all of its
    /// old nodes are gone, failed as soon as one stays. Returns the replacement's state when it ended.
    pub fn ended(&mut self, node: &str, fate: OldNodeFate<'_>) -> Option<ReplacementStatus> {
        let i = (self.in_flight.iter())
            .position(|r| r.draining.as_ref().is_some_and(|d| d.contains(node)))?;
        if let OldNodeFate::Stays(why) = fate {
            let r = self.in_flight.remove(i);
            let detail = format!("{node} stays: {why}; the new node stays as any other");
            return Some(r.report("failed", detail));
        }
        let draining = self.in_flight[i].draining.as_mut().expect("handed over");
        draining.remove(node);
        draining.is_empty().then(|| {
            let r = self.in_flight.remove(i);
            r.report("done", "the old node(s) are gone".into())
        })
    }
}

/// Whether following the replacements may act on the provider (remove an abandoned one's new node), or only
/// says what it would do (`simulate`, `--dry-run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    Act,
    PlanOnly,
}

/// How a handed-over old node's deletion ended.
#[derive(Clone, Copy, Debug)]
pub enum OldNodeFate<'a> {
    Deleted,
    /// Back in service, with why.
    Stays(&'a str),
}

/// What becomes of an abandoned replacement's new node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AbandonedNode {
    /// Left as any other (the loop does not act, or its group is being updated and keeps its target).
    Stays,
    /// Its instance failed to launch: the loop's own clean-up of such instances removes it.
    CleanedUp,
    /// Removed here: its instance, or the request when there is none yet.
    Removed,
}

/// Where a replacement waiting for its node stands this loop.
enum Followed {
    /// Still draining its old nodes, or still waiting for its node: the state and what it waits for.
    Waiting(&'static str, String),
    /// Its node is Ready: the policy checks its pods still fit before handing the old nodes over.
    Ready,
    /// An old node or the group went away: forgotten.
    Gone(String),
    /// Not Ready in time, or its instance failed: abandoned. `cleaned_up` when the loop's own clean-up of
    /// failed instances removes it.
    TooLate { why: String, cleaned_up: bool },
}

/// Finds the replacement's instance (the first of its group not known at launch nor taken by another) and
/// node, and says where it stands.
fn follow(
    r: &mut InFlight,
    view: &ClusterView,
    names: &HashSet<&str>,
    facts: &[GroupFacts],
    taken: &mut HashSet<String>,
    now: SystemTime,
) -> Followed {
    if let Some(draining) = &r.draining {
        let detail = format!("{} old node(s) left to drain", draining.len());
        return Followed::Waiting("draining", detail);
    }
    if r.old.iter().any(|n| !names.contains(n.as_str())) {
        let why = "an old node left the cluster while the new node started";
        return Followed::Gone(why.into());
    }
    let Some(f) = facts.iter().find(|f| f.group.id == r.group) else {
        return Followed::Gone(format!("node group {} is gone", r.group));
    };
    if r.instance.is_none() {
        r.instance = (f.instances.iter().map(|i| &i.id))
            .find(|id| !r.known.contains(*id) && !taken.contains(*id))
            .cloned();
        if let Some(id) = &r.instance {
            taken.insert(id.clone());
        }
    }
    let node = node_of(r, view);
    if let Some(node) = node.filter(|n| n.ready) {
        r.ready = Some(node.name.clone());
        return Followed::Ready;
    }
    let waited = now.duration_since(r.launched_at).unwrap_or_default();
    // An instance that could not be created (a stockout) will not become a node: no use waiting.
    let failed = (r.instance.as_ref())
        .and_then(|id| f.instances.iter().find(|i| &i.id == id))
        .and_then(|i| i.error.as_ref())
        .map(|e| {
            format!(
                "the new node could not be launched ({}: {})",
                e.code, e.message
            )
        });
    if failed.is_none() && waited <= f.options.provision {
        let what = match (&r.instance, node) {
            (None, _) => "no instance yet".to_string(),
            (Some(id), None) => format!("instance {id} has not registered"),
            (Some(_), Some(n)) => format!("node {} is not Ready", n.name),
        };
        let detail = format!(
            "waiting for the new node ({what}), {} so far",
            short(waited)
        );
        return Followed::Waiting("launching", detail);
    }
    let cleaned_up = failed.is_some();
    let why = failed.unwrap_or_else(|| {
        format!(
            "the new node was not Ready within {} (--max-node-provision-time)",
            humantime::format_duration(f.options.provision)
        )
    });
    Followed::TooLate { why, cleaned_up }
}

/// The node of the replacement's instance, once it registered.
fn node_of<'v>(r: &InFlight, view: &'v ClusterView) -> Option<&'v Arc<Node>> {
    let id = r.instance.as_ref()?;
    view.nodes.iter().find(|n| &n.provider_id == id)
}

/// Removes an abandoned replacement's new node (when `new_node` says so): its instance, or the request when
/// there is none yet. Returns the replacement's detail, and the error when removing failed.
async fn abandon(
    client: &ProviderClient,
    new_node: AbandonedNode,
    r: &InFlight,
    view: &ClusterView,
    why: &str,
) -> (String, Option<String>) {
    let removed = if new_node == AbandonedNode::Stays {
        Ok("")
    } else if new_node == AbandonedNode::CleanedUp {
        // An instance that failed to launch is removed by the loop's own clean-up of such instances.
        Ok("; it is removed as any instance that failed to launch")
    } else if let Some(id) = &r.instance {
        let name = node_of(r, view).map_or(String::new(), |n| n.name.clone());
        client
            .delete_nodes(&r.group, &[(name, id.clone())])
            .await
            .map(|()| "; its instance was removed")
    } else {
        client
            .decrease_target_size(&r.group, -1)
            .await
            .map(|()| "; the request was cancelled")
    };
    match removed {
        Ok(done) => (format!("{why}{done}; the old node(s) stay"), None),
        Err(e) => (
            format!("{why}; removing the new node failed: {e}; the old node(s) stay"),
            Some(format!("abandoning the replacement in {}: {e}", r.group)),
        ),
    }
}

fn short(d: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(Duration::from_secs(d.as_secs()))
}
