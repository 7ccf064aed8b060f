//! The scale-down policy, around the planner (`scaledown.rs`): unneeded timers, the wait of a zeroOrMax group
//! for all its nodes, the cooldowns after a scale-up, deletion or failure, the deletion and drain budgets, soft
//! taints on unneeded nodes; and the deletions in progress, one step per loop, with the ToBeDeleted taints an
//! earlier run left. With `--consolidation replace`, consolidation plans over the same world and its
//! replacements end in the same deletions (`consolidate.rs`).

mod consolidate; // consolidation's part: plan, launch, hand Ready replacements to the deletions
mod view_check; // whether a view can be trusted to say which nodes are empty

use view_check::ViewCheck;

pub use consolidate::Fleet;

use super::actuation::{Actuator, Outcome};
use super::client::ProviderClient;
use super::cluster::{ClusterSource, ClusterView};
use super::cluster_state::GroupFacts;
use super::replacement::{Backoff, Replacements};
use super::runonce::{Settings, planning};
use super::scaledown::{self, GroupInfo, Unremovable};
use super::status::{Consolidation, DeletionStatus, KeptNode, ScaleDown, Status};
use crate::model::pod::LabelProjection;
use crate::model::taint::{DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT};
use crate::model::{Pod, PodList};
use crate::proto::externalgrpc::instance_status::InstanceState;
use crate::simulator::topology::{Place, Topology};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// What the policy needs of the loop: its settings, the provider, and the cluster it may act on.
pub struct Context<'a> {
    pub settings: &'a Settings,
    pub client: &'a ProviderClient,
    /// Where deletions are carried out (taints, evictions); `None` plans them only.
    pub actor: Option<Arc<dyn ClusterSource>>,
}

/// What scale-down decided this loop, for [`ScaleDownPolicy::carry_out`] to act on and report.
pub struct Decision {
    /// The deletions to start (when only planning: every node that may go).
    pub delete: Vec<Deletion>,
    /// The nodes that stay, and why.
    pub kept: Vec<KeptNode>,
    /// The unneeded nodes (by node index), for the soft taints; `None` leaves them as they are.
    unneeded: Option<HashSet<usize>>,
    /// Whether there is a cluster to act on.
    acts: bool,
    planning_ms: f64,
    consolidation_ms: f64,
    /// Consolidation: replacements to launch, and the nodes not replaced with why.
    consolidate: Vec<Consolidation>,
    not_consolidated: Vec<KeptNode>,
    /// Replacements in progress (by index) whose old nodes drain now; those given up, with why.
    hand_over: Vec<usize>,
    give_up: Vec<(usize, String)>,
}

/// A node whose deletion scale-down starts, with its report.
pub struct Deletion {
    pub node: usize,
    pub empty: bool,
    pub report: ScaleDown,
}

/// The scale-down state kept between loops.
#[derive(Default)]
pub struct ScaleDownPolicy {
    actuator: Actuator,
    /// When each unneeded node was first found unneeded (by name).
    unneeded_since: HashMap<String, SystemTime>,
    /// The last successful scale-up, for `--scale-down-delay-after-add`.
    pub last_scale_up: Option<SystemTime>,
    last_delete: Option<SystemTime>,
    last_failure: Option<SystemTime>,
    /// Our ToBeDeleted taints left by an earlier run are removed in the first loop that acts.
    stale_taints_checked: bool,
    view: ViewCheck,
    /// Why this loop's view is not trusted, if it is not: set by [`ScaleDownPolicy::check_view`].
    doubt: Option<String>,
    /// Consolidation's replacements in progress and per-node timers.
    pub replacements: Replacements,
    /// Nodes deleted this loop, by group: the target sizes read before they went are one too high each.
    deleted: HashMap<String, i32>,
}

impl ScaleDownPolicy {
    /// Checks this loop's view before anything acts on it. A view that lost most of its pods holds the
    /// deletions in progress (a drain would find its node empty) and scale-down's decision.
    pub fn check_view(&mut self, pods: &[Pod], facts: &[GroupFacts], now: SystemTime) {
        let on_nodes = pods
            .iter()
            .filter(|p| p.node_name.is_some() && !p.daemonset())
            .count();
        let settle = facts.iter().map(|f| f.options.unneeded).max();
        self.doubt = (self.view).doubt(on_nodes, settle.unwrap_or_default(), now);
    }

