//! The ProvisioningRequests' stage of the loop: the requests read (with how many of their consuming pods
//! run), their virtual pods after the loop's other pods, the consuming pods set aside from scale-up, and at
//! the end each request's status as `simulate` prints it and the API server gets it.

use crate::autoscaler::cluster::{
    self, ClusterSource, ClusterView, RequestStatus, StatusNotWritten,
};
use crate::autoscaler::clustersnapshot::snapshot::ClusterSnapshot;
use crate::autoscaler::degradation::BatchingBudget;
use crate::autoscaler::feature::LoopFeature;
use crate::autoscaler::group::Group;
use crate::autoscaler::provreq::requests::{self, Request, Want};
use crate::autoscaler::status::{
    ConditionStatus, ProvisioningRequestStatus, RequestScaleUp, Status,
};
use crate::k8s::ProvisioningRequest;
use crate::model::{LabelProjection, Pod, PodList};
use crate::simulator::{EquivalenceGroup, group_pods};
use std::collections::HashMap;
use std::ops::Range;
use std::time::SystemTime;

/// This loop's requests, and where their pods are in the loop's pod list.
#[derive(Default)]
pub struct Requests {
    pub list: Vec<Request>,
    /// Each request's virtual pods, as indices of the loop's pod list: they follow one another, after every
    /// other pod of the loop.
    ranges: Vec<Range<usize>>,
    /// Each request's consuming pods that wait for a place, by `namespace/name`.
    waiting: Vec<Vec<String>>,
    /// Each request's scale-ups this loop.
    pub scale_ups: Vec<Vec<RequestScaleUp>>,
    /// The index of each active request, by `namespace/name`.
    active: HashMap<String, usize>,
}

/// Reads the view's requests at `now`.
pub fn read(view: &ClusterView, now: SystemTime) -> Requests {
    if view.requests.requests.is_empty() {
        return Requests::default();
    }
    // A consuming pod on a node has taken its room, running or finished: a finished one's room is not
    // booked again.
    let mut running: HashMap<String, u32> = HashMap::new();
    for pod in view.pods.iter().filter(|p| p.node_name.is_some()) {
        if let Some(request) = &pod.consumes {
            *running
                .entry(format!("{}/{request}", pod.namespace))
                .or_default() += 1;
        }
    }
    let running = |key: &str| running.get(key).copied().unwrap_or(0);
    let list = requests::read(
        &view.requests.requests,
        &view.requests.templates,
        running,
        now,
    );
    let active = (list.iter().enumerate())
        .filter(|(_, r)| r.active())
        .map(|(i, r)| (r.key(), i))
        .collect();
    Requests {
        ranges: vec![0..0; list.len()],
        waiting: vec![Vec::new(); list.len()],
        scale_ups: vec![Vec::new(); list.len()],
        list,
        active,
    }
}

impl Requests {
    /// Appends every request's virtual pods to `extra`, whose first pod is the loop's pod `first`.
    pub fn add_pods(&mut self, extra: &mut Vec<Pod>, first: usize) {
        for (r, range) in self.list.iter().zip(&mut self.ranges) {
            let start = first + extra.len();
            extra.extend(r.virtual_pods());
            *range = start..first + extra.len();
        }
    }

    /// Takes the requests' virtual pods and the pods that consume an active request out of `to_help`:
    /// neither is scale-up's to help. The consuming pods are said with their request.
    pub fn set_aside(&mut self, to_help: &mut Vec<usize>, pods: PodList<'_>) {
        // The first request's range starts where the virtual pods start.
        let Some(first) = self.ranges.first().map(|r| r.start) else {
            return;
        };
        to_help.retain(|&i| {
            if i >= first {
                return false;
            }
            let pod = &pods[i];
            let Some(request) = &pod.consumes else {
                return true;
            };
            match self.active.get(&format!("{}/{request}", pod.namespace)) {
                Some(&r) => {
                    self.waiting[r].push(pod.key());
                    false
                }
                None => true,
            }
        });
    }

    /// Each request's virtual pods in equivalence groups, booked and sought alike.
    pub fn groups(
        &self,
        pods: PodList<'_>,
        projection: &LabelProjection,
    ) -> Vec<Vec<EquivalenceGroup>> {
        (self.ranges.iter())
            .map(|range| group_pods(pods, range.clone(), projection))
            .collect()
    }

    /// Holds each provisioned request's booked room in `snapshot`, before any pending pod is placed: it was
    /// promised first. A request whose booked pods no longer all fit (its nodes are gone, an all-or-nothing
    /// increase was set back) is not provisioned any more, and is tried again next loop.
    pub fn hold_booked(
        &mut self,
        snapshot: &mut ClusterSnapshot,
        pods: PodList<'_>,
        asked: &[Vec<EquivalenceGroup>],
        groups: &[Group],
        now: SystemTime,
    ) {
        for (r, asked) in self.list.iter_mut().zip(asked) {
            let Want::Book(n) = r.want else { continue };
            let fitted =
                snapshot.place_pending(pods, asked, groups, &mut BatchingBudget::unlimited());
            let held: usize = fitted.done.iter().sum();
            if held < n as usize {
                let why = format!(
                    "{} of its {n} booked pods lost their room.",
                    n as usize - held
                );
                r.not_provisioned(&why, now);
            }
        }
    }

    /// Each request as `simulate` prints it.
    pub fn statuses(&self) -> Vec<ProvisioningRequestStatus> {
        (self.list.iter().enumerate())
            .map(|(i, r)| ProvisioningRequestStatus {
                name: r.key(),
                class: r.class.name().into(),
                pods: r.asked,
                booked: match r.want {
                    Want::Book(n) => n,
                    _ => 0,
                },
                conditions: (r.status.conditions.iter())
                    .map(ConditionStatus::from)
                    .collect(),
                scale_up: self.scale_ups[i].clone(),
                consuming_pods: self.waiting[i].clone(),
                changed: r.changed(),
            })
            .collect()
    }

    /// The statuses that changed this loop, to write back.
    pub fn written(&self) -> impl Iterator<Item = RequestStatus<'_>> {
        (self.list.iter().filter(|r| r.changed())).map(|r| RequestStatus {
            namespace: &r.namespace,
            name: &r.name,
            version: r.version,
            status: &r.status,
        })
    }
}

/// The ProvisioningRequests join the loop as a feature: their virtual pods after headroom's, and at the end
/// each request's status in the report and written back. (Their own stages, the consuming pods set aside,
/// the booked room held and the requests provisioned, run between.)
#[async_trait::async_trait]
impl LoopFeature for Requests {
    fn add_pods(&mut self, extra: &mut Vec<Pod>, first: usize) {
        Requests::add_pods(self, extra, first);
    }

    fn report(&mut self, status: &mut Status, _now: SystemTime) {
        status.provisioning_requests = self.statuses();
    }

    async fn write_back(&self, cluster: &dyn ClusterSource) -> Vec<StatusNotWritten> {
        write_statuses(cluster, self).await
    }
}

/// Writes each ProvisioningRequest's status where it changed; returns the ones not written.
pub async fn write_statuses(
    cluster: &dyn ClusterSource,
    requests: &Requests,
) -> Vec<StatusNotWritten> {
    let writes: Vec<_> = requests.written().collect();
    cluster::write_statuses::<ProvisioningRequest>(cluster, writes).await
}
