//! Consolidation's part of the scale-down stage: which replacements this loop plans (over the world
//! scale-down left), launching their new nodes, and handing the old nodes of replacements whose new node is
//! Ready to scale-down's deletions. The search is `search.rs`; the replacements in progress and their timers
//! are `replacement.rs`.

use crate::autoscaler::client::ProviderClient;
use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::group::GroupFacts;
use crate::autoscaler::group::{Group, Totals};
use crate::autoscaler::scaledown::act::actuation::{Actuator, Cause, DeletionOrder};
use crate::autoscaler::scaledown::consolidation::replacement::{
    InFlight, OldNodeFate, Replacements,
};
use crate::autoscaler::scaledown::consolidation::search::{
    self, Ask, NotConsolidatedBecause, ReplacementTarget,
};
use crate::autoscaler::scaledown::context::Context;
use crate::autoscaler::scaledown::plan::drainability::{PdbBudget, Rules};
use crate::autoscaler::scaledown::plan::planner::{DeletionKind, ScaleDownPlan};
use crate::autoscaler::scaledown::plan::removal::Input;
use crate::autoscaler::scaledown::report::ScaleDownReport;
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::autoscaler::scaleup::orchestrator as scaleup;
use crate::autoscaler::status::{Consolidation, KeptNode};
use crate::model::{Pod, ZONE_LABEL};
use crate::simulator::{Place, Topology};
use std::collections::HashMap;
use std::time::SystemTime;

/// What consolidation reads of the groups besides scale-down's view of them: the scale-up stage's groups
/// (templates with their DaemonSet pods, node prices, why a group may not grow) and this loop's scale-ups.
pub struct Fleet<'a> {
    pub groups: &'a [Group],
    /// Nodes this loop's scale-ups asked of each group (by id).
    pub grown: &'a HashMap<String, u64>,
}

/// What consolidation plans over: the groups, the deletions in progress, and the world scale-down left.
pub struct Leftover<'w, 'a> {
    pub facts: &'w [GroupFacts],
    pub fleet: &'w Fleet<'a>,
    pub actuator: &'w Actuator,
    pub topology: &'w mut Topology,
    pub places: &'w mut Vec<Place>,
}

/// Consolidation's state between loops: the replacements in progress and the per-node timers.
#[derive(Default)]
pub struct Consolidator {
    pub replacements: Replacements,
}

/// Replacements whose new node is Ready this loop: those to hand over (by index), those given up with why.
#[derive(Default)]
pub struct Readiness {
    pub hand_over: Vec<usize>,
    pub give_up: Vec<(usize, String)>,
}

impl Consolidator {
    /// Replacements whose new node is Ready: the pods of their old nodes must still fit without them (the new
    /// node among the nodes that stay) before they drain. Returns those to hand over and those given up.
    pub fn check_ready(
        &self,
        view: &ClusterView,
        input: &Input<'_>,
        rules: &Rules,
        topology: &mut Topology,
        places: &mut [Place],
    ) -> Readiness {
        let mut ready = Readiness::default();
        if self.replacements.count() == 0 {
            return ready;
        }
        let index: HashMap<&str, usize> = (view.nodes.iter().enumerate())
            .map(|(n, node)| (node.name.as_str(), n))
            .collect();
        for (i, r) in self.replacements.ready() {
            let old: Vec<usize> = r
                .old
                .iter()
                .filter_map(|n| index.get(n.as_str()).copied())
                .collect();
            match search::still_fits(input, rules, topology, places, &old, r.cause) {
                Ok(()) => ready.hand_over.push(i),
                Err(why) => ready.give_up.push((
                    i,
                    format!("the pods no longer fit without the old node(s): {why}"),
                )),
            }
        }
        // The old nodes of the replacements still waiting take no pod meanwhile.
        for name in self.replacements.old_nodes() {
            if let Some(&n) = index.get(name) {
                places[n].accepts = false;
            }
        }
        ready
    }

