//! Headroom's and the CapacityBuffers' stage of the loop: the room kept free this loop, as virtual pods (each
//! policy sized on the cluster as it is now, each buffer resolved: the buffer controller's part, done here
//! every loop), and afterwards where those pods ended up: placed in free room, in a scale-up, or unmet, with
//! each buffer's `Provisioning` condition set from that.

use crate::autoscaler::cluster::{self, ClusterSource, ClusterView, StatusNotWritten};
use crate::autoscaler::feature::LoopFeature;
use crate::autoscaler::headroom::buffers::{self, ReadyReplicas, Resolved};
use crate::autoscaler::headroom::policy::{Capacity, Owner, Policy, virtual_pods};
use crate::autoscaler::status::{
    CapacityBufferStatus, ConditionStatus, HeadroomStatus, NoScaleUp, Placed, ScaleUp, Shape,
    Status,
};
use crate::k8s::{CapacityBuffer, bytes_quantity, cpu_quantity};
use crate::model::Pod;
use std::collections::{BTreeMap, HashMap};
use std::time::SystemTime;

/// The room kept free this loop: the virtual pods, and what each policy and buffer asks for.
#[derive(Default)]
pub struct Reserved {
    /// Every policy's and buffer's virtual pods, to be planned after the view's own pods.
    pub pods: Vec<Pod>,
    pub headroom: Vec<HeadroomStatus>,
    pub buffers: Vec<CapacityBufferStatus>,
    /// Each buffer resolved, in the order of `buffers`: its chunk, and the status to write back.
    pub resolved: Vec<Resolved>,
    /// Whether the buffers' `readyReplicas` is reconciled.
    pub ready: ReadyReplicas,
}

/// Where this loop's decisions put a pod: what the outcome is read from.
pub struct DecidedPods<'a> {
    pub placed: &'a [Placed],
    pub scale_up: &'a [ScaleUp],
    pub no_scale_up: &'a [NoScaleUp],
}

/// Reserves the room of every policy (sized on `view`'s nodes) and every CapacityBuffer of `view`, whose
/// `readyReplicas` is reconciled as `ready` says.
pub fn reserve(
    policies: &[Policy],
    view: &ClusterView,
    ready: ReadyReplicas,
    now: SystemTime,
) -> Reserved {
    let mut reserved = Reserved {
        ready,
        ..Reserved::default()
    };
    for policy in policies {
        let capacity = Capacity::of(&view.nodes, policy.node_group.as_deref());
        let count = policy.reserved(&capacity);
        reserved.pods.extend(policy.pods(count));
        reserved.headroom.push(HeadroomStatus {
            policy: policy.name.clone(),
            node_group: policy.node_group.clone(),
            shape: policy.describe_shape(),
            reserved: count,
            placed: 0,
            scale_up: 0,
            unmet: 0,
        });
    }
    for read in &view.buffers.buffers {
        let resolved = buffers::resolve(read, &view.buffers, now);
        let owner = Owner::Buffer {
            namespace: resolved.namespace.clone(),
            name: resolved.name.clone(),
        };
        if let Some(chunk) = &resolved.chunk {
            reserved
                .pods
                .extend(virtual_pods(&owner, chunk, resolved.reserved()));
        }
        reserved.buffers.push(CapacityBufferStatus {
            name: resolved.name.clone(),
            namespace: resolved.namespace.clone(),
            desired_chunks: resolved.chunks,
            chunk: resolved.chunk.as_ref().map(|c| Shape {
                cpu: cpu_quantity(c.demand.cpu_millis),
                memory: bytes_quantity(c.demand.memory_bytes),
            }),
            in_free_room: 0,
            ready_replicas: None,
            in_scale_up: 0,
            unmet: 0,
            unmet_reasons: BTreeMap::new(),
            conditions: Vec::new(),
        });
        reserved.resolved.push(resolved);
    }
    reserved
}

/// Where one owner's virtual pods went: placed, in a scale-up, unmet (with the first unmet one's reasons).
#[derive(Default)]
struct Count<'a> {
    placed: usize,
    /// Of those placed, how many on nodes the cluster has (not upcoming ones).
    on_nodes: usize,
    scale_up: usize,
    unmet: usize,
    why: Option<&'a NoScaleUp>,
}

