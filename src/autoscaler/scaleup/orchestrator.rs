//! Scale-up planning: for the pods nothing can hold, estimate every node group, let the expander choose,
//! balance across similar groups, and repeat on the pods left until no group helps any more. (Upstream
//! makes one expansion per loop; planning them all at once answers a burst in one loop.)

use crate::autoscaler::group::{Group, Totals, nodes_per_zone};
use crate::autoscaler::quotas::QuotaLimit;
use crate::autoscaler::scaleup::alike;
use crate::autoscaler::scaleup::balance::{balance, claims_fit_on};
use crate::autoscaler::scaleup::estimator::{self as binpack, Demand, Estimate, Stop};
use crate::autoscaler::scaleup::expander::{
    Expander, ExpanderError, ExpansionOption, PriceContext,
};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::autoscaler::scaleup::parallel;
use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::scaleup::statics::Statics;
use crate::autoscaler::status::ScaleUp;
use crate::model::{Pod, PodNames, Resources, ZONE_LABEL};
use crate::simulator::Unfit;
use crate::simulator::{Place, PlaceKind, Topology};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
pub struct ScaleUpPlan {
    pub scale_ups: Vec<ScaleUp>,
    /// Per equivalence group: why each node group cannot take its remaining pods.
    pub reasons: Vec<BTreeMap<String, String>>,
    pub estimate_time: Duration,
}

/// What a scale-up plans with and within, as upstream's ScaleUpOrchestrator holds it: the node groups, the
/// cluster-wide limits, the expander, and the cluster's nodes, cores and memory before any scale-up.
pub struct ScaleUpOrchestrator<'a> {
    pub groups: &'a [Group],
    pub limits: &'a ClusterLimits,
    pub expander: &'a Expander,
    pub totals: Totals,
}

impl ScaleUpOrchestrator<'_> {
    /// Plans scale-ups for `pending`, committing each into `places`/`topology` so later rounds see it. Each
    /// round finds the groups that can help the pods left (`jobs`), estimates them (`estimate`), lets the
    /// expander choose (`choose`) and commits the choice, balanced over similar groups (`commit`); until no
    /// group helps.
    pub fn plan(
        self,
        topology: &mut Topology,
        places: &mut Vec<Place>,
        pending: &mut Pending,
    ) -> Result<ScaleUpPlan, ExpanderError> {
        let ScaleUpOrchestrator {
            groups,
            limits,
            expander,
            totals: cluster,
        } = self;
        let mut planner = Planner {
            groups,
            limits,
            expander,
            statics: Statics::new(groups, &pending.exemplars()),
            planned: vec![0u64; groups.len()],
            totals: cluster,
            // One bound for the loop's whole binpacking: every round, every group's estimate, every ordering.
            deadline: Instant::now() + limits.max_binpacking_duration,
            by_id: BTreeMap::new(),
            result: ScaleUpPlan {
                reasons: vec![BTreeMap::new(); pending.groups.len()],
                ..Default::default()
            },
        };
        loop {
            let open: Vec<usize> = (0..pending.groups.len())
                .filter(|&e| pending.left(e) > 0)
                .collect();
            if open.is_empty() {
                break;
            }
            for &e in &open {
                planner.result.reasons[e].clear();
            }
            let jobs = planner.jobs(&open, pending);
            let options = planner.estimate(jobs, topology, places, pending);
            if options.is_empty() {
                break;
            }
            let (chosen, reason) = planner.choose(options, pending)?;
            planner.commit(chosen, &reason, topology, places, pending);
        }
        let mut result = planner.result;
        for (e, reasons) in result.reasons.iter_mut().enumerate() {
            if pending.left(e) == 0 {
                reasons.clear();
            }
        }
        Ok(result)
    }
}

/// The planner's state across rounds.
struct Planner<'a> {
    groups: &'a [Group],
    limits: &'a ClusterLimits,
    expander: &'a Expander,
    statics: Statics,
    /// Nodes planned so far, per group.
    planned: Vec<u64>,
    /// The cluster's nodes, cores and memory, with what is planned.
    totals: Totals,
    deadline: Instant,
    /// Each scale-up's index in `result`, by group id.
    by_id: BTreeMap<String, usize>,
    result: ScaleUpPlan,
}