    /// Consolidation's decision over the world scale-down left: the nodes its timers, replacements in progress
    /// and scale-down's own removals leave alone, then the planner; `waits` holds every replacement back.
    pub fn plan(
        &self,
        cx: &Context<'_>,
        input: &Input<'_>,
        leftover: Leftover<'_, '_>,
        plan: &ScaleDownPlan,
        waits: Option<&str>,
    ) -> (Vec<Consolidation>, Vec<KeptNode>) {
        let Leftover {
            facts,
            fleet,
            actuator,
            topology,
            places,
        } = leftover;
        let settings = &cx.consolidation;
        let sd = &cx.scale_down;
        let nodes = input.nodes;
        let mut left = (self.replacements).held(nodes, settings, sd.timers(), input.now);
        let mut pdbs = PdbBudget::new(input.pdbs);
        for r in &plan.removable {
            pdbs.spend(&r.covered);
            let why = "scale-down removes it once its unneeded time has passed".to_string();
            left.insert(r.node, (NotConsolidatedBecause::ScaleDownCandidate, why));
            for &(_, to) in &r.destinations {
                let why = format!("scale-down moves the pods of {} here", nodes[r.node].name);
                left.entry(to)
                    .or_insert((NotConsolidatedBecause::ScaleDownCandidate, why));
            }
        }
        let prices: Vec<Option<f64>> = fleet.groups.iter().map(|g| g.node_price).collect();
        // What the cluster holds and has coming (scale-up's plan included): a new node must fit the limits.
        let totals = Totals::of(places, &cx.quotas);
        let (targets, left_out) = targets(input, facts, fleet, cx.limits, &totals);
        // How many nodes each group may lose, after the deletions in progress and scale-down's removals.
        let room = plan.room_to_lose(input.groups);
        let in_progress = format!(
            "{} replacement(s) in progress (--max-consolidation-parallelism {})",
            self.replacements.count(),
            settings.max_parallelism
        );
        let (limit, over_limit) = match (cx.actor.is_some(), waits) {
            (false, _) => (
                usize::MAX,
                (NotConsolidatedBecause::ConsolidationBudgetReached, ""),
            ),
            (true, Some(why)) => (0, (NotConsolidatedBecause::ConsolidationInCooldown, why)),
            (true, None) => (
                settings
                    .max_parallelism
                    .saturating_sub(self.replacements.count()),
                (
                    NotConsolidatedBecause::ConsolidationBudgetReached,
                    in_progress.as_str(),
                ),
            ),
        };
        let ask = Ask {
            rules: &sd.rules,
            min_saving: settings.min_saving,
            targets: &targets,
            prices: &prices,
            left: &left,
            left_out: &left_out,
            room,
            limit,
            over_limit,
        };
        let found = search::plan(input, &ask, &mut pdbs, topology, places);
        let group_id = |g: usize| fleet.groups[g].id.clone();
        let launches = (found.replacements.into_iter())
            .map(|r| Consolidation {
                nodes: r.nodes.iter().map(|&n| nodes[n].name.clone()).collect(),
                from_node_groups: r.from_groups.iter().map(|&g| group_id(g)).collect(),
                node_group: group_id(r.group),
                instance_type: r.instance_type.clone(),
                pods: (r.moving.iter())
                    .map(|&p| input.pods.get(p))
                    .filter(|p| p.node_name.is_some())
                    .map(Pod::key)
                    .collect(),
                price_per_hour_before: r.before,
                price_per_hour_after: r.after,
                saving_per_hour: r.saving(),
                error: None,
            })
            .collect();
        let not = (found.not.into_iter())
            .filter(|n| !actuator.contains(&nodes[n.node].name))
            .map(|n| KeptNode {
                node: nodes[n.node].name.clone(),
                node_group: input.node_group[n.node].map(group_id),
                reason: n.reason.to_string(),
                detail: n.detail,
            })
            .collect();
        (launches, not)
    }

