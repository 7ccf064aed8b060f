//! The scale-down policy, around the planner (`planner.rs`): the unneeded timers (`unneeded.rs`), the
//! cooldowns after a scale-up, deletion or failure, the deletion and drain budgets (`budgets.rs`), soft taints
//! on unneeded nodes; and the deletions in progress, one step per loop, with the ToBeDeleted taints an
//! earlier run left. With `--consolidation replace`, consolidation plans over the same world and its
//! replacements end in the same deletions (`consolidation/`). Each step returns its part of the report.

use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::planning::planning;
use crate::autoscaler::scaledown::actuation::{self, Actuator, Outcome};
use crate::autoscaler::scaledown::budgets;
use crate::autoscaler::scaledown::consolidation::consolidator::{
    Consolidator, Fleet, Leftover, Readiness,
};
use crate::autoscaler::scaledown::context::Context;
use crate::autoscaler::scaledown::planner::{self, Held, Plan, Removable, Unremovable};
use crate::autoscaler::scaledown::removal::{GroupInfo, Input};
use crate::autoscaler::scaledown::report::Report;
use crate::autoscaler::scaledown::unneeded::UnneededTimers;
use crate::autoscaler::scaledown::view_check::ViewCheck;
use crate::autoscaler::status::{Consolidation, KeptNode, ScaleDown, ScaleDownStatus, Times};
use crate::model::{
    DELETION_CANDIDATE_TAINT, LabelProjection, PodList, PodNames, TO_BE_DELETED_TAINT,
};
use crate::simulator::topology::{Place, Topology};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime};

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
    /// Replacements in progress whose old nodes drain now, and those given up.
    ready: Readiness,
}

/// A node whose deletion scale-down starts, with its report.
pub struct Deletion {
    pub node: usize,
    pub empty: bool,
    pub report: ScaleDown,
}

/// What the decision reads of this loop: the view, the groups, the world scale-up left.
pub struct Scene<'a> {
    pub view: &'a ClusterView,
    pub pods: PodList<'a>,
    pub facts: &'a [GroupFacts],
    pub fleet: Fleet<'a>,
    /// Each node's group index.
    pub node_group: &'a [Option<usize>],
    /// Pods on each node, pending pods this loop found room for there included.
    pub on_node: &'a [Vec<usize>],
    /// Nodes on their way out: ours, and any carrying a ToBeDeleted taint.
    pub deleting: &'a HashSet<String>,
    pub projection: &'a LabelProjection,
    /// Why scale-up waits this loop (new pods still arriving): deletions wait too.
    pub paused: Option<String>,
    pub now: SystemTime,
}

/// The scale-down state kept between loops.
#[derive(Default)]
pub struct ScaleDownPolicy {
    actuator: Actuator,
    unneeded: UnneededTimers,
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
    pub consolidator: Consolidator,
    /// Nodes deleted this loop, by group: the target sizes read before they went are one too high each.
    deleted: HashMap<String, i32>,
}

impl ScaleDownPolicy {
    /// Checks this loop's view before anything acts on it, from how many of its pods are on nodes
    /// (DaemonSet pods aside). A view that lost most of its pods holds the deletions in progress (a drain
    /// would find its node empty) and scale-down's decision.
    pub fn check_view(&mut self, on_nodes: usize, facts: &[GroupFacts], now: SystemTime) {
        let settle = facts.iter().map(|f| f.options.unneeded).max();
        self.doubt = (self.view).doubt(on_nodes, settle.unwrap_or_default(), now);
    }

    /// Unneeded timers start again: the loop saw an unhealthy cluster.
    pub fn forget_unneeded(&mut self) {
        self.unneeded.clear();
    }

    /// Whether this node is being deleted by us.
    pub fn deleting(&self, node: &str) -> bool {
        self.actuator.contains(node)
    }

