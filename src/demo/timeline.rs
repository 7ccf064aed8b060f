//! What a timeline event does to the simulated cluster and the simulated EKS.

use super::error::DemoError;
use super::leaving;
use super::record::{Arrival, Record};
use super::script::Action;
use crate::cloud::SimulatedEks;
use crate::k8s::Scalable;
use crate::simulated_cluster::SimulatedCluster;
use std::collections::BTreeMap;
use std::time::Duration;

/// What the timeline acts on: the simulated cluster, the simulated EKS, and the Deployments the workloads
/// stand for.
pub(super) struct Targets<'a> {
    pub(super) cluster: &'a SimulatedCluster,
    pub(super) backend: &'a SimulatedEks,
    /// Each workload owned by a ReplicaSet stands for a Deployment of its name, which buffers may follow.
    pub(super) deployments: BTreeMap<String, Scalable>,
}

impl Targets<'_> {
    /// Plays one timeline event at `at`; returns what it did, for the log.
    pub(super) fn apply(
        &mut self,
        action: &Action,
        record: &mut Record,
        at: Duration,
    ) -> Result<String, DemoError> {
        let cluster = self.cluster;
        match action {
            Action::Create(workload, pods) => {
                cluster.create_pods(pods.clone());
                if let Some(pod) = pods.first().filter(|_| workload.owner == "ReplicaSet") {
                    let deployment = Scalable {
                        api_group: "apps".into(),
                        kind: "Deployment".into(),
                        namespace: workload.namespace.clone(),
                        name: workload.name.clone(),
                        replicas: i32::try_from(pods.len()).unwrap_or(i32::MAX),
                        pod: Ok(pod.clone()),
                    };
                    cluster.scale(deployment.clone());
                    self.deployments.insert(workload.name.clone(), deployment);
                }
                record.arrivals.push(Arrival {
                    name: workload.name.clone(),
                    namespace: workload.namespace.clone(),
                    pods: pods.len(),
                    created: at,
                    all_running: None,
                });
                Ok(format!("+{} {} pod(s)", workload.count, workload.name))
            }
            Action::Delete(name) => {
                let prefix = format!("{name}-");
                cluster.delete_pods(|p| p.name.starts_with(&prefix));
                if let Some(deployment) = self.deployments.get_mut(name) {
                    deployment.replicas = 0;
                    cluster.scale(deployment.clone());
                }
                Ok(match cluster.delete_requests(name) {
                    0 => format!("{name} pods deleted"),
                    _ => format!("{name} pods and ProvisioningRequest deleted"),
                })
            }
            Action::Request(read) => {
                cluster.create_request(read.as_ref().clone());
                let request = &read.request;
                let pods: i32 = request.spec.pod_sets.iter().map(|s| s.count).sum();
                Ok(format!(
                    "ProvisioningRequest {} ({}) for {pods} pod(s)",
                    crate::k8s::request_key(request),
                    request.spec.provisioning_class_name
                ))
            }
            Action::Update(update) => {
                let (group, image) = (&update.node_group, &update.image);
                (self.backend)
                    .start_update(group, image, update.duration)
                    .map_err(|e| DemoError::Cloud(e.to_string()))?;
                let took = humantime::format_duration(update.duration);
                Ok(format!("{group} UPDATING to {image} for {took}"))
            }
            Action::Leaving(entry) => leaving::play(entry, self.backend, cluster),
            Action::Capacity(change) => {
                (self.backend)
                    .set_available_capacity(&change.node_group, change.available)
                    .map_err(|e| DemoError::Cloud(e.to_string()))?;
                Ok(match change.available {
                    Some(n) => format!("{} can have {n} instance(s)", change.node_group),
                    None => format!("{} has capacity without limit", change.node_group),
                })
            }
        }
    }
}