/// A group's estimate for some equivalence groups (`members`). Groups that pack alike share one estimate,
/// made for `made_for`; the chosen one is made its group's own when committed ([`alike::adopt`]).
struct ScaleUpCandidate {
    group: usize,
    estimate: Arc<Estimate>,
    made_for: usize,
    members: Arc<[usize]>,
    /// What the pods it places request, and their price when the expander prices pods.
    requests: Resources,
    pods_price: Option<f64>,
}

/// A static class's members this round, and why each other open equivalence group does not fit its
/// templates.
type ClassMembers = (Arc<[usize]>, Vec<(usize, String)>);

/// What an estimate leaves (the members it does not place in full), and what the pods it places request and
/// cost.
type Left = (Vec<usize>, Resources, Option<f64>);

impl Planner<'_> {
    /// The groups that can help the `open` equivalence groups this round, each with the pods it may take and
    /// its limit; why each other group cannot is said for each pod. Groups of one static class share their
    /// members and the reasons the others do not fit, found once.
    fn jobs(&mut self, open: &[usize], pending: &Pending) -> Vec<Job> {
        let mut classes: Vec<Option<ClassMembers>> = vec![None; self.statics.classes()];
        let mut jobs = Vec::new();
        for (gi, group) in self.groups.iter().enumerate() {
            let reasons = &mut self.result.reasons;
            let mut say = |e: usize, why: String| {
                reasons[e].insert(group.id.clone(), why);
            };
            let Some(template) = &group.template else {
                for &e in open {
                    say(e, "the provider has no template node for this group".into());
                }
                continue;
            };
            if let Some(why) = &group.skip {
                for &e in open {
                    say(e, why.clone());
                }
                continue;
            }
            let class = self.statics.class(gi);
            let (members, unfit) = classes[class].get_or_insert_with(|| {
                let mut unfit = Vec::new();
                let members = (open.iter().copied())
                    .filter(|&e| match self.statics.of(e, gi) {
                        Ok(()) => true,
                        Err(why) => {
                            let pod = pending.groups[e].exemplar(pending.pods);
                            unfit.push((e, explain(why, pod, template)));
                            false
                        }
                    })
                    .collect();
                (members, unfit)
            });
            for (e, why) in unfit.iter() {
                say(*e, why.clone());
            }
            if members.is_empty() {
                continue;
            }
            let planned = self.planned[gi];
            let (mut limit, limited_by) =
                node_limit(group, planned, template, self.limits, &self.totals);
            if group.zero_or_max && limit < headroom(group, planned) {
                // All or nothing: a limit that stops short of max stops it altogether.
                limit = 0;
            }
            if limit == 0 {
                for &e in members.iter() {
                    say(e, limited_by.to_string());
                }
                continue;
            }
            jobs.push(Job {
                group: gi,
                class,
                members: members.clone(),
                limit,
                limited_by,
            });
        }
        jobs
    }

    /// Estimates every job, in parallel (they only read the world); the pods an estimate leaves are said.
    /// Returns the estimates that add nodes.
    fn estimate(
        &mut self,
        jobs: Vec<Job>,
        topology: &Topology,
        places: &[Place],
        pending: &Pending,
    ) -> Vec<ScaleUpCandidate> {
        let started = Instant::now();
        let estimates = estimate_all(&jobs, self.groups, topology, places, pending, self.deadline);
        self.result.estimate_time += started.elapsed();
        // What an estimate leaves and asks for depends on it and its members only: found once for the
        // groups sharing it.
        let mut found: Vec<Option<Left>> = vec![None; jobs.len()];
        let mut options = Vec::new();
        for (job, (estimate, by)) in jobs.iter().zip(estimates) {
            let (short, requests, pods_price) = found[by].get_or_insert_with(|| {
                let short = (0..job.members.len())
                    .filter(|&k| estimate.placed[k] < pending.left(job.members[k]))
                    .collect();
                let (requests, pods_price) = asked(&estimate, &job.members, pending, job.group);
                (short, requests, pods_price)
            });
            for &k in short.iter() {
                let why = match (&estimate.unfit[k], estimate.stopped) {
                    (Some(unfit), _) => format!("{unfit} (on a new node)"),
                    (None, Some(Stop::TimeLimit)) => {
                        "binpacking time limit reached (--max-nodegroup-binpacking-duration)".into()
                    }
                    (None, _) => job.limited_by.to_string(),
                };
                let id = self.groups[job.group].id.clone();
                self.result.reasons[job.members[k]].insert(id, why);
            }
            if estimate.node_count() > 0 {
                options.push(ScaleUpCandidate {
                    group: job.group,
                    made_for: jobs[by].group,
                    estimate,
                    members: job.members.clone(),
                    requests: *requests,
                    pods_price: *pods_price,
                });
            }
        }
        options
    }

    /// The expander's choice among the options, and why it was chosen.
    fn choose(
        &self,
        mut options: Vec<ScaleUpCandidate>,
        pending: &Pending,
    ) -> Result<(ScaleUpCandidate, String), ExpanderError> {
        let groups = self.groups;
        let away = at_home(&mut options, pending);
        let expansion: Vec<ExpansionOption> = (options.iter())
            .map(|c| option(&groups[c.group], c, self.planned[c.group]))
            .collect();
        let context = PriceContext {
            cluster_nodes: self.totals.nodes as usize,
            stabilizer: pending.stabilizer,
        };
        let chosen = if expansion.len() == 1 {
            0
        } else {
            self.expander.choose(&expansion, context)?
        };
        let chosen = options.swap_remove(chosen);
        let others: Vec<&str> = (options.iter())
            .map(|c| groups[c.group].id.as_str())
            .collect();
        let mut reason = if others.is_empty() {
            "the only node group that helps".to_string()
        } else {
            let expander = expander_name(self.expander);
            format!("{expander} chose it over {}", others.join(", "))
        };
        if !away.is_empty() {
            let away: Vec<&str> = away.iter().map(|&g| groups[g].id.as_str()).collect();
            let home = "the node group its pods' leaving node was in";
            reason = if others.is_empty() {
                format!("{home}, over {}", away.join(", "))
            } else {
                format!("{home}, over {}; {reason}", away.join(", "))
            };
        }
        Ok((chosen, reason))
    }

    /// Commits the chosen estimate: balanced across similar groups, its nodes handed out in order to the
    /// groups' scale-ups, each with the pods it takes and its zones; the world takes the new nodes.
    fn commit(
        &mut self,
        chosen: ScaleUpCandidate,
        reason: &str,
        topology: &mut Topology,
        places: &mut Vec<Place>,
        pending: &mut Pending,
    ) {
        let groups = self.groups;
        let ScaleUpCandidate {
            group: gi,
            members,
            made_for,
            ..
        } = chosen;
        // The other options are gone, so the estimate is usually this candidate's alone.
        let mut estimate = Arc::try_unwrap(chosen.estimate).unwrap_or_else(|e| (*e).clone());
        if made_for != gi {
            alike::adopt(&mut estimate.nodes, &groups[made_for], &groups[gi]);
        }
        let share = if groups[gi].zero_or_max {
            vec![(gi, headroom(&groups[gi], self.planned[gi]))]
        } else if self.limits.balance_similar_node_groups {
            let statics = &self.statics;
            let schedulable = |e: usize, other: usize| {
                statics.of(e, other).is_ok()
                    && claims_fit_on(pending.groups[e].exemplar(pending.pods), &groups[other])
            };
            balance(gi, &estimate, &members, groups, &self.planned, schedulable)
        } else {
            vec![(gi, estimate.node_count() as u64)]
        };
        let Estimate {
            nodes,
            topology: after,
            ..
        } = estimate;
        *topology = after;
        places.reserve(share.iter().map(|&(_, count)| count as usize).sum());
        let mut nodes = nodes.into_iter();
        for (target, count) in share {
            let group = &groups[target];
            // Sized once: a big scale-up names tens of thousands of pods.
            let mut pods =
                PodNames::with_capacity(members.iter().map(|&e| pending.left(e) as usize).sum());
            let mut zones: BTreeMap<String, u64> = BTreeMap::new();
            // A zero-or-max group gets empty nodes beyond the estimate, up to its max.
            let empty =
                (group.template.iter().cycle()).map(|t| topology.copy(t, PlaceKind::Planned));
            for mut node in nodes.by_ref().chain(empty).take(count as usize) {
                for &(k, n) in &node.contents {
                    let e = members[k];
                    let start = pending.done[e];
                    let these = &pending.groups[e].pods[start..start + n as usize];
                    pods.push_pods(pending.keys, pending.pods, these);
                    pending.done[e] += n as usize;
                }
                node.group = Some(target);
                node.kind = PlaceKind::Planned;
                let zone = node.node.labels.get(ZONE_LABEL);
                if let Some(zone) = zone.filter(|_| !group.zones.is_empty()) {
                    *zones.entry(zone.clone()).or_default() += 1;
                }
                self.totals.add(target, &node.node);
                places.push(node);
            }
            self.planned[target] += count;
            let why = if target == gi && group.zero_or_max {
                format!("{reason} (zeroOrMaxNodeScaling: to its max size)")
            } else if target == gi {
                reason.to_string()
            } else {
                format!("balanced with {} (similar node groups)", groups[gi].id)
            };
            self.add(group, count, pods, zones, why);
        }
    }

    /// `count` nodes of `group` for `pods` into its scale-up (made on its first nodes, with `why`).
    fn add(
        &mut self,
        group: &Group,
        count: u64,
        pods: PodNames,
        zones: BTreeMap<String, u64>,
        why: String,
    ) {
        let scale_ups = &mut self.result.scale_ups;
        let slot = *self.by_id.entry(group.id.clone()).or_insert_with(|| {
            scale_ups.push(ScaleUp {
                node_group: group.id.clone(),
                delta: 0,
                pods: PodNames::default(),
                reason: why,
                zones: BTreeMap::new(),
                error: None,
                replaces: Vec::new(),
                provisioning_request: None,
            });
            scale_ups.len() - 1
        });
        let scale_up = &mut scale_ups[slot];
        scale_up.delta += count;
        scale_up.pods.append(pods);
        for (zone, n) in zones {
            *scale_up.zones.entry(zone).or_default() += n;
        }
    }
}