    /// Scale-down's decision: plan the unneeded nodes over the world scale-up left (pods it found room for on
    /// existing nodes stay counted there), run their timers, and admit the deletions the cooldowns and budgets
    /// allow; consolidation plans over what is left. Nothing is carried out here:
    /// [`ScaleDownPolicy::carry_out`] does that.
    pub fn decide(
        &mut self,
        cx: &Context<'_>,
        scene: &Scene<'_>,
        topology: &mut Topology,
        places: &mut Vec<Place>,
    ) -> Decision {
        let groups = self.groups(scene.facts);
        let acts = cx.actor.is_some();
        if let Some(why) = self.doubt.clone() {
            return self.untrusted(scene, &groups, why, acts);
        }
        let sd = &cx.scale_down;
        let previously = self.unneeded.nodes();
        // The old nodes of replacements in progress are on their way out: scale-down neither removes them
        // nor moves pods onto them.
        let mut excluded = scene.deleting.clone();
        let replacements = &self.consolidator.replacements;
        excluded.extend(replacements.old_nodes().map(str::to_string));
        let input = input(cx, scene, &groups, &excluded, &previously);
        let started = Instant::now();
        let existing = scene.view.nodes.len();
        let ready = (self.consolidator).check_ready(
            scene.view,
            &input,
            &sd.rules,
            topology,
            &mut places[..existing],
        );
        let plan = planning(|| planner::plan(&input, &sd.rules, topology, &mut places[..existing]));
        let planning_ms = started.elapsed().as_secs_f64() * 1000.0;
        let waits = acts
            .then(|| {
                scene
                    .paused
                    .clone()
                    .or_else(|| self.cooldown(cx, scene.now))
            })
            .flatten();
        let started = Instant::now();
        let (consolidate, not_consolidated) = if cx.consolidation.replaces() {
            let (view, now) = (scene.view, scene.now);
            (self.consolidator.replacements).track(view, scene.on_node, scene.pods, now);
            let leftover = Leftover {
                facts: scene.facts,
                fleet: &scene.fleet,
                actuator: &self.actuator,
                topology,
                places,
            };
            let waits = waits.as_deref();
            planning(|| (self.consolidator).plan(cx, &input, leftover, &plan, waits))
        } else {
            (Vec::new(), Vec::new())
        };
        let mut decision = Decision {
            delete: Vec::new(),
            kept: self.kept(scene, &groups, &plan),
            unneeded: Some(plan.removable.iter().map(|r| r.node).collect()),
            acts,
            planning_ms,
            consolidation_ms: started.elapsed().as_secs_f64() * 1000.0,
            consolidate,
            not_consolidated,
            ready,
        };
        self.admit(cx, scene, &groups, &plan, waits, &mut decision);
        decision
    }

    /// Each group as scale-down sees it: its target less the nodes deleted this loop, and its nodes on their
    /// way out (deletions in progress, old nodes of replacements: the group must not shrink under them).
    fn groups(&self, facts: &[GroupFacts]) -> Vec<GroupInfo> {
        let replacements = &self.consolidator.replacements;
        (facts.iter())
            .map(|f| GroupInfo {
                id: f.group.id.clone(),
                min_size: f.group.min_size,
                target: f.target - self.deleted.get(&f.group.id).copied().unwrap_or(0),
                options: f.options,
                deleting: (self.actuator.in_flight())
                    .filter(|d| d.group == f.group.id)
                    .count()
                    + replacements.leaving(&f.group.id),
            })
            .collect()
    }

    /// Nothing is decided on a view that lost its pods: no deletion, no soft taint moves, the timers stay as
    /// they were.
    fn untrusted(
        &self,
        scene: &Scene<'_>,
        groups: &[GroupInfo],
        why: String,
        acts: bool,
    ) -> Decision {
        let kept = (scene.view.nodes.iter().zip(scene.node_group))
            .filter(|(n, _)| !self.actuator.contains(&n.name))
            .map(|(n, g)| KeptNode {
                node: n.name.clone(),
                node_group: g.map(|g| groups[g].id.clone()),
                reason: Unremovable::UntrustedClusterView.to_string(),
                detail: why.clone(),
            })
            .collect();
        Decision {
            delete: Vec::new(),
            kept,
            unneeded: None,
            acts,
            planning_ms: 0.0,
            consolidation_ms: 0.0,
            consolidate: Vec::new(),
            not_consolidated: Vec::new(),
            ready: Readiness::default(),
        }
    }