    /// Launches each replacement's new node (IncreaseSize +1 on its group); returns the groups that refused.
    pub async fn launch(
        &mut self,
        client: &ProviderClient,
        launches: Vec<Consolidation>,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> ScaleDownReport {
        let mut done = ScaleDownReport::default();
        for mut report in launches {
            match client.increase_size(&report.node_group, 1).await {
                Ok(()) => {
                    let r = InFlight::new(
                        report.nodes.clone(),
                        report.from_node_groups.clone(),
                        report.node_group.clone(),
                        report.saving_per_hour,
                        now,
                    );
                    self.replacements.launched(r, facts);
                }
                Err(e) => {
                    let why = e.to_string();
                    let group = &report.node_group;
                    (done.errors).push(format!("consolidation: a new node of {group}: {why}"));
                    done.backoffs.push((group.clone(), why.clone()));
                    report.error = Some(why);
                }
            }
            done.status.consolidation.push(report);
        }
        done
    }

    /// Replacements whose new node is Ready hand their old nodes to the deletions (taint, drain, delete);
    /// those whose pods no longer fit are given up.
    /// Returns the deletions started, the replacements' states, and whether a deletion failed to start.
    pub async fn replace(
        &mut self,
        cluster: &dyn ClusterSource,
        actuator: &mut Actuator,
        view: &ClusterView,
        ready: Readiness,
        now: SystemTime,
    ) -> (ScaleDownReport, bool) {
        let mut done = ScaleDownReport::default();
        let mut failed = false;
        let mut old = Vec::new();
        for &i in &ready.hand_over {
            let (r, state) = self.replacements.hand_over(i, now);
            let cause = r.cause;
            let nodes = r.old.iter().cloned().zip(r.old_groups.iter().cloned());
            old.extend(nodes.map(|(node, group)| (node, group, cause)));
            done.status.replacements.push(state);
        }
        let mut give_up = ready.give_up;
        give_up.sort_by_key(|(i, _)| std::cmp::Reverse(*i));
        for (i, why) in give_up {
            done.status
                .replacements
                .push(self.replacements.give_up(i, why));
        }
        for (name, group, cause) in old {
            let Some(node) = view.nodes.iter().find(|n| n.name == name) else {
                continue;
            };
            let order = DeletionOrder {
                node,
                group: &group,
                kind: DeletionKind::Drain,
                cause,
            };
            match actuator.start(cluster, order, now).await {
                Ok(()) => {
                    let why = match cause {
                        Cause::Disruption { reason, .. } | Cause::Leaving { reason, .. } => {
                            format!("{reason}: replaced by a new node")
                        }
                        Cause::ScaleDown => "consolidated: replaced by a cheaper node".to_string(),
                    };
                    done.deletion(name, group, "started", why);
                }
                Err(e) => {
                    failed = true;
                    let why = format!("tainting failed: {e}");
                    done.errors.push(format!("consolidation of {name}: {why}"));
                    done.status
                        .replacements
                        .extend(self.replacements.ended(&name, OldNodeFate::Stays(&why)));
                }
            }
        }
        (done, failed)
    }
}

/// The groups a replacement may launch in: not skipped this loop (backoff, unhealthy), priced, with no
/// instance that failed to launch, each with its template where its Auto Scaling group launches next, and
/// room for one more node: its max size after this loop's scale-ups, and the cluster's limits over `totals`
/// (`--max-nodes-total`, `--cores-total`, `--memory-total`), since the new node runs beside the old ones
/// until they are gone.
fn targets<'g>(
    input: &Input<'_>,
    facts: &[GroupFacts],
    fleet: &Fleet<'g>,
    limits: &ClusterLimits,
    totals: &Totals,
) -> (Vec<ReplacementTarget<'g>>, Vec<String>) {
    let (mut targets, mut left_out) = (Vec::new(), Vec::new());
    let per_zone = nodes_per_zone(input);
    for (g, group) in fleet.groups.iter().enumerate() {
        let mut leave = |why: String| left_out.push(format!("{}: {why}", group.id));
        if let Some(why) = &group.skip {
            leave(why.clone());
            continue;
        }
        let Some(price) = group.node_price else {
            leave("no price".into());
            continue;
        };
        // Instances it could not create are still listed (a stockout): a new node there would not come.
        let failing = (facts[g].instances.iter()).any(|i| i.error.is_some());
        if failing {
            leave("an instance failed to launch".into());
            continue;
        }
        let Some(template) = launch_template(&per_zone, g, group) else {
            leave("no template".into());
            continue;
        };
        let grown = fleet.grown.get(&group.id).copied().unwrap_or(0);
        let (room, limit) = scaleup::node_limit(group, grown, template, limits, totals);
        if room == 0 {
            leave(limit.to_string());
            continue;
        }
        targets.push(ReplacementTarget {
            group: g,
            template,
            price,
        });
    }
    (targets, left_out)
}

/// The template of the zone a group's next node launches in: the one zone, or the zone with the fewest of
/// its nodes (ties in the group's order of zones), as the Auto Scaling group balances.
fn launch_template<'g>(
    count: &HashMap<(usize, Option<String>), usize>,
    g: usize,
    group: &'g Group,
) -> Option<&'g Place> {
    if group.zones.is_empty() {
        return group.template.as_ref();
    }
    let zone = |node: &crate::model::Node| node.labels.get(ZONE_LABEL).cloned();
    (group.zones.iter()).min_by_key(|z| count.get(&(g, zone(&z.node))).copied().unwrap_or(0))
}

/// How many nodes each group has in each zone, in one pass over the nodes.
fn nodes_per_zone(input: &Input<'_>) -> HashMap<(usize, Option<String>), usize> {
    let mut count = HashMap::new();
    for (node, ng) in input.nodes.iter().zip(input.node_group) {
        if let Some(g) = *ng {
            let zone = node.labels.get(ZONE_LABEL).cloned();
            *count.entry((g, zone)).or_default() += 1;
        }
    }
    count
}