    /// Unneeded timers start again: the loop saw an unhealthy cluster.
    pub fn forget_unneeded(&mut self) {
        self.unneeded_since.clear();
    }

    /// Whether this node is being deleted by us.
    pub fn deleting(&self, node: &str) -> bool {
        self.actuator.contains(node)
    }

    /// Scale-down's decision: plan the unneeded nodes over the world scale-up left (pods it found room for on
    /// existing nodes stay counted there), run their timers, and admit the deletions the cooldowns and budgets
    /// allow. Nothing is carried out here: [`ScaleDownPolicy::carry_out`] does that.
    #[allow(clippy::too_many_arguments)]
    pub fn decide(
        &mut self,
        cx: &Context<'_>,
        view: &ClusterView,
        pods: PodList<'_>,
        facts: &[GroupFacts],
        fleet: Fleet<'_>,
        (node_group, on_node, deleting): (&[Option<usize>], &[Vec<usize>], &HashSet<String>),
        (topology, places): (&mut Topology, &mut Vec<Place>),
        projection: &LabelProjection,
        paused: Option<String>,
        now: SystemTime,
    ) -> Decision {
        let sd = cx.settings.scale_down.clone();
        let groups: Vec<GroupInfo> = facts
            .iter()
            .map(|f| GroupInfo {
                id: f.group.id.clone(),
                min_size: f.group.min_size,
                target: f.target - self.deleted.get(&f.group.id).copied().unwrap_or(0),
                options: f.options,
                // Old nodes of replacements are as good as gone: the group must not shrink under them.
                deleting: self
                    .actuator
                    .in_flight()
                    .filter(|d| d.group == f.group.id)
                    .count()
                    + self.replacements.leaving(&f.group.id),
            })
            .collect();
        if let Some(why) = self.doubt.clone() {
            // Nothing is decided on this view: no deletion, no soft taint moves, the timers stay as they were.
            let kept = (view.nodes.iter().zip(node_group))
                .filter(|(n, _)| !self.actuator.contains(&n.name))
                .map(|(n, g)| KeptNode {
                    node: n.name.clone(),
                    node_group: g.map(|g| groups[g].id.clone()),
                    reason: Unremovable::UntrustedClusterView.to_string(),
                    detail: why.clone(),
                })
                .collect();
            return Decision {
                delete: Vec::new(),
                kept,
                unneeded: None,
                acts: cx.actor.is_some(),
                planning_ms: 0.0,
                consolidation_ms: 0.0,
                consolidate: Vec::new(),
                not_consolidated: Vec::new(),
                hand_over: Vec::new(),
                give_up: Vec::new(),
            };
        }
        let previously: HashSet<String> = self.unneeded_since.keys().cloned().collect();
        // The old nodes of replacements in progress are on their way out: scale-down neither removes them
        // nor moves pods onto them.
        let mut excluded = deleting.clone();
        excluded.extend(self.replacements.old_nodes().map(str::to_string));
        let input = scaledown::Input {
            nodes: &view.nodes,
            pods,
            pdbs: &view.pdbs,
            node_group,
            groups: &groups,
            on_node,
            deleting: &excluded,
            previously_unneeded: &previously,
            projection,
            min_cores: cx.settings.limits.min_cores,
            min_memory_gib: cx.settings.limits.min_memory_gib,
            max_node_startup_time: cx.settings.max_node_startup_time,
            unready_enabled: sd.unready_enabled,
            now,
        };
        let started = Instant::now();
        let existing = view.nodes.len();
        let (hand_over, give_up) =
            self.check_ready(view, &input, &sd.rules, topology, &mut places[..existing]);
        let plan =
            planning(|| scaledown::plan(&input, &sd.rules, topology, &mut places[..existing]));
        let planning_ms = started.elapsed().as_secs_f64() * 1000.0;
        let started = Instant::now();
        let acts = cx.actor.is_some();
        let waits = if acts {
            paused.or_else(|| self.cooldown(cx, now))
        } else {
            None
        };
        let (consolidate, not_consolidated) = if cx.settings.consolidation.replaces() {
            self.replacements.track(view, on_node, pods, now);
            let world = (&mut *topology, &mut *places);
            planning(|| self.consolidate(cx, &input, facts, &fleet, &plan, world, waits.as_deref()))
        } else {
            (Vec::new(), Vec::new())
        };
        let consolidation_ms = started.elapsed().as_secs_f64() * 1000.0;
        let node_name = |n: usize| view.nodes[n].name.clone();
        let group_id = |g: usize| groups[g].id.clone();
        let mut kept: Vec<KeptNode> = plan
            .kept
            .iter()
            // Our own deletions are reported in `deletions`.
            .filter(|k| !self.actuator.contains(&view.nodes[k.node].name))
            .map(|k| KeptNode {
                node: node_name(k.node),
                node_group: k.group.map(group_id),
                reason: k.reason.to_string(),
                detail: k.detail.clone(),
            })
            .collect();
        let keep = |r: &scaledown::Removable, reason: Unremovable, detail: String| KeptNode {
            node: node_name(r.node),
            node_group: Some(group_id(r.group)),
            reason: reason.to_string(),
            detail,
        };

        // Unneeded timers: kept while a node stays unneeded, dropped as soon as it is not.
        let mut since = HashMap::new();
        let mut waiting: HashSet<usize> = HashSet::new();
        for r in &plan.removable {
            let node = &view.nodes[r.node];
            let first = *self.unneeded_since.get(&node.name).unwrap_or(&now);
            since.insert(node.name.clone(), first);
            let options = &groups[r.group].options;
            let (needed, reason) = if node.ready {
                (options.unneeded, Unremovable::NotUnneededLongEnough)
            } else {
                (options.unready, Unremovable::NotUnreadyLongEnough)
            };
            let waited = now.duration_since(first).unwrap_or_default();
            if !sd.timers_elapsed && waited < needed {
                waiting.insert(r.node);
                kept.push(keep(
                    r,
                    reason,
                    format!(
                        "{} for {} of {}",
                        if node.ready {
                            "unneeded"
                        } else {
                            "unready and unneeded"
                        },
                        humantime::format_duration(Duration::from_secs(waited.as_secs())),
                        humantime::format_duration(needed)
                    ),
                ));
            }
        }
        self.unneeded_since = since;
        // A zeroOrMaxNodeScaling group goes whole: it waits until all of its nodes may go.
        let atomic_waiting: HashSet<usize> = plan
            .removable
            .iter()
            .filter(|r| waiting.contains(&r.node) && groups[r.group].options.zero_or_max)
            .map(|r| r.group)
            .collect();
        let mut ready: Vec<&scaledown::Removable> = Vec::new();
        for r in &plan.removable {
            if waiting.contains(&r.node) {
                continue;
            }
            if atomic_waiting.contains(&r.group) {
                let why = format!(
                    "{} scales to zero or max: its other nodes are not unneeded long enough",
                    groups[r.group].id
                );
                kept.push(keep(r, Unremovable::NotUnneededLongEnough, why));
            } else {
                ready.push(r);
            }
        }
        // Empty nodes first, then those whose drain no PDB slows.
        ready.sort_by_key(|r| (!r.empty, r.risky));
        let deletion = |r: &scaledown::Removable| Deletion {
            node: r.node,
            empty: r.empty,
            report: describe(view, pods, &groups, r),
        };
        let unneeded = Some(plan.removable.iter().map(|r| r.node).collect());
        let mut decision = Decision {
            delete: Vec::new(),
            kept: Vec::new(),
            unneeded,
            acts,
            planning_ms,
            consolidation_ms,
            consolidate,
            not_consolidated,
            hand_over,
            give_up,
        };
        if !decision.acts {
            // Planned only: every node that may go is reported, no budget applies.
            decision.delete = ready.into_iter().map(deletion).collect();
            decision.kept = kept;
            return decision;
        }
        if let Some(why) = waits {
            for r in ready.drain(..) {
                kept.push(keep(r, Unremovable::ScaleDownInCooldown, why.clone()));
            }
        }
        // Admitted as if every deletion starts: one that fails to start sets the failure cooldown, so
        // its room is not handed to another node this loop.
        let mut slots = sd
            .max_parallelism
            .saturating_sub(self.actuator.in_flight().count());
        let mut drains = sd
            .max_drain_parallelism
            .saturating_sub(self.actuator.drains());
        let mut empties = sd.max_empty_bulk_delete;
        // A zeroOrMaxNodeScaling group needs room for all its nodes at once (within the parallelism; the
        // drain budget would never let a group of several occupied nodes go whole).
        let mut whole: HashMap<usize, usize> = HashMap::new();
        for r in &ready {
            if groups[r.group].options.zero_or_max {
                *whole.entry(r.group).or_default() += 1;
            }
        }
        let mut admitted: HashMap<usize, bool> = HashMap::new();
        for r in ready {
            let fits = match whole.get(&r.group) {
                Some(&all) => *admitted.entry(r.group).or_insert_with(|| {
                    // Reserved whole, so that nodes after it cannot take its room.
                    let room = all <= slots;
                    if room {
                        slots -= all;
                    }
                    room
                }),
                None => {
                    let room = slots > 0 && if r.empty { empties > 0 } else { drains > 0 };
                    if room {
                        slots -= 1;
                        if r.empty {
                            empties -= 1;
                        } else {
                            drains -= 1;
                        }
                    }
                    room
                }
            };
            if fits {
                decision.delete.push(deletion(r));
            } else {
                let why = if r.empty && empties == 0 && slots > 0 {
                    format!(
                        "{} empty node(s) already go this loop (--max-empty-bulk-delete)",
                        sd.max_empty_bulk_delete
                    )
                } else {
                    format!(
                        "{} deletion(s) in progress (--max-scale-down-parallelism {}), {} draining \
                         (--max-drain-parallelism {})",
                        self.actuator.in_flight().count(),
                        sd.max_parallelism,
                        self.actuator.drains(),
                        sd.max_drain_parallelism
                    )
                };
                kept.push(keep(r, Unremovable::DeletionBudgetReached, why));
            }
        }
        decision.kept = kept;
        decision
    }