    /// The nodes the planner keeps, with why; our own deletions are reported in `deletions` instead.
    fn kept(&self, scene: &Scene<'_>, groups: &[GroupInfo], plan: &Plan) -> Vec<KeptNode> {
        let nodes = &scene.view.nodes;
        (plan.kept.iter())
            .filter(|k| !self.actuator.contains(&nodes[k.node].name))
            .map(|k| KeptNode {
                node: nodes[k.node].name.clone(),
                node_group: k.group.map(|g| groups[g].id.clone()),
                reason: k.reason.to_string(),
                detail: k.detail.clone(),
            })
            .collect()
    }

    /// The removable nodes through their timers, the cooldowns and the budgets, into the decision: deletions
    /// to start, and the nodes held back with why. Planned only (no cluster to act on), every node whose
    /// timer has run out is reported and no budget applies.
    fn admit(
        &mut self,
        cx: &Context<'_>,
        scene: &Scene<'_>,
        groups: &[GroupInfo],
        plan: &Plan,
        waits: Option<String>,
        decision: &mut Decision,
    ) {
        let sd = &cx.scale_down;
        let nodes = &scene.view.nodes;
        let timed =
            (self.unneeded).run(&plan.removable, nodes, groups, sd.timers_elapsed, scene.now);
        let mut held = timed.waiting;
        let mut ready = timed.ready;
        // Empty nodes first, then those whose drain no PDB slows.
        ready.sort_by_key(|r| (!r.empty, r.risky));
        if decision.acts {
            if let Some(why) = waits {
                held.extend(ready.drain(..).map(|r| Held {
                    removable: r,
                    reason: Unremovable::ScaleDownInCooldown,
                    detail: why.clone(),
                }));
            }
            let admitted = budgets::admit(ready, groups, sd, &self.actuator);
            ready = admitted.start;
            held.extend(admitted.held);
        }
        let kept = held.into_iter().map(|h| KeptNode {
            node: nodes[h.removable.node].name.clone(),
            node_group: Some(groups[h.removable.group].id.clone()),
            reason: h.reason.to_string(),
            detail: h.detail,
        });
        decision.kept.extend(kept);
        decision.delete = (ready.into_iter())
            .map(|r| Deletion {
                node: r.node,
                empty: r.empty,
                report: describe(scene.view, scene.pods, groups, r),
            })
            .collect();
    }