/// One node group to estimate for some equivalence groups.
struct Job {
    group: usize,
    /// Its static class: jobs of one class have the same members.
    class: usize,
    members: Arc<[usize]>,
    limit: u64,
    limited_by: Limited,
}

/// Runs the jobs' estimates on every core, in order of the jobs; a job whose group packs alike with an
/// earlier job's ([`alike`]) shares that estimate instead of repeating it. Each estimate comes with the
/// index of the job it was made for.
fn estimate_all(
    jobs: &[Job],
    groups: &[Group],
    topology: &Topology,
    places: &[Place],
    pending: &Pending,
    deadline: Instant,
) -> Vec<(Arc<Estimate>, usize)> {
    let per_zone = nodes_per_zone(groups, places);
    let demands = |job: &Job| -> Vec<Demand> {
        (job.members.iter())
            .map(|&e| Demand {
                pod: pending.groups[e].exemplar(pending.pods),
                terms: &pending.terms[e],
                count: pending.left(e),
            })
            .collect()
    };
    let mut first: HashMap<String, usize> = HashMap::new();
    let estimated_by: Vec<usize> = (jobs.iter().enumerate())
        .map(|(i, job)| {
            let (g, zones) = (&groups[job.group], &per_zone[job.group]);
            let key = alike::key(g, job.class, zones, job.limit, topology.keys());
            *first.entry(key).or_insert(i)
        })
        .collect();
    let own: Vec<&Job> = (jobs.iter().enumerate())
        .filter(|&(i, _)| estimated_by[i] == i)
        .map(|(_, job)| job)
        .collect();
    let pods = own.iter().flat_map(|j| j.members.iter());
    let pods: usize = pods.map(|&e| pending.left(e) as usize).sum();
    let estimates = parallel::each(&own, pods, |job| {
        let templates = binpack::Templates {
            zones: groups[job.group].templates(),
            nodes: &per_zone[job.group],
        };
        let limits = binpack::EstimateLimits {
            max_nodes: job.limit,
            deadline: Some(deadline),
        };
        binpack::estimate(topology, places, templates, &demands(job), limits)
    });
    let mut estimates = estimates.into_iter().map(Arc::new);
    let mut out: Vec<(Arc<Estimate>, usize)> = Vec::with_capacity(jobs.len());
    for (i, &by) in estimated_by.iter().enumerate() {
        let estimate = if by == i {
            estimates.next().expect("one estimate per job estimated")
        } else {
            out[by].0.clone()
        };
        out.push((estimate, by));
    }
    out
}

