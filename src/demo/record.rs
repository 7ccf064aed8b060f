//! What the demo saw, loop by loop: samples for the charts, the decision log, and what the summary needs.

use super::marks::Marks;
use crate::autoscaler::ClusterView;
use crate::autoscaler::headroom;
use crate::autoscaler::status::Status;
use crate::model::{FARGATE_SCHEDULER, NODE_GROUP_LABEL};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// One moment of the day.
#[derive(Clone, Debug)]
pub struct Sample {
    pub at: Duration,
    /// Registered nodes per node group, in the groups' order.
    pub nodes: Vec<usize>,
    /// Pods waiting for a node (Fargate pods excluded).
    pub pending: usize,
    /// Requested over allocatable cpu on the EC2 nodes.
    pub utilization: f64,
    /// Dollars per hour.
    pub ec2_cost: f64,
    pub fargate_cost: f64,
    /// CapacityBuffer chunks asked for, and of those, how many found free room.
    pub buffer_chunks: usize,
    pub buffer_free: usize,
}

/// A line of the decision log.
#[derive(Clone, Debug)]
pub struct Entry {
    pub at: Duration,
    pub kind: &'static str,
    pub text: String,
}

/// A workload the timeline created, and when all of its pods were running.
#[derive(Clone, Debug)]
pub struct Arrival {
    pub name: String,
    pub namespace: String,
    pub pods: usize,
    pub created: Duration,
    pub all_running: Option<Duration>,
}

/// A replacement consolidation launched, and how it ended, if it has.
#[derive(Clone, Debug)]
pub struct Replaced {
    pub at: Duration,
    pub nodes: Vec<String>,
    /// What it replaces with what (`Consolidation::describe`).
    pub what: String,
    /// When it ended, its last state (`done`, `abandoned`, `failed`) and why.
    pub ended: Option<(Duration, String, String)>,
}

#[derive(Clone, Debug)]
pub struct FargateRun {
    pub pod: String,
    pub profile: String,
    pub capacity: String,
    pub hourly_price: f64,
}

#[derive(Debug, Default)]
pub struct Record {
    pub groups: Vec<String>,
    /// Price per hour of a node of each group.
    pub prices: Vec<f64>,
    pub samples: Vec<Sample>,
    pub log: Vec<Entry>,
    pub added: Vec<u64>,
    pub removed: Vec<u64>,
    pub arrivals: Vec<Arrival>,
    /// Pods ever seen running on an EC2 node.
    pub ran_on_ec2: BTreeSet<String>,
    pub fargate: BTreeMap<String, FargateRun>,
    /// Replacements launched by consolidation, in order.
    pub replacements: Vec<Replaced>,
    /// Why each pod still pending was not helped, as of the last loop that said so.
    pub not_helped: BTreeMap<String, BTreeMap<String, String>>,
    /// Each loop's decision time (ms).
    pub loop_ms: Vec<f64>,
    /// Headroom reserved and where it stands, from the last loop.
    pub headroom: Vec<crate::autoscaler::status::HeadroomStatus>,
    /// CapacityBuffers and where their chunks stand, from the last loop.
    pub capacity_buffers: Vec<crate::autoscaler::status::CapacityBufferStatus>,
    /// Chunks each buffer asked for when it last changed, by `namespace/name`.
    buffer_chunks: BTreeMap<String, u32>,
    /// ProvisioningRequests and where they stand, from the last loop.
    pub provisioning_requests: Vec<crate::autoscaler::status::ProvisioningRequestStatus>,
    /// Nodes held by disruption budgets or node group updates, and expired or drifted nodes acted on.
    pub marks: Marks,
    /// Where the companion's predicates placed a pod the simulated cluster's plain scheduler refused (or
    /// found no node for one it bound), each once: none when the two agree.
    pub disagreements: Vec<String>,
}

impl Record {
    pub fn new(groups: Vec<String>, prices: Vec<f64>) -> Record {
        Record {
            added: vec![0; groups.len()],
            removed: vec![0; groups.len()],
            groups,
            prices,
            ..Record::default()
        }
    }

    pub fn say(&mut self, at: Duration, kind: &'static str, text: String) -> &Entry {
        self.log.push(Entry { at, kind, text });
        self.log.last().expect("just pushed")
    }

    /// Takes in one loop: the cluster it saw and what it decided. Returns the log lines it added.
    pub fn observe(&mut self, at: Duration, view: &ClusterView, status: &Status) -> Vec<Entry> {
        let first = self.log.len();
        self.scale_ups(at, status);
        self.removals(at, status);
        self.consolidations(at, status);
        self.fargate_runs(at, status);
        self.not_helped(at, status);
        for e in &status.errors {
            self.say(at, "error", e.to_string());
        }
        self.buffers(at, status);
        self.requests(at, status);
        for (kind, text) in self.marks.observe(at, status) {
            self.say(at, kind, text);
        }
        self.headroom = status.headroom.clone();
        self.capacity_buffers = status.capacity_buffers.clone();
        self.loop_ms.push(status.times.elapsed_ms);
        self.sample(at, view, status);
        self.log[first..].to_vec()
    }