    /// Carries a decision out on the cluster (when there is one to act on): hands Ready replacements over,
    /// starts its deletions, moves the soft taints, launches consolidation's new nodes. Returns the report
    /// of it all, with the groups to back off (those that refused a replacement's new node).
    pub async fn carry_out(
        &mut self,
        cx: &Context<'_>,
        view: &ClusterView,
        mut decision: Decision,
        deleting: &HashSet<String>,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> Report {
        decision.kept.sort_by(|a, b| a.node.cmp(&b.node));
        let mut report = Report {
            status: ScaleDownStatus {
                unremovable: decision.kept,
                not_consolidated: decision.not_consolidated,
                ..ScaleDownStatus::default()
            },
            times: Times {
                scale_down_ms: decision.planning_ms,
                consolidation_ms: decision.consolidation_ms,
                ..Times::default()
            },
            ..Report::default()
        };
        let Some(cluster) = cx.actor.clone().filter(|_| decision.acts) else {
            if cx.act && !(decision.delete.is_empty() && decision.consolidate.is_empty()) {
                report.errors.push(
                    "scale-down planned but not carried out: this cluster source cannot evict pods or \
                     taint nodes"
                        .into(),
                );
            }
            report.status.nodes = decision.delete.into_iter().map(|d| d.report).collect();
            report.status.consolidation = decision.consolidate;
            return report;
        };
        let (replaced, failed) = (self.consolidator)
            .replace(&*cluster, &mut self.actuator, view, decision.ready, now)
            .await;
        if failed {
            self.last_failure = Some(now);
        }
        report.merge(replaced);
        report.merge(self.start(&*cluster, view, decision.delete, now).await);
        if let Some(unneeded) = &decision.unneeded {
            let errors = self.soft_taints(cx, view, unneeded, deleting, now).await;
            report.errors.extend(errors);
        }
        let launched = (self.consolidator)
            .launch(cx.client, decision.consolidate, facts, now)
            .await;
        report.merge(launched);
        report
    }

    /// Starts each deletion (the ToBeDeleted taint goes on); one whose taint fails sets the failure cooldown.
    async fn start(
        &mut self,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        deletions: Vec<Deletion>,
        now: SystemTime,
    ) -> Report {
        let mut report = Report::default();
        for d in deletions {
            let node = &view.nodes[d.node];
            let group = d.report.node_group.clone();
            match (self.actuator)
                .start(cluster, node, &group, d.empty, now)
                .await
            {
                Ok(()) => {
                    self.unneeded.remove(&node.name);
                    report.deletion(node.name.clone(), group, "started", String::new());
                    report.status.nodes.push(d.report);
                }
                Err(e) => {
                    self.last_failure = Some(now);
                    let why = format!("scale-down of {}: tainting failed: {e}", node.name);
                    report.errors.push(why);
                }
            }
        }
        report
    }

    /// Why deletions wait this loop, if they do: a scale-up, deletion or failure too recent.
    fn cooldown(&self, cx: &Context<'_>, now: SystemTime) -> Option<String> {
        let sd = &cx.scale_down;
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

    /// Soft taints (PreferNoSchedule) on unneeded nodes, off nodes needed again; a few per loop. Returns the
    /// taints that could not be changed.
    async fn soft_taints(
        &self,
        cx: &Context<'_>,
        view: &ClusterView,
        unneeded: &HashSet<usize>,
        deleting: &HashSet<String>,
        now: SystemTime,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let Some(cluster) = cx.actor.as_deref() else {
            return errors;
        };
        let mut budget = cx.scale_down.max_soft_taints;
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
                let taint = actuation::deletion_candidate(now);
                cluster.taint(&node.name, &taint).await
            } else if has && !should {
                cluster.untaint(&node.name, DELETION_CANDIDATE_TAINT).await
            } else {
                continue;
            };
            budget -= 1;
            if let Err(e) = result {
                errors.push(format!("soft taint on {}: {e}", node.name));
            }
        }
        errors
    }

    /// One step of every deletion in progress.
    pub async fn advance_deletions(
        &mut self,
        cx: &Context<'_>,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        now: SystemTime,
    ) -> Report {
        let mut report = Report::default();
        if let Some(why) = &self.doubt {
            // A drain would find its node empty in this view: every deletion waits for a view to trust.
            for d in self.actuator.in_flight() {
                let (node, group) = (d.node.clone(), d.group.clone());
                report.deletion(node, group, "paused", why.clone());
            }
            return report;
        }
        let sd = &cx.scale_down;
        self.deleted.clear();
        let outcomes = self
            .actuator
            .advance(cluster, cx.client, view, &sd.rules, &sd.pacing, now)
            .await;
        for outcome in outcomes {
            let (node, node_group, state, detail) = self.ended(outcome, now, &mut report);
            report.deletion(node, node_group, state, detail);
        }
        report
    }