fn expander_name(expander: &Expander) -> String {
    let names: Vec<String> = expander.chain.iter().map(|s| s.to_string()).collect();
    names.join(",")
}

/// A reason with the numbers behind it when it is about room: `Insufficient cpu: the pod requests 64, an
/// empty node has 1780m free after its DaemonSets`, each resource named when several are short.
fn explain(why: &Unfit, pod: &Pod, template: &Place) -> String {
    use crate::k8s::{bytes_quantity, cpu_quantity};
    let Unfit::Insufficient(resources) = why else {
        return why.to_string();
    };
    let amounts = |resource: &str| match resource {
        "pods" => (pod.demand.pods.to_string(), template.free.pods.to_string()),
        "cpu" => (
            cpu_quantity(pod.demand.cpu_millis),
            cpu_quantity(template.free.cpu_millis),
        ),
        "memory" => (
            bytes_quantity(pod.demand.memory_bytes),
            bytes_quantity(template.free.memory_bytes),
        ),
        "ephemeral-storage" => (
            bytes_quantity(pod.demand.ephemeral_storage_bytes),
            bytes_quantity(template.free.ephemeral_storage_bytes),
        ),
        crate::model::GPU_RESOURCE => (pod.demand.gpus.to_string(), template.free.gpus.to_string()),
        other => (
            pod.extended.get(other).copied().unwrap_or(0).to_string(),
            template
                .free_extended
                .get(other)
                .copied()
                .unwrap_or(0)
                .to_string(),
        ),
    };
    let (asked, free) = match resources.as_slice() {
        [one] => amounts(one),
        many => {
            let pairs: Vec<(String, String)> = many
                .iter()
                .map(|r| {
                    let (asked, free) = amounts(r);
                    (format!("{asked} {r}"), format!("{free} {r}"))
                })
                .collect();
            let join = |f: fn(&(String, String)) -> &String| {
                pairs.iter().map(f).cloned().collect::<Vec<_>>().join(", ")
            };
            (join(|p| &p.0), join(|p| &p.1))
        }
    };
    format!("{why}: the pod requests {asked}, an empty node has {free} free after its DaemonSets")
}