    /// Carries a decision out on the cluster (when there is one to act on): starts its deletions, moves the
    /// soft taints, and reports it all in `status`.
    /// Returns the groups to back off: those that refused a replacement's new node.
    #[allow(clippy::too_many_arguments)]
    pub async fn carry_out(
        &mut self,
        cx: &Context<'_>,
        view: &ClusterView,
        mut decision: Decision,
        deleting: &HashSet<String>,
        facts: &[GroupFacts],
        now: SystemTime,
        status: &mut Status,
    ) -> Vec<Backoff> {
        status.scale_down_ms = decision.planning_ms;
        status.consolidation_ms = decision.consolidation_ms;
        decision.kept.sort_by(|a, b| a.node.cmp(&b.node));
        status.unremovable = std::mem::take(&mut decision.kept);
        status.not_consolidated = std::mem::take(&mut decision.not_consolidated);
        let Some(cluster) = cx.actor.clone().filter(|_| decision.acts) else {
            if cx.settings.act && !(decision.delete.is_empty() && decision.consolidate.is_empty()) {
                status.errors.push(
                    "scale-down planned but not carried out: this cluster source cannot evict pods or \
                     taint nodes"
                        .into(),
                );
            }
            status.scale_down = decision.delete.into_iter().map(|d| d.report).collect();
            status.consolidation = decision.consolidate;
            return Vec::new();
        };
        self.replace(&*cluster, view, &mut decision, now, status)
            .await;
        for d in decision.delete {
            let node = &view.nodes[d.node];
            let group = d.report.node_group.clone();
            match self
                .actuator
                .start(&*cluster, node, &group, d.empty, now)
                .await
            {
                Ok(()) => {
                    self.unneeded_since.remove(&node.name);
                    status.deletions.push(DeletionStatus {
                        node: node.name.clone(),
                        node_group: group,
                        state: "started".into(),
                        detail: String::new(),
                    });
                    status.scale_down.push(d.report);
                }
                Err(e) => {
                    self.last_failure = Some(now);
                    status
                        .errors
                        .push(format!("scale-down of {}: tainting failed: {e}", node.name));
                }
            }
        }
        if let Some(unneeded) = &decision.unneeded {
            self.soft_taints(cx, view, unneeded, deleting, now, status)
                .await;
        }
        self.launch(cx, decision.consolidate, facts, now, status)
            .await
    }