    fn group_index(&self, id: &str) -> Option<usize> {
        self.groups.iter().position(|g| g == id)
    }

    /// Each scale-up, counted as nodes added to its group, or its failure.
    fn scale_ups(&mut self, at: Duration, status: &Status) {
        for s in &status.scale_up {
            let Some(g) = self.group_index(&s.node_group) else {
                continue;
            };
            match &s.error {
                None => {
                    self.added[g] += s.delta;
                    let text = format!(
                        "{} +{} node(s) for {} pod(s): {}",
                        s.node_group,
                        s.delta,
                        s.pods.len(),
                        s.reason
                    );
                    self.say(at, "scale-up", text);
                }
                Some(error) => {
                    let text = format!("{} +{}: {error}", s.node_group, s.delta);
                    self.say(at, "scale-up failed", text);
                }
            }
        }
    }

    /// Each node scale-down chose, and each deletion that ended (counted as a node removed from its group).
    fn removals(&mut self, at: Duration, status: &Status) {
        for s in &status.scale_down.nodes {
            let text = format!("{} ({}): {}; {}", s.node, s.node_group, s.reason, s.detail);
            self.say(at, "scale-down", text);
        }
        for d in &status.scale_down.deletions {
            match d.state.as_str() {
                "deleted" => {
                    if let Some(g) = self.group_index(&d.node_group) {
                        self.removed[g] += 1;
                    }
                    let text = format!("{} ({}) deleted", d.node, d.node_group);
                    self.say(at, "node removed", text);
                }
                "failed" => {
                    let text = format!("{} ({}): {}", d.node, d.node_group, d.detail);
                    self.say(at, "scale-down failed", text);
                }
                _ => {}
            }
        }
    }

    /// Each replacement launched, and how each ended; the log says launches and the replacements' steps.
    fn consolidations(&mut self, at: Duration, status: &Status) {
        for c in status
            .scale_down
            .consolidation
            .iter()
            .filter(|c| c.error.is_none())
        {
            self.replacements.push(Replaced {
                at,
                nodes: c.nodes.clone(),
                what: c.describe(),
                ended: None,
            });
        }
        for r in &status.scale_down.replacements {
            if !matches!(r.state.as_str(), "done" | "abandoned" | "failed") {
                continue;
            }
            let open = (self.replacements.iter_mut().rev())
                .find(|p| p.ended.is_none() && p.nodes == r.nodes);
            if let Some(open) = open {
                open.ended = Some((at, r.state.clone(), r.detail.clone()));
            }
        }
        for c in &status.scale_down.consolidation {
            self.say(
                at,
                "consolidation",
                format!("{}{}", c.describe(), c.failure()),
            );
        }
        let steps = (status.scale_down.replacements.iter())
            .filter(|r| r.state != "launching" && r.state != "draining");
        for r in steps {
            let text = format!(
                "{} -> {}: {} {}",
                r.nodes.join(", "),
                r.node_group,
                r.state,
                r.detail
            );
            self.say(at, "replacement", text);
        }
    }

    /// Each pod that went to Fargate, once.
    fn fargate_runs(&mut self, at: Duration, status: &Status) {
        for f in &status.fargate {
            if f.profile.is_empty() || self.fargate.contains_key(&f.pod) {
                continue;
            }
            let run = FargateRun {
                pod: f.pod.clone(),
                profile: f.profile.clone(),
                capacity: f.capacity_provisioned.clone(),
                hourly_price: f.hourly_price,
            };
            let text = format!(
                "{} -> profile {}, {}, ${:.4}/h",
                run.pod, run.profile, run.capacity, run.hourly_price
            );
            self.fargate.insert(f.pod.clone(), run);
            self.say(at, "fargate", text);
        }
    }

    /// Pods no group helps, said when a pod's reasons change, not every loop; pods with the same reasons in
    /// one line.
    fn not_helped(&mut self, at: Duration, status: &Status) {
        let mut changed: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for n in &status.no_scale_up {
            let fresh = self.not_helped.get(&n.pod) != Some(&n.reasons);
            self.not_helped.insert(n.pod.clone(), n.reasons.clone());
            if fresh && !headroom::is_virtual(&n.pod) {
                changed
                    .entry(n.describe_reasons())
                    .or_default()
                    .push(&n.pod);
            }
        }
        for (why, pods) in changed {
            let who = match pods.as_slice() {
                [one] => one.to_string(),
                [first, rest @ ..] => format!("{first} and {} more", rest.len()),
                [] => continue,
            };
            self.say(at, "no scale-up", format!("{who}: {why}"));
        }
    }