#[derive(Clone, Debug)]
pub enum Limited {
    GroupMax,
    PerScaleUp,
    NodesTotal,
    Cores,
    Memory,
    /// A CapacityQuota matching the group's template: upstream's reason with the figures behind it.
    Quota(Box<QuotaLimit>),
}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limited::GroupMax => "max node group size reached",
            Limited::PerScaleUp => "max nodes per scale-up reached (--max-nodes-per-scaleup)",
            Limited::NodesTotal => "max total nodes in cluster reached (--max-nodes-total)",
            Limited::Cores => "max cluster cpu limit reached (--cores-total)",
            Limited::Memory => "max cluster memory limit reached (--memory-total)",
            Limited::Quota(limit) => return limit.fmt(f),
        })
    }
}

/// How many nodes the group may still add before its max size.
fn headroom(group: &Group, planned: u64) -> u64 {
    (i64::from(group.max_size) - i64::from(group.target_size) - planned as i64).max(0) as u64
}

/// The most nodes this group may add now, and which limit that is: the tightest of its max size, the
/// cluster-wide flags and every CapacityQuota matching the template's labels (on a tie, the one first in
/// that order says why).
pub fn node_limit(
    group: &Group,
    planned: u64,
    template: &Place,
    limits: &ClusterLimits,
    totals: &Totals,
) -> (u64, Limited) {
    let mut best = (headroom(group, planned), Limited::GroupMax);
    let mut consider = |n: u64, why: Limited| {
        if n < best.0 {
            best = (n, why);
        }
    };
    // Per group and loop, however many rounds the plan takes.
    consider(
        limits.max_nodes_per_scaleup.saturating_sub(planned),
        Limited::PerScaleUp,
    );
    if limits.max_nodes_total > 0 {
        consider(
            limits.max_nodes_total.saturating_sub(totals.nodes),
            Limited::NodesTotal,
        );
    }
    let capacity = template.node.capacity;
    let cores_left = (limits.max_cores.saturating_mul(1000)).saturating_sub(totals.cpu_millis);
    if let Some(n) = cores_left.checked_div(capacity.cpu_millis) {
        consider(n, Limited::Cores);
    }
    let memory_left =
        (limits.max_memory_gib.saturating_mul(1 << 30)).saturating_sub(totals.memory_bytes);
    if let Some(n) = memory_left.checked_div(capacity.memory_bytes) {
        consider(n, Limited::Memory);
    }
    if let Some(g) = template.group
        && let Some((n, quota)) = totals.quotas.room(g, &template.node)
        && n < best.0
    {
        best = (n, Limited::Quota(Box::new(quota)));
    }
    best
}