    /// What a deletion's step means for the policy: a deletion counts for its group and the cooldown, a
    /// failure sets the failure cooldown; a replacement's old node ends its part. Returns the deletion's row.
    fn ended(
        &mut self,
        outcome: Outcome,
        now: SystemTime,
        report: &mut Report,
    ) -> (String, String, &'static str, String) {
        let replacements = &mut self.consolidator.replacements;
        match outcome {
            Outcome::Deleted { node, group, empty } => {
                self.last_delete = Some(now);
                *self.deleted.entry(group.clone()).or_default() += 1;
                // Why it went, as scale-down (or consolidation) said when it started.
                let reason = if replacements.draining(&node) {
                    report
                        .status
                        .replacements
                        .extend(replacements.ended(&node, true, ""));
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
                report
                    .status
                    .replacements
                    .extend(replacements.ended(&node, false, &why));
                report.errors.push(format!(
                    "scale-down of {node} failed, it stays in service: {why}"
                ));
                (node, group, "failed", why)
            }
            Outcome::Draining {
                node,
                group,
                waiting,
            } => (node, group, "draining", format!("waiting for {waiting}")),
        }
    }

    /// Our ToBeDeleted taints that an earlier run left (it stopped mid-deletion) come off in the first loop,
    /// except on nodes whose instance the provider is already deleting. Returns the nodes put back.
    pub async fn remove_stale_taints(
        &mut self,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        facts: &[GroupFacts],
    ) -> (HashSet<String>, Report) {
        let mut restored = HashSet::new();
        let mut report = Report::default();
        if std::mem::replace(&mut self.stale_taints_checked, true) {
            return (restored, report);
        }
        let going: HashSet<&str> = (facts.iter())
            .flat_map(|f| &f.instances)
            .filter(|i| i.deleting())
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
                    let why = "a ToBeDeleted taint left by an earlier run was removed";
                    report.deletion(node.name.clone(), String::new(), "restored", why.into());
                }
                Err(e) => {
                    (report.errors).push(format!("removing a stale taint from {}: {e}", node.name))
                }
            }
        }
        (restored, report)
    }
}

/// Scale-down's planner input over this loop's scene.
fn input<'a>(
    cx: &Context<'_>,
    scene: &Scene<'a>,
    groups: &'a [GroupInfo],
    excluded: &'a HashSet<String>,
    previously: &'a HashSet<String>,
) -> Input<'a> {
    Input {
        nodes: &scene.view.nodes,
        pods: scene.pods,
        pdbs: &scene.view.pdbs,
        node_group: scene.node_group,
        groups,
        on_node: scene.on_node,
        deleting: excluded,
        previously_unneeded: previously,
        projection: scene.projection,
        min_cores: cx.limits.min_cores,
        min_memory_gib: cx.limits.min_memory_gib,
        max_node_startup_time: cx.max_node_startup_time,
        unready_enabled: cx.scale_down.unready_enabled,
        now: scene.now,
    }
}

/// A removable node as the status reports it: why it may go and where its pods go.
fn describe(
    view: &ClusterView,
    pods: PodList<'_>,
    groups: &[GroupInfo],
    r: &Removable,
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
        pods: evicted(view, pods, r),
        risky: r.risky,
    }
}

/// The pods a removal evicts, named from the view's packed names (pending pods found room on the node this
/// loop are not on it: nothing to evict).
fn evicted(view: &ClusterView, pods: PodList<'_>, r: &Removable) -> PodNames {
    let mut names = PodNames::with_capacity(r.evicted.len());
    for &p in r.evicted.iter().filter(|&&p| pods[p].node_name.is_some()) {
        names.push_pod(view.pod_keys(), pods, p);
    }
    names
}

/// Where a removable node's pods go, for people: `default/api-0 -> ip-a` or `12 pods -> ip-a (5), ip-b (7)`.
fn destinations(view: &ClusterView, pods: PodList<'_>, r: &Removable) -> String {
    match r.destinations.as_slice() {
        [] => "no pod needs a new place".into(),
        [(pod, node)] => format!("{} -> {}", pods[*pod].key(), view.nodes[*node].name),
        many => {
            // Written straight into one string: a 100,000-node loop describes 70,000 removable nodes.
            let mut to: Vec<&str> = (many.iter())
                .map(|&(_, node)| view.nodes[node].name.as_str())
                .collect();
            to.sort_unstable();
            let mut text = format!("{} pods -> ", many.len());
            for (i, run) in to.chunk_by(|a, b| a == b).enumerate() {
                let comma = if i == 0 { "" } else { ", " };
                let _ = write!(text, "{comma}{} ({})", run[0], run.len());
            }
            text
        }
    }
}
