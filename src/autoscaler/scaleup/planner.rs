//! Scale-up planning: for the pods nothing can hold, estimate every node group, let the expander choose,
//! balance across similar groups, and repeat on the pods left until no group helps any more. (Upstream
//! makes one expansion per loop; planning them all at once answers a burst in one loop.)

use crate::autoscaler::group::{Group, Totals, nodes_per_zone};
use crate::autoscaler::scaleup::alike;
use crate::autoscaler::scaleup::balance::balance;
use crate::autoscaler::scaleup::estimator::{self as binpack, Demand, Estimate, Stop};
use crate::autoscaler::scaleup::expander::{
    Expander, ExpanderError, ExpansionOption, PriceContext,
};
use crate::autoscaler::scaleup::parallel;
use crate::autoscaler::scaleup::statics::Statics;
use crate::autoscaler::status::ScaleUp;
use crate::model::PodNames;
use crate::model::node::ZONE_LABEL;
use crate::model::{Pod, PodList, Resources};
use crate::simulator::equivalence::EquivalenceGroup;
use crate::simulator::predicates::Unfit;
use crate::simulator::topology::{Place, PlaceKind, PodTerms, Topology};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The pending pods that need new nodes, as equivalence groups.
pub struct Pending<'a> {
    pub pods: PodList<'a>,
    /// The names of `pods` (all or the first of them) packed when they were read; see [`PodNames::push_pod`].
    pub keys: &'a PodNames,
    pub groups: Vec<EquivalenceGroup>,
    pub terms: Vec<PodTerms>,
    /// Per equivalence group: how many of its pods are already placed (they are taken from the front).
    pub done: Vec<usize>,
    /// Per equivalence group: the price of one pod, when the expander prices options.
    pub prices: Vec<Option<f64>>,
    /// The price of a 500m / 500MiB pod, the price expander's stabilizer.
    pub stabilizer: f64,
}

impl Pending<'_> {
    fn left(&self, g: usize) -> u64 {
        (self.groups[g].pods.len() - self.done[g]) as u64
    }

    /// Each equivalence group's first pod, which stands for it.
    fn exemplars(&self) -> Vec<&Pod> {
        (self.groups.iter())
            .map(|eg| eg.exemplar(self.pods))
            .collect()
    }
}

/// Cluster-wide and per-scale-up limits (cluster-autoscaler's flags).
#[derive(Clone, Debug)]
pub struct Limits {
    /// `--max-nodes-total`; 0 means none.
    pub max_nodes_total: u64,
    /// `--cores-total` max, in cores; `--memory-total` max, in GiB.
    pub max_cores: u64,
    pub max_memory_gib: u64,
    /// `--cores-total` and `--memory-total` min: scale-down stops there.
    pub min_cores: u64,
    pub min_memory_gib: u64,
    pub max_nodes_per_scaleup: u64,
    pub max_binpacking_duration: Duration,
    pub balance_similar_node_groups: bool,
}

impl Default for Limits {
    /// cluster-autoscaler's defaults.
    fn default() -> Limits {
        Limits {
            max_nodes_total: 0,
            max_cores: 320_000,
            max_memory_gib: 6_400_000,
            min_cores: 0,
            min_memory_gib: 0,
            max_nodes_per_scaleup: 1000,
            max_binpacking_duration: Duration::from_secs(10),
            balance_similar_node_groups: false,
        }
    }
}

#[derive(Debug, Default)]
pub struct Plan {
    pub scale_ups: Vec<ScaleUp>,
    /// Per equivalence group: why each node group cannot take its remaining pods.
    pub reasons: Vec<BTreeMap<String, String>>,
    pub estimate_time: Duration,
}