    /// Why deletions wait this loop, if they do: a scale-up, deletion or failure too recent.
    fn cooldown(&self, cx: &Context<'_>, now: SystemTime) -> Option<String> {
        let sd = &cx.settings.scale_down;
        let recent = |at: Option<SystemTime>, delay: Duration| {
            at.is_some_and(|t| now.duration_since(t).unwrap_or_default() < delay)
        };
        let text = |what: &str, flag: &str, delay: Duration| {
            format!(
                "{what} less than {} ago ({flag})",
                humantime::format_duration(delay)
            )
        };
        if recent(self.last_scale_up, sd.delay_after_add) {
            return Some(text(
                "a scale-up",
                "--scale-down-delay-after-add",
                sd.delay_after_add,
            ));
        }
        if recent(self.last_delete, sd.delay_after_delete) {
            return Some(text(
                "a deletion",
                "--scale-down-delay-after-delete",
                sd.delay_after_delete,
            ));
        }
        if recent(self.last_failure, sd.delay_after_failure) {
            return Some(text(
                "a failed scale-down",
                "--scale-down-delay-after-failure",
                sd.delay_after_failure,
            ));
        }
        None
    }

    /// Soft taints (PreferNoSchedule) on unneeded nodes, off nodes needed again; a few per loop.
    async fn soft_taints(
        &self,
        cx: &Context<'_>,
        view: &ClusterView,
        unneeded: &HashSet<usize>,
        deleting: &HashSet<String>,
        now: SystemTime,
        status: &mut Status,
    ) {
        let Some(cluster) = cx.actor.as_deref() else {
            return;
        };
        let mut budget = cx.settings.scale_down.max_soft_taints;
        for (n, node) in view.nodes.iter().enumerate() {
            if budget == 0 {
                break;
            }
            if self.actuator.contains(&node.name) || deleting.contains(&node.name) {
                continue;
            }
            let has = node.tainted(DELETION_CANDIDATE_TAINT);
            let should = unneeded.contains(&n);
            let result = if should && !has {
                let taint = super::actuation::deletion_candidate(now);
                cluster.taint(&node.name, &taint).await
            } else if has && !should {
                cluster.untaint(&node.name, DELETION_CANDIDATE_TAINT).await
            } else {
                continue;
            };
            budget -= 1;
            if let Err(e) = result {
                status
                    .errors
                    .push(format!("soft taint on {}: {e}", node.name));
            }
        }
    }

