//! Carrying scale-down's decision out, one step per loop: Ready replacements hand their old nodes over,
//! deletions start (the ToBeDeleted taint), soft taints follow the unneeded nodes, consolidation's new nodes
//! are launched; and the deletions in progress, with the taints an earlier run left, take their next step.

use super::decision::{Decision, DeletionToStart, Surge};
use super::policy::ScaleDownPolicy;
use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::scaledown::act::actuation::{
    self, Cause, DeletionOrder, Outcome, StepGround,
};
use crate::autoscaler::scaledown::act::rotation::AfterDeletion;
use crate::autoscaler::scaledown::consolidation::replacement::{InFlight, OldNodeFate};
use crate::autoscaler::scaledown::context::Context;
use crate::autoscaler::scaledown::report::ScaleDownReport;
use crate::autoscaler::status::{DisruptionStatus, ScaleDownStatus, Times};
use crate::model::{CORDONED_FOR_DRIFT, DELETION_CANDIDATE_TAINT, Node, TO_BE_DELETED_TAINT};
use std::collections::HashSet;
use std::time::SystemTime;

/// Which way a node's cordon goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cordon {
    On,
    Off,
}

impl std::fmt::Display for Cordon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Cordon::On => "cordoning",
            Cordon::Off => "uncordoning",
        })
    }
}

/// What carrying a decision out reads of the loop: the view the decision was made over, the nodes already on
/// their way out, the groups as the provider says them, and the loop's time.
pub struct CarryGround<'g> {
    pub view: &'g ClusterView,
    pub deleting: &'g HashSet<String>,
    pub facts: &'g [GroupFacts],
    pub now: SystemTime,
}