    /// A buffer's size, said when it changes (a scalable object it follows scaled), not every loop.
    fn buffers(&mut self, at: Duration, status: &Status) {
        for b in &status.capacity_buffers {
            let key = format!("{}/{}", b.namespace, b.name);
            if self.buffer_chunks.insert(key.clone(), b.desired_chunks) != Some(b.desired_chunks) {
                let shape = (b.chunk.as_ref())
                    .map_or(String::new(), |c| format!(" of {}/{}", c.cpu, c.memory));
                let text = format!("{key}: {} chunk(s){shape}", b.desired_chunks);
                self.say(at, "capacity buffer", text);
            }
        }
    }

    /// A ProvisioningRequest's status, said when this loop changed it: the moment it was refused, provisioned
    /// (with the all-or-nothing scale-up made for it), its booking ended, or it failed.
    fn requests(&mut self, at: Duration, status: &Status) {
        for r in status.provisioning_requests.iter().filter(|r| r.changed) {
            let Some(c) = r.deciding() else { continue };
            let mut text = format!("{}: {} ({})", r.name, r.state(), c.reason);
            for s in &r.scale_up {
                text.push_str(&format!(", {} +{} all or nothing", s.node_group, s.delta));
            }
            if c.status != "True" || r.state() == "failed" {
                text.push_str(&format!(": {}", c.message));
            }
            self.say(at, "provisioning req", text);
        }
        self.provisioning_requests = status.provisioning_requests.clone();
    }

    /// From when on nodes and pending pods stayed as they ended.
    pub fn steady_after(&self) -> Duration {
        let Some(last) = self.samples.last() else {
            return Duration::ZERO;
        };
        let changed =
            (self.samples.iter()).rposition(|s| s.nodes != last.nodes || s.pending != last.pending);
        match changed {
            Some(i) => self.samples[i + 1].at,
            None => self.samples[0].at,
        }
    }

    /// What the day cost: each loop's price per hour over one scan interval (`interval`).
    pub fn cost(&self, interval: Duration) -> f64 {
        let hours = interval.as_secs_f64() / 3600.0;
        (self.samples.iter())
            .map(|s| (s.ec2_cost + s.fargate_cost) * hours)
            .sum()
    }

    fn sample(&mut self, at: Duration, view: &ClusterView, status: &Status) {
        let mut nodes = vec![0; self.groups.len()];
        let mut allocatable = 0u64;
        let mut ec2_cost = 0.0;
        let mut ec2_nodes = BTreeSet::new();
        for node in view.nodes.iter() {
            let Some(g) = node
                .labels
                .get(NODE_GROUP_LABEL)
                .and_then(|id| self.groups.iter().position(|g| g == id))
            else {
                continue;
            };
            nodes[g] += 1;
            allocatable += node.allocatable.cpu_millis;
            ec2_cost += self.prices[g];
            ec2_nodes.insert(node.name.as_str());
        }
        let mut requested = 0u64;
        let mut pending = 0;
        let mut fargate_cost = 0.0;
        for pod in &view.pods {
            let key = pod.key();
            match pod.node_name.as_deref() {
                Some(node) if ec2_nodes.contains(node) => {
                    requested += pod.demand.cpu_millis;
                    self.ran_on_ec2.insert(key);
                }
                Some(_) => {
                    if let Some(run) = self.fargate.get(&key) {
                        fargate_cost += run.hourly_price;
                    }
                }
                None if pod.scheduler_name != FARGATE_SCHEDULER => pending += 1,
                None => {}
            }
            if pod.node_name.is_some() {
                self.not_helped.remove(&pod.key());
            }
        }
        for arrival in &mut self.arrivals {
            if arrival.all_running.is_some() || at < arrival.created {
                continue;
            }
            let prefix = format!("{}-", arrival.name);
            let mine: Vec<_> = view
                .pods
                .iter()
                .filter(|p| *p.namespace == *arrival.namespace && p.name.starts_with(&prefix))
                .collect();
            if !mine.is_empty() && mine.iter().all(|p| p.node_name.is_some()) {
                arrival.all_running = Some(at);
            }
        }
        self.samples.push(Sample {
            at,
            nodes,
            pending,
            utilization: if allocatable == 0 {
                0.0
            } else {
                requested as f64 / allocatable as f64
            },
            ec2_cost,
            fargate_cost,
            buffer_chunks: status
                .capacity_buffers
                .iter()
                .map(|b| b.desired_chunks as usize)
                .sum(),
            buffer_free: status.capacity_buffers.iter().map(|b| b.in_free_room).sum(),
        });
    }
}