impl Reserved {
    /// Where each policy's and buffer's virtual pods ended up this loop, and each buffer's `Provisioning`
    /// condition (and `readyReplicas`, when `ready` says so); the buffers whose status changed are the ones to
    /// write back.
    pub fn outcome(mut self, decided: DecidedPods<'_>, now: SystemTime) -> Reserved {
        let ready = self.ready;
        if self.headroom.is_empty() && self.buffers.is_empty() {
            return self;
        }
        let mut counts = count(&decided);
        let mut count_of = |owner: Owner| counts.remove(&owner).unwrap_or_default();
        for h in &mut self.headroom {
            let c = count_of(Owner::Policy(h.policy.clone()));
            (h.placed, h.scale_up, h.unmet) = (c.placed, c.scale_up, c.unmet);
        }
        for (b, resolved) in self.buffers.iter_mut().zip(&mut self.resolved) {
            let c = count_of(Owner::Buffer {
                namespace: b.namespace.clone(),
                name: b.name.clone(),
            });
            (b.in_free_room, b.in_scale_up, b.unmet) = (c.placed, c.scale_up, c.unmet);
            if let Some(why) = c.why {
                b.unmet_reasons = why.reasons.clone();
            }
            let why = c.why.map(NoScaleUp::describe_reasons);
            resolved.provisioned(c.unmet, why.as_deref(), now);
            if ready == ReadyReplicas::Reconciled {
                resolved.set_ready_replicas(c.on_nodes);
            }
            b.ready_replicas = resolved.status.ready_replicas;
            b.conditions = (resolved.status.conditions.iter())
                .map(ConditionStatus::from)
                .collect();
        }
        self
    }
}

/// One pass over the decisions, by owner.
fn count<'a>(decided: &DecidedPods<'a>) -> HashMap<Owner, Count<'a>> {
    let mut counts: HashMap<Owner, Count> = HashMap::new();
    for p in decided.placed {
        if let Some(owner) = Owner::of(&p.pod) {
            let c = counts.entry(owner).or_default();
            c.placed += 1;
            c.on_nodes += usize::from(p.on_existing_node());
        }
    }
    for pod in decided.scale_up.iter().flat_map(|s| s.pods.iter()) {
        if let Some(owner) = Owner::of(pod) {
            counts.entry(owner).or_default().scale_up += 1;
        }
    }
    for n in decided.no_scale_up {
        if let Some(owner) = Owner::of(&n.pod) {
            let c = counts.entry(owner).or_default();
            c.unmet += 1;
            c.why.get_or_insert(n);
        }
    }
    counts
}

/// Headroom and the CapacityBuffers join the loop as one feature: their virtual pods first, and afterwards
/// where they went, in the report and in each buffer's status.
#[async_trait::async_trait]
impl LoopFeature for Reserved {
    fn add_pods(&mut self, extra: &mut Vec<Pod>, _first: usize) {
        extra.append(&mut self.pods);
    }

    fn report(&mut self, status: &mut Status, now: SystemTime) {
        let decided = DecidedPods {
            placed: &status.placed,
            scale_up: &status.scale_up,
            no_scale_up: &status.no_scale_up,
        };
        *self = std::mem::take(self).outcome(decided, now);
        status.headroom = std::mem::take(&mut self.headroom);
        status.capacity_buffers = std::mem::take(&mut self.buffers);
    }

    async fn write_back(&self, cluster: &dyn ClusterSource) -> Vec<StatusNotWritten> {
        write_statuses(cluster, &self.resolved).await
    }
}

/// Writes each CapacityBuffer's status where it changed (the buffer controller's and the autoscaler's
/// conditions at once); returns the buffers whose status could not be written.
pub async fn write_statuses(
    cluster: &dyn ClusterSource,
    resolved: &[Resolved],
) -> Vec<StatusNotWritten> {
    let changed = resolved.iter().filter(|r| r.changed());
    let writes: Vec<_> = changed.map(Resolved::written).collect();
    cluster::write_statuses::<CapacityBuffer>(cluster, writes).await
}