impl ScaleDownPolicy {
    /// Carries a decision out on the cluster (when there is one to act on): hands Ready replacements over,
    /// starts its deletions, moves the soft taints, launches consolidation's new nodes. Returns the report
    /// of it all, with the groups to back off (those that refused a replacement's new node).
    pub async fn carry_out(
        &mut self,
        cx: &Context<'_>,
        ground: &CarryGround<'_>,
        mut decision: Decision,
    ) -> ScaleDownReport {
        let CarryGround {
            view,
            deleting,
            facts,
            now,
        } = *ground;
        decision.kept.sort_by(|a, b| a.node.cmp(&b.node));
        let mut report = ScaleDownReport {
            status: ScaleDownStatus {
                unremovable: decision.kept,
                not_consolidated: decision.not_consolidated,
                disruptions: decision.disruptions,
                disruption_budgets: decision.budgets,
                ..ScaleDownStatus::default()
            },
            times: Times {
                scale_down_ms: decision.planning_ms,
                consolidation_ms: decision.consolidation_ms,
                ..Times::default()
            },
            ..ScaleDownReport::default()
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
            report.scale_ups = decision.surges.iter().map(Surge::scale_up).collect();
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
        let cordons = (decision.cordon.iter().map(|&n| (n, Cordon::On)))
            .chain(decision.uncordon.iter().map(|&n| (n, Cordon::Off)));
        for (n, cordon) in cordons {
            let name = &view.nodes[n].name;
            let done = match cordon {
                Cordon::On => cluster.cordon(name, CORDONED_FOR_DRIFT).await,
                Cordon::Off => cluster.uncordon(name).await,
            };
            if let Err(e) = done {
                report.errors.push(format!("{cordon} {name}: {e}"));
            }
        }
        if let Some(unneeded) = &decision.unneeded {
            let errors = self.soft_taints(cx, view, unneeded, deleting, now).await;
            report.errors.extend(errors);
        }
        let launched = (self.consolidator)
            .launch(cx.client, decision.consolidate, facts, now)
            .await;
        report.merge(launched);
        report.merge(self.surge(cx, decision.surges, facts, now).await);
        report.merge(self.replace_terminated(cx, view, facts, now).await);
        report
    }

    /// Asks for each expired or drifted node's replacement (IncreaseSize +1 on its group); the node drains
    /// once the new one is Ready, as a consolidation's old nodes do. A group that refuses is backed off.
    async fn surge(
        &mut self,
        cx: &Context<'_>,
        surges: Vec<Surge>,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut done = ScaleDownReport::default();
        for surge in surges {
            let mut scale_up = surge.scale_up();
            match cx.client.increase_size(&surge.group, 1).await {
                Ok(()) => {
                    let groups = vec![surge.group.clone()];
                    let r = InFlight::new(vec![surge.node], groups, surge.group, 0.0, now);
                    let r = r.for_disruption(surge.cause);
                    self.consolidator.replacements.launched(r, facts);
                }
                Err(e) => {
                    let why = e.to_string();
                    let group = &surge.group;
                    let what = format!("a new node of {group} to replace {}", surge.node);
                    done.errors.push(format!("{what}: {why}"));
                    done.backoffs.push((group.clone(), why.clone()));
                    scale_up.error = Some(why);
                }
            }
            done.scale_ups.push(scale_up);
        }
        done
    }

    /// Starts each deletion (the ToBeDeleted taint goes on); one whose taint fails sets the failure cooldown.
    pub(super) async fn start(
        &mut self,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        deletions: Vec<DeletionToStart>,
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut report = ScaleDownReport::default();
        for d in deletions {
            let node = &view.nodes[d.node];
            let group = d.report.node_group.clone();
            let order = DeletionOrder {
                node,
                group: &group,
                kind: d.kind,
                cause: d.cause,
            };
            match self.actuator.start(cluster, order, now).await {
                Ok(()) => {
                    self.unneeded.remove(&node.name);
                    if let (AfterDeletion::Replacement, Cause::Disruption { reason, .. }) =
                        (d.then, d.cause)
                    {
                        self.actuator.rotations.start(&node.name, &group, reason);
                    }
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

    /// Leaving nodes that go now: each tainted (cordoned) at once and drained from its next step, its pods
    /// held by their budgets until the order's `at` and deleted past them then, and the node removed through
    /// NodeGroupDeleteNodes; a node already on its way out is left to its deletion. Returns the nodes
    /// started, and what could not be.
    pub async fn drain_leaving(
        &mut self,
        cluster: &dyn ClusterSource,
        orders: Vec<DeletionOrder<'_>>,
        now: SystemTime,
    ) -> (Vec<String>, Vec<String>) {
        let (mut started, mut errors) = (Vec::new(), Vec::new());
        for order in orders {
            let name = order.node.name.clone();
            if self.actuator.contains(&name) {
                continue;
            }
            match self.actuator.start(cluster, order, now).await {
                Ok(()) => {
                    self.unneeded.remove(&name);
                    started.push(name);
                }
                Err(e) => errors.push(format!(
                    "draining leaving node {name}: tainting failed: {e}"
                )),
            }
        }
        (started, errors)
    }

    /// Soft taints (PreferNoSchedule) on unneeded nodes, off nodes needed again; a few per loop. Returns the
    /// taints that could not be changed.
    pub(super) async fn soft_taints(
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

    /// One step of every deletion in progress; those of a group a managed node group update started on
    /// are given up (EKS replaces its nodes, and removing one would lower its target under the update).
    pub async fn advance_deletions(
        &mut self,
        cx: &Context<'_>,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut report = ScaleDownReport::default();
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
        let updating: HashSet<&str> = (facts.iter())
            .filter(|f| f.updating())
            .map(|f| f.group.id.as_str())
            .collect();
        let ground = StepGround {
            cluster,
            client: cx.client,
            view,
            rules: &sd.rules,
            pacing: &sd.pacing,
        };
        let outcomes = self.actuator.advance(&ground, &updating, now).await;
        for outcome in outcomes {
            let rotations = &mut self.actuator.rotations;
            match &outcome {
                Outcome::Deleted { node, group, .. } => {
                    let target = facts.iter().find(|f| f.group.id == *group);
                    rotations.deleted(node, target.map_or(0, |f| f.target));
                }
                Outcome::Failed { node, .. } | Outcome::Stopped { node, .. } => {
                    rotations.given_up(node)
                }
                Outcome::Draining { .. } => {}
            }
            let (node, node_group, state, detail) = self.ended(outcome, now, &mut report);
            report.deletion(node, node_group, state, detail);
        }
        report
    }

    /// Asks the replacement of each node terminated first and gone (IncreaseSize by one on its group, which
    /// its deletion took one from), unless the group is back at its size already; a refusal is said and
    /// retried next loop. Rotations whose new node is Ready end. Asked after scale-up, in the loop whose
    /// deletions step removed the node: scale-up planned over the group's size before it (at its limit), so
    /// it never asks for the same node.
    async fn replace_terminated(
        &mut self,
        cx: &Context<'_>,
        view: &ClusterView,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut done = ScaleDownReport::default();
        let rotations = &mut self.actuator.rotations;
        for owed in rotations.owed() {
            let Some(fact) = facts.iter().find(|f| f.group.id == owed.group) else {
                // The group is gone: nothing to grow.
                rotations.given_up(&owed.node);
                continue;
            };
            // This loop's deletions left the facts too high by as many; a group grown since is owed nothing.
            let gone = self.deleted.get(&owed.group).copied().unwrap_or(0);
            if fact.target - gone >= owed.target {
                rotations.asked(&owed.node, now);
                continue;
            }
            let mut scale_up = Surge {
                node: owed.node.clone(),
                group: owed.group.clone(),
                cause: Cause::Disruption {
                    reason: owed.reason,
                    grace: None,
                },
            }
            .scale_up();
            scale_up.reason = format!(
                "replaces {} node {}, terminated first: its group had no room to surge",
                owed.reason, owed.node
            );
            match cx.client.increase_size(&owed.group, 1).await {
                Ok(()) => rotations.asked(&owed.node, now),
                Err(e) => {
                    let why = e.to_string();
                    let what = format!("the replacement of {}, terminated first", owed.node);
                    (done.errors).push(format!(
                        "{what} in {}: {why}; asked again next loop",
                        owed.group
                    ));
                    rotations.refused(&owed.node, why.clone());
                    scale_up.error = Some(why);
                }
            }
            done.scale_ups.push(scale_up);
        }
        let group_of = |n: &Node| {
            let found = facts.iter().find(|f| {
                (f.instances.iter()).any(|i| !n.provider_id.is_empty() && i.id == n.provider_id)
            });
            found.map(|f| f.group.id.clone())
        };
        rotations.settle(&view.nodes, group_of, now);
        done
    }

    /// What a deletion's step means for the policy: a deletion counts for its group and the cooldown, a
    /// failure sets the failure cooldown; a replacement's old node ends its part. Returns the deletion's row.
    pub(super) fn ended(
        &mut self,
        outcome: Outcome,
        now: SystemTime,
        report: &mut ScaleDownReport,
    ) -> (String, String, &'static str, String) {
        let replacements = &mut self.consolidator.replacements;
        match outcome {
            Outcome::Deleted {
                node,
                group,
                empty,
                cause,
            } => {
                self.last_delete = Some(now);
                *self.deleted.entry(group.clone()).or_default() += 1;
                // Why it went, as scale-down (or consolidation, or expiry) said when it started.
                let reason = if let Cause::Leaving { reason, .. } = cause {
                    reason
                } else if let Cause::Disruption { reason, .. } = cause {
                    (report.status.replacements)
                        .extend(replacements.ended(&node, OldNodeFate::Deleted));
                    reason
                } else if replacements.draining(&node) {
                    report
                        .status
                        .replacements
                        .extend(replacements.ended(&node, OldNodeFate::Deleted));
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
                    .extend(replacements.ended(&node, OldNodeFate::Stays(&why)));
                report.errors.push(format!(
                    "scale-down of {node} failed, it stays in service: {why}"
                ));
                (node, group, "failed", why)
            }
            Outcome::Stopped { node, group, why } => {
                (report.status.replacements)
                    .extend(replacements.ended(&node, OldNodeFate::Stays(&why)));
                (node, group, "stopped", why)
            }
            Outcome::Draining {
                node,
                group,
                waiting,
                held,
            } => {
                // An expired or drifted node whose drain a pod holds is still waiting, as the disruptions
                // list says of those it has not started.
                if let Some(reason) = held {
                    report.status.disruptions.push(DisruptionStatus {
                        node: node.clone(),
                        node_group: group.clone(),
                        reason: reason.into(),
                        action: "wait".into(),
                        detail: format!("draining, held by {waiting}"),
                    });
                }
                (node, group, "draining", format!("waiting for {waiting}"))
            }
        }
    }

    /// Our ToBeDeleted taints that an earlier run left (it stopped mid-deletion) come off in the first loop,
    /// except on nodes whose instance the provider is already deleting. Returns the nodes put back.
    pub async fn remove_stale_taints(
        &mut self,
        cluster: &dyn ClusterSource,
        view: &ClusterView,
        facts: &[GroupFacts],
    ) -> (HashSet<String>, ScaleDownReport) {
        let mut restored = HashSet::new();
        let mut report = ScaleDownReport::default();
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