    /// One step of every deletion in progress.
    pub async fn advance_deletions(
        &mut self,
        cx: &Context<'_>,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        now: SystemTime,
        status: &mut Status,
    ) {
        if let Some(why) = &self.doubt {
            // A drain would find its node empty in this view: every deletion waits for a view to trust.
            for d in self.actuator.in_flight() {
                status.deletions.push(DeletionStatus {
                    node: d.node.clone(),
                    node_group: d.group.clone(),
                    state: "paused".into(),
                    detail: why.clone(),
                });
            }
            return;
        }
        let sd = &cx.settings.scale_down;
        self.deleted.clear();
        let outcomes = self
            .actuator
            .advance(cluster, cx.client, view, &sd.rules, &sd.pacing, now)
            .await;
        for outcome in outcomes {
            let (node, node_group, state, detail) = match outcome {
                Outcome::Deleted { node, group, empty } => {
                    self.last_delete = Some(now);
                    *self.deleted.entry(group.clone()).or_default() += 1;
                    // Why it went, as scale-down (or consolidation) said when it started.
                    let reason = if self.replacements.draining(&node) {
                        self.replacements.ended(&node, true, "", status);
                        "consolidated"
                    } else if empty {
                        "empty"
                    } else {
                        "underutilized"
                    };
                    (node, group, "deleted", reason.to_string())
                }
                Outcome::Failed { node, group, why } => {
                    self.last_failure = Some(now);
                    self.replacements.ended(&node, false, &why, status);
                    status.errors.push(format!(
                        "scale-down of {node} failed, it stays in service: {why}"
                    ));
                    (node, group, "failed", why)
                }
                Outcome::Draining {
                    node,
                    group,
                    waiting,
                } => (node, group, "draining", format!("waiting for {waiting}")),
            };
            status.deletions.push(DeletionStatus {
                node,
                node_group,
                state: state.into(),
                detail,
            });
        }
    }