/// What the pods `estimate` places for `members` on node group `group` request, and their price when pods
/// are priced (as requesting the GPUs their claims take there, where they take some).
fn asked(
    estimate: &Estimate,
    members: &[usize],
    pending: &Pending,
    group: usize,
) -> (Resources, Option<f64>) {
    let mut requests = Resources::default();
    let mut pods_price = Some(0.0);
    for (k, &e) in members.iter().enumerate() {
        let n = estimate.placed[k];
        requests = requests.plus(pending.groups[e].exemplar(pending.pods).demand.times(n));
        let each = (pending.device_prices.get(&(e, group))).map_or(pending.prices[e], |&p| p);
        pods_price = pods_price
            .zip(each)
            .map(|(sum, each)| sum + each * n as f64);
    }
    (requests, pods_price)
}

/// `candidate` as the expander weighs it; `planned`: the group's nodes this loop planned already (they took
/// its prepaid room first).
fn option(group: &Group, candidate: &ScaleUpCandidate, planned: u64) -> ExpansionOption {
    let node_count = candidate.estimate.node_count() as u64;
    ExpansionOption {
        group_id: group.id.clone(),
        node_count,
        pods: candidate.estimate.pods_placed(),
        requests: candidate.requests,
        capacity: group
            .template
            .as_ref()
            .map(|t| t.node.capacity)
            .unwrap_or_default(),
        node_price: group.node_price,
        pods_price: candidate.pods_price,
        reserved: u64::from(group.prepaid)
            .saturating_sub(planned)
            .min(node_count),
    }
}

/// Keeps, when one exists, only the options whose group is the home group of one of the pods they help
/// (the node group its leaving node was in: issue 60's "the same group when it can take it"); a group backed
/// off is no option at all. Returns the groups left out.
fn at_home(options: &mut Vec<ScaleUpCandidate>, pending: &Pending) -> Vec<usize> {
    if pending.homes.is_empty() {
        return Vec::new();
    }
    let home = |c: &ScaleUpCandidate| c.members.iter().any(|&e| pending.is_home(e, c.group));
    if !options.iter().any(home) {
        return Vec::new();
    }
    let (kept, away): (Vec<_>, Vec<_>) = options.drain(..).partition(home);
    *options = kept;
    away.iter().map(|c| c.group).collect()
}

#[cfg(test)]
mod tests;