/// Plans scale-ups for `pending`, committing each into `places`/`topology` so later rounds see it. Each round
/// finds the groups that can help the pods left (`jobs`), estimates them (`estimate`), lets the expander
/// choose (`choose`) and commits the choice, balanced over similar groups (`commit`); until no group helps.
pub fn plan(
    topology: &mut Topology,
    places: &mut Vec<Place>,
    groups: &[Group],
    pending: &mut Pending,
    limits: &Limits,
    expander: &Expander,
    cluster: Totals,
) -> Result<Plan, ExpanderError> {
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
        result: Plan {
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

/// The planner's state across rounds.
struct Planner<'a> {
    groups: &'a [Group],
    limits: &'a Limits,
    expander: &'a Expander,
    statics: Statics,
    /// Nodes planned so far, per group.
    planned: Vec<u64>,
    /// The cluster's nodes, cores and memory, with what is planned.
    totals: Totals,
    deadline: Instant,
    /// Each scale-up's index in `result`, by group id.
    by_id: BTreeMap<String, usize>,
    result: Plan,
}

/// A group's estimate for some equivalence groups (`members`). Groups that pack alike share one estimate,
/// made for `made_for`; the chosen one is made its group's own when committed ([`alike::adopt`]).
struct Candidate {
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
                node_limit(group, planned, template, self.limits, self.totals);
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
    ) -> Vec<Candidate> {
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
                let (requests, pods_price) = asked(&estimate, &job.members, pending);
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
                options.push(Candidate {
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
        mut options: Vec<Candidate>,
        pending: &Pending,
    ) -> Result<(Candidate, String), ExpanderError> {
        let groups = self.groups;
        let expansion: Vec<ExpansionOption> = (options.iter())
            .map(|c| option(&groups[c.group], c))
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
        let reason = if others.is_empty() {
            "the only node group that helps".to_string()
        } else {
            let expander = expander_name(self.expander);
            format!("{expander} chose it over {}", others.join(", "))
        };
        Ok((chosen, reason))
    }

    /// Commits the chosen estimate: balanced across similar groups, its nodes handed out in order to the
    /// groups' scale-ups, each with the pods it takes and its zones; the world takes the new nodes.
    fn commit(
        &mut self,
        chosen: Candidate,
        reason: &str,
        topology: &mut Topology,
        places: &mut Vec<Place>,
        pending: &mut Pending,
    ) {
        let groups = self.groups;
        let Candidate {
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
            balance(
                gi,
                &estimate,
                &members,
                groups,
                &self.planned,
                &self.statics,
            )
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
                let capacity = node.node.capacity;
                places.push(node);
                self.totals.nodes += 1;
                self.totals.cpu_millis += capacity.cpu_millis;
                self.totals.memory_bytes += capacity.memory_bytes;
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
        let limits = binpack::Limits {
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
    use crate::k8s::quantity;
    let Unfit::Insufficient(resources) = why else {
        return why.to_string();
    };
    let amounts = |resource: &str| match resource {
        "pods" => (pod.demand.pods.to_string(), template.free.pods.to_string()),
        "cpu" => (
            quantity::cpu(pod.demand.cpu_millis),
            quantity::cpu(template.free.cpu_millis),
        ),
        "memory" => (
            quantity::bytes(pod.demand.memory_bytes),
            quantity::bytes(template.free.memory_bytes),
        ),
        "ephemeral-storage" => (
            quantity::bytes(pod.demand.ephemeral_storage_bytes),
            quantity::bytes(template.free.ephemeral_storage_bytes),
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

#[derive(Clone, Copy, Debug)]
pub enum Limited {
    GroupMax,
    PerScaleUp,
    NodesTotal,
    Cores,
    Memory,
}

impl std::fmt::Display for Limited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Limited::GroupMax => "max node group size reached",
            Limited::PerScaleUp => "max nodes per scale-up reached (--max-nodes-per-scaleup)",
            Limited::NodesTotal => "max total nodes in cluster reached (--max-nodes-total)",
            Limited::Cores => "max cluster cpu limit reached (--cores-total)",
            Limited::Memory => "max cluster memory limit reached (--memory-total)",
        })
    }
}

/// How many nodes the group may still add before its max size.
fn headroom(group: &Group, planned: u64) -> u64 {
    (i64::from(group.max_size) - i64::from(group.target_size) - planned as i64).max(0) as u64
}

/// The most nodes this group may add now, and which limit that is.
pub fn node_limit(
    group: &Group,
    planned: u64,
    template: &Place,
    limits: &Limits,
    totals: Totals,
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
    best
}

/// What the pods `estimate` places for `members` request, and their price when pods are priced.
fn asked(estimate: &Estimate, members: &[usize], pending: &Pending) -> (Resources, Option<f64>) {
    let mut requests = Resources::default();
    let mut pods_price = Some(0.0);
    for (k, &e) in members.iter().enumerate() {
        let n = estimate.placed[k];
        requests = requests.plus(pending.groups[e].exemplar(pending.pods).demand.times(n));
        pods_price = pods_price
            .zip(pending.prices[e])
            .map(|(sum, each)| sum + each * n as f64);
    }
    (requests, pods_price)
}

fn option(group: &Group, candidate: &Candidate) -> ExpansionOption {
    ExpansionOption {
        group_id: group.id.clone(),
        node_count: candidate.estimate.node_count() as u64,
        pods: candidate.estimate.pods_placed(),
        requests: candidate.requests,
        capacity: group
            .template
            .as_ref()
            .map(|t| t.node.capacity)
            .unwrap_or_default(),
        node_price: group.node_price,
        pods_price: candidate.pods_price,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscaler::scaleup::expander::Strategy;
    use crate::model::node::ZONE_LABEL;
    use crate::model::{Node, Pod};
    use crate::simulator::equivalence;
    use std::sync::Arc;

    const GI: u64 = 1 << 30;

    fn template(name: &str, cpu: u64, mem_gi: u64, zone: &str) -> Arc<Node> {
        let allocatable = Resources {
            cpu_millis: cpu,
            memory_bytes: mem_gi * GI,
            pods: 58,
            ..Default::default()
        };
        Arc::new(Node {
            name: name.into(),
            labels: [
                (ZONE_LABEL.to_string(), zone.to_string()),
                ("eks.amazonaws.com/nodegroup".to_string(), name.to_string()),
                ("workload".to_string(), "general".to_string()),
            ]
            .into(),
            capacity: allocatable,
            allocatable,
            ready: true,
            ..Default::default()
        })
    }

    fn pods(n: usize, cpu: u64) -> Vec<Pod> {
        let demand = Resources {
            cpu_millis: cpu,
            memory_bytes: GI,
            pods: 1,
            ..Default::default()
        };
        (0..n)
            .map(|i| Pod::pending("default", &format!("p-{i}"), demand))
            .collect()
    }

    struct Setup {
        topology: Topology,
        groups: Vec<Group>,
        pods: Vec<Pod>,
    }

    fn setup(templates: &[(Arc<Node>, i32, i32)], pods: Vec<Pod>) -> Setup {
        let mut topology = Topology::default();
        let groups = templates
            .iter()
            .enumerate()
            .map(|(i, (node, target, max))| Group {
                id: node.name.clone(),
                min_size: 0,
                max_size: *max,
                target_size: *target,
                template: Some(topology.place(node.clone(), Some(i), PlaceKind::Planned)),
                zones: Vec::new(),
                skip: None,
                node_price: None,
                zero_or_max: false,
            })
            .collect();
        Setup {
            topology,
            groups,
            pods,
        }
    }

    /// `pods` as the planner takes them: in equivalence groups, their terms resolved, none placed yet.
    fn pending<'a>(pods: &'a [Pod], topology: &Topology, keys: &'a PodNames) -> Pending<'a> {
        let groups = equivalence::group(
            pods,
            0..pods.len(),
            &crate::model::pod::LabelProjection::All,
        );
        let terms = (groups.iter())
            .map(|g| topology.resolve(g.exemplar(pods)))
            .collect();
        Pending {
            pods: pods.into(),
            keys,
            done: vec![0; groups.len()],
            prices: vec![None; groups.len()],
            groups,
            terms,
            stabilizer: 0.0,
        }
    }

    fn run(setup: &mut Setup, limits: &Limits, totals: Totals) -> (Plan, Vec<Place>) {
        let keys = PodNames::default();
        let mut pending = pending(&setup.pods, &setup.topology, &keys);
        let expander = Expander {
            chain: vec![Strategy::LeastWaste],
            priorities: None,
        };
        let mut places = Vec::new();
        let plan = plan(
            &mut setup.topology,
            &mut places,
            &setup.groups,
            &mut pending,
            limits,
            &expander,
            totals,
        )
        .unwrap();
        (plan, places)
    }

    fn deltas(plan: &Plan) -> Vec<(String, u64, usize)> {
        plan.scale_ups
            .iter()
            .map(|s| (s.node_group.clone(), s.delta, s.pods.len()))
            .collect()
    }

    #[test]
    fn the_plan_continues_where_the_chosen_group_runs_out() {
        // 10 pods of 1 CPU; "small" (2 CPUs, max 2) wastes least but holds only 2 pods per node ... 4 pods.
        let mut s = setup(
            &[
                (template("small", 2000, 8, "a"), 0, 2),
                (template("big", 8000, 64, "a"), 0, 10),
            ],
            pods(10, 1000),
        );
        let (plan, places) = run(&mut s, &Limits::default(), Totals::default());
        assert_eq!(
            deltas(&plan),
            [("small".into(), 2, 4), ("big".into(), 1, 6)]
        );
        assert_eq!(places.len(), 3, "planned nodes join the world");
        assert!(
            plan.reasons.iter().all(|r| r.is_empty()),
            "every pod helped"
        );
    }

    #[test]
    fn groups_of_one_shape_are_estimated_once_and_each_plans_its_own_nodes() {
        let mut s = setup(
            &[
                (template("team-a", 2000, 8, "a"), 0, 2),
                (template("team-b", 2000, 8, "a"), 0, 2),
                (template("team-c", 2000, 8, "b"), 0, 2),
            ],
            pods(12, 1000),
        );
        // team-a and team-b differ in a label no pod reads; team-c is in another zone, which these pods do
        // not read either. A pod that selects a zone tells team-c apart.
        let terms = s.topology.keys().to_vec();
        let plain = Statics::new(&s.groups, &[&s.pods[0]]);
        assert_eq!(plain.classes(), 1);
        let key = |statics: &Statics, g: usize, terms: &[String]| {
            alike::key(&s.groups[g], statics.class(g), &[0], 2, terms)
        };
        assert_eq!(key(&plain, 0, &terms), key(&plain, 1, &terms));
        assert_eq!(key(&plain, 0, &terms), key(&plain, 2, &terms));
        // A zonal term in the world: its counts are kept by zone.
        let zonal_terms = [ZONE_LABEL.to_string()];
        assert_eq!(key(&plain, 0, &zonal_terms), key(&plain, 1, &zonal_terms));
        assert_ne!(key(&plain, 0, &zonal_terms), key(&plain, 2, &zonal_terms));
        let mut zonal = s.pods[0].clone();
        zonal.scheduling = Arc::new(crate::model::pod::Scheduling {
            node_selector: [(ZONE_LABEL.to_string(), "a".to_string())].into(),
            ..Default::default()
        });
        let selecting = Statics::new(&s.groups, &[&s.pods[0], &zonal]);
        assert_eq!(selecting.class(0), selecting.class(1));
        assert_ne!(selecting.class(0), selecting.class(2));
        assert!(selecting.of(1, 0).is_ok() && selecting.of(1, 2).is_err());
        let (plan, places) = run(&mut s, &Limits::default(), Totals::default());
        // Twelve pods of 1 CPU: six nodes of 2 CPUs, each group's two.
        let mut planned = deltas(&plan);
        planned.sort();
        assert_eq!(
            planned,
            [
                ("team-a".into(), 2, 4),
                ("team-b".into(), 2, 4),
                ("team-c".into(), 2, 4)
            ]
        );
        assert_eq!(places.len(), 6);
        for place in &places {
            assert_eq!(place.node.name, s.groups[place.group.unwrap()].id);
        }

        // team-b adopts team-a's estimate: the same packing, on team-b's own template nodes.
        let s = setup(
            &[
                (template("team-a", 2000, 8, "a"), 0, 2),
                (template("team-b", 2000, 8, "a"), 0, 2),
            ],
            pods(4, 1000),
        );
        let keys = PodNames::default();
        let pending = pending(&s.pods, &s.topology, &keys);
        let job = |group: usize| Job {
            group,
            class: 0,
            members: vec![0].into(),
            limit: 2,
            limited_by: Limited::GroupMax,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        let estimates = estimate_all(
            &[job(0), job(1)],
            &s.groups,
            &s.topology,
            &[],
            &pending,
            deadline,
        );
        let [(a, by_a), (b, by_b)] = &estimates[..] else {
            panic!("one estimate per job")
        };
        assert!(Arc::ptr_eq(a, b), "one estimate, shared");
        assert_eq!((by_a, by_b), (&0, &0));
        assert_eq!((a.node_count(), a.pods_placed()), (2, 4));
        let mut nodes = a.nodes.clone();
        alike::adopt(&mut nodes, &s.groups[0], &s.groups[1]);
        for (made, adopted) in a.nodes.iter().zip(&nodes) {
            assert_eq!(made.node.name, "team-a");
            assert_eq!(adopted.node.name, "team-b");
            assert_eq!(made.contents, adopted.contents);
        }
    }

    #[test]
    fn cluster_limits_cap_nodes_and_say_which() {
        let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
        let limits = Limits {
            max_nodes_total: 5,
            ..Limits::default()
        };
        let existing = Totals {
            nodes: 2,
            cpu_millis: 4000,
            memory_bytes: 16 * GI,
        };
        let (plan, _) = run(&mut s, &limits, existing);
        assert_eq!(deltas(&plan), [("small".into(), 3, 6)]);
        assert_eq!(
            plan.reasons[0]["small"],
            "max total nodes in cluster reached (--max-nodes-total)"
        );
        let limits = Limits {
            max_cores: 9,
            ..Limits::default()
        };
        let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
        let (plan, _) = run(&mut s, &limits, existing);
        assert_eq!(
            deltas(&plan),
            [("small".into(), 2, 4)],
            "9 cores: 4 used, 2 more nodes"
        );
        assert!(plan.reasons[0]["small"].contains("--cores-total"));
        let limits = Limits {
            max_memory_gib: 30,
            ..Limits::default()
        };
        let mut s = setup(&[(template("small", 2000, 8, "a"), 0, 100)], pods(10, 1000));
        let (plan, _) = run(&mut s, &limits, existing);
        assert_eq!(
            deltas(&plan),
            [("small".into(), 1, 2)],
            "30 GiB: 16 used, one 8 GiB node"
        );
        assert!(plan.reasons[0]["small"].contains("--memory-total"));
    }

    #[test]
    fn group_max_and_skips_are_reasons() {
        let mut s = setup(
            &[
                (template("full", 2000, 8, "a"), 3, 3),
                (template("backed-off", 2000, 8, "a"), 0, 3),
            ],
            pods(1, 1000),
        );
        s.groups[1].skip = Some("in backoff after failed scale-up (x)".into());
        let (plan, _) = run(&mut s, &Limits::default(), Totals::default());
        assert!(plan.scale_ups.is_empty());
        assert_eq!(plan.reasons[0]["full"], "max node group size reached");
        assert_eq!(
            plan.reasons[0]["backed-off"],
            "in backoff after failed scale-up (x)"
        );
    }

    #[test]
    fn similar_groups_are_alike_but_for_zone_and_name() {
        use crate::autoscaler::scaleup::balance::similar;
        let mut topology = Topology::default();
        let place = |t: &mut Topology, node| t.place(node, None, PlaceKind::Planned);
        let a = place(&mut topology, template("a", 2000, 8, "us-east-1a"));
        let b = place(&mut topology, template("b", 2000, 8, "us-east-1b"));
        let bigger = place(&mut topology, template("c", 4000, 16, "us-east-1b"));
        assert!(similar(&a, &b));
        assert!(!similar(&a, &bigger));
        let mut other_labels = (*template("d", 2000, 8, "us-east-1a")).clone();
        other_labels
            .labels
            .insert("workload".into(), "batch".into());
        let d = place(&mut topology, Arc::new(other_labels));
        assert!(!similar(&a, &d));
    }

    #[test]
    fn balancing_water_fills_the_smallest_group_first() {
        let mut s = setup(
            &[
                (template("a", 2000, 8, "us-east-1a"), 2, 10),
                (template("b", 2000, 8, "us-east-1b"), 0, 10),
                (template("c", 2000, 8, "us-east-1c"), 1, 2),
            ],
            pods(10, 1000),
        );
        let limits = Limits {
            balance_similar_node_groups: true,
            ..Limits::default()
        };
        let (plan, _) = run(&mut s, &limits, Totals::default());
        // 5 nodes (the three groups tie under least-waste; whichever is chosen, the split is the same):
        // b to 1, b and c to 2 (c is then at its max), then a and b to 3.
        let mut got: Vec<(String, u64)> = plan
            .scale_ups
            .iter()
            .map(|s| (s.node_group.clone(), s.delta))
            .collect();
        got.sort();
        assert_eq!(got, [("a".into(), 1), ("b".into(), 3), ("c".into(), 1)]);
        let total: usize = plan.scale_ups.iter().map(|s| s.pods.len()).sum();
        assert_eq!(total, 10);
    }

    #[test]
    fn zero_or_max_groups_go_to_max_or_not_at_all() {
        let mut s = setup(&[(template("gang", 2000, 8, "a"), 0, 4)], pods(2, 1000));
        s.groups[0].zero_or_max = true;
        let (plan, places) = run(&mut s, &Limits::default(), Totals::default());
        assert_eq!(deltas(&plan), [("gang".into(), 4, 2)]);
        assert_eq!(places.len(), 4, "the empty nodes are planned too");
        assert!(plan.scale_ups[0].reason.contains("zeroOrMaxNodeScaling"));

        let mut s = setup(&[(template("gang", 2000, 8, "a"), 0, 4)], pods(2, 1000));
        s.groups[0].zero_or_max = true;
        let limits = Limits {
            max_nodes_total: 3,
            ..Limits::default()
        };
        let (plan, _) = run(&mut s, &limits, Totals::default());
        assert!(plan.scale_ups.is_empty(), "3 nodes allowed, 4 needed");
        assert_eq!(
            plan.reasons[0]["gang"],
            "max total nodes in cluster reached (--max-nodes-total)"
        );
    }
}