    /// Our ToBeDeleted taints that an earlier run left (it stopped mid-deletion) come off in the first loop,
    /// except on nodes whose instance the provider is already deleting. Returns the nodes put back.
    pub async fn remove_stale_taints(
        &mut self,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        facts: &[GroupFacts],
        status: &mut Status,
    ) -> HashSet<String> {
        let mut restored = HashSet::new();
        if std::mem::replace(&mut self.stale_taints_checked, true) {
            return restored;
        }
        let going: HashSet<&str> = facts
            .iter()
            .flat_map(|f| &f.instances)
            .filter(|i| {
                i.status
                    .as_ref()
                    .is_some_and(|s| s.instance_state == InstanceState::InstanceDeleting as i32)
            })
            .map(|i| i.id.as_str())
            .collect();
        for node in view.nodes.iter() {
            if !node.tainted(TO_BE_DELETED_TAINT)
                || self.actuator.contains(&node.name)
                || going.contains(node.provider_id.as_str())
            {
                continue;
            }
            match cluster.untaint(&node.name, TO_BE_DELETED_TAINT).await {
                Ok(()) => {
                    restored.insert(node.name.clone());
                    status.deletions.push(DeletionStatus {
                        node: node.name.clone(),
                        node_group: String::new(),
                        state: "restored".into(),
                        detail: "a ToBeDeleted taint left by an earlier run was removed".into(),
                    });
                }
                Err(e) => status
                    .errors
                    .push(format!("removing a stale taint from {}: {e}", node.name)),
            }
        }
        restored
    }
}

/// A removable node as the status reports it: why it may go and where its pods go.
fn describe(
    view: &ClusterView,
    pods: PodList<'_>,
    groups: &[GroupInfo],
    r: &scaledown::Removable,
) -> ScaleDown {
    let options = &groups[r.group].options;
    let threshold = if r.utilization.gpu.is_some() {
        options.gpu_utilization
    } else {
        options.utilization
    };
    ScaleDown {
        node: view.nodes[r.node].name.clone(),
        node_group: groups[r.group].id.clone(),
        reason: if r.empty { "empty" } else { "underutilized" }.into(),
        detail: format!(
            "utilization {} (threshold {:.0}%); {}",
            r.utilization.describe(),
            threshold * 100.0,
            destinations(view, pods, r)
        ),
        // Pending pods found room here this loop are not on the node: nothing to evict.
        pods: r
            .evicted
            .iter()
            .filter(|&&p| pods[p].node_name.is_some())
            .map(|&p| pods[p].key())
            .collect(),
        risky: r.risky,
    }
}

/// Where a removable node's pods go, for people: `default/api-0 -> ip-a` or `12 pods -> ip-a (5), ip-b (7)`.
fn destinations(view: &ClusterView, pods: PodList<'_>, r: &scaledown::Removable) -> String {
    match r.destinations.as_slice() {
        [] => "no pod needs a new place".into(),
        [(pod, node)] => format!("{} -> {}", pods[*pod].key(), view.nodes[*node].name),
        many => {
            let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
            for (_, node) in many {
                *per_node.entry(view.nodes[*node].name.as_str()).or_default() += 1;
            }
            let spread: Vec<String> = per_node
                .iter()
                .map(|(node, n)| format!("{node} ({n})"))
                .collect();
            format!("{} pods -> {}", many.len(), spread.join(", "))
        }
    }
}
