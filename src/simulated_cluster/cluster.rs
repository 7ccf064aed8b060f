//! A simulated cluster over any externalgrpc provider, read through its own provider client (the way
//! kubelets and the cloud controller learn about instances: from the cloud, not from the autoscaler).

use super::claims;
use super::fargate::run_on_fargate;
use super::names;
use super::plain::Disagreement;
use super::scheduler::{preempt, schedule};
use crate::autoscaler::{
    BufferStatus, ClusterError, ClusterSource, ClusterView, QuotaStatusWrite, RequestStatus,
};
use crate::autoscaler::{ClientError, ProviderClient, ProviderConfig};
use crate::clock::Clock;
use crate::k8s::{
    BufferObjects, RequestObjects, Scalable, Template, VersionedBuffer, VersionedRequest,
    node_from_pb, pod_to_pb_bytes, read_quota_status, request_key,
};
use crate::model::{
    CapacityQuota, ClaimSource, ClaimTemplate, DeviceClass, DraObjects, FARGATE_SCHEDULER,
    HOSTNAME_LABEL, InstanceState, LabelSelector, Node, NodeProblem, Pdb, Phase, Pod, PodNames,
    ResourceClaim, Taint, ZONE_LABEL,
};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

pub struct SimulatedCluster {
    client: ProviderClient,
    on_disagreement: OnDisagreement,
    clock: Clock,
    /// The wall-clock time the simulated clock's zero stands for.
    epoch: SystemTime,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    nodes: Vec<Arc<Node>>,
    pods: Vec<Pod>,
    budgets: Vec<Budget>,
    /// The provider's answer for each Fargate-bound pod (its profile, or none), asked once per pod.
    fargate: HashMap<String, Option<String>>,
    /// Node groups whose instances fail to become working nodes, by group id.
    broken: HashMap<String, Broken>,
    /// CapacityBuffers (with the status last written) and what they name.
    buffers: BufferObjects,
    /// ProvisioningRequests, with the status last written (the PodTemplates they name are the buffers').
    requests: Vec<VersionedRequest>,
    /// CapacityQuotas, with the status last written.
    quotas: Vec<CapacityQuota>,
    /// `config.yaml` of the ConfigMap `ekscale-disruption`, when there is one.
    disruption_config: Option<Arc<str>>,
    /// DeviceClasses and claim templates as created, claims the claim controller made, slices nodes publish.
    dra: DraObjects,
    /// Counts the uids and claim names made, as the API server generates them.
    serial: u64,
    /// Where the companion's predicates and the plain scheduler disagreed, each once.
    disagreements: Vec<Disagreement>,
}

/// What a disagreement between the companion's predicates and the plain scheduler does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDisagreement {
    /// It is kept, for [`SimulatedCluster::disagreements`] (the demo counts them).
    Count,
    /// The step panics, naming it: what tests run with, so that one fails the test where it happens.
    Panic,
}

/// How a node group's instances fail to become nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Broken {
    /// They run but kubelet never registers them (a bootstrap script that fails, a wrong cluster endpoint).
    NeverRegister,
    /// Their nodes register but never turn Ready (a broken AMI, a CNI that never starts).
    NeverReady,
}

/// A PodDisruptionBudget with `maxUnavailable`: the API server allows that many of its pods not running.
#[derive(Clone, Debug)]
pub struct Budget {
    pub namespace: String,
    pub name: String,
    pub selector: LabelSelector,
    pub max_unavailable: i32,
}

impl State {
    /// Pod `i` leaves its node: a controller's pod is made again, pending; any other is gone.
    fn leave(&mut self, i: usize) {
        claims::release(&mut self.dra, &self.pods[i]);
        if self.pods[i].controller.is_some() {
            let pod = &mut self.pods[i];
            pod.node_name = None;
            pod.phase = Phase::Pending;
            pod.unschedulable = false;
            renew(pod, &mut self.serial);
        } else {
            self.pods.remove(i);
        }
    }

    /// The budgets with `disruptionsAllowed` as the disruption controller computes it now.
    fn pdbs(&self) -> Vec<Pdb> {
        self.budgets
            .iter()
            .map(|b| {
                let pdb = Pdb {
                    namespace: b.namespace.clone(),
                    name: b.name.clone(),
                    selector: Some(b.selector.clone()),
                    disruptions_allowed: 0,
                };
                let unavailable = self
                    .pods
                    .iter()
                    .filter(|p| pdb.covers(&p.namespace, &p.labels) && p.node_name.is_none())
                    .count() as i32;
                Pdb {
                    disruptions_allowed: (b.max_unavailable - unavailable).max(0),
                    ..pdb
                }
            })
            .collect()
    }
}

impl SimulatedCluster {
    /// A cluster with no nodes and no pods yet, on `clock` (the provider's, so both agree on time).
    pub fn new(provider: &ProviderConfig, clock: Clock) -> Result<SimulatedCluster, ClientError> {
        Ok(SimulatedCluster {
            client: ProviderClient::new(provider)?,
            on_disagreement: OnDisagreement::Count,
            clock,
            epoch: SystemTime::now(),
            state: Mutex::default(),
        })
    }

    /// The same cluster with its wall clock starting at `epoch` (budget schedules and node ages are read
    /// against it) instead of now.
    pub fn starting_at(self, epoch: SystemTime) -> SimulatedCluster {
        SimulatedCluster { epoch, ..self }
    }

    /// The same cluster, with disagreements handled as `on` says.
    pub fn on_disagreement(self, on: OnDisagreement) -> SimulatedCluster {
        SimulatedCluster {
            on_disagreement: on,
            ..self
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Simulated wall-clock time.
    pub fn now(&self) -> SystemTime {
        self.epoch + self.clock.now()
    }

    /// Creates pods, pending until the next [`SimulatedCluster::step`] schedules them. A pod with claims
    /// and no uid gets one (what its claims are owned by and reserved for).
    pub fn create_pods(&self, pods: impl IntoIterator<Item = Pod>) {
        let now = self.now();
        let mut state = self.state();
        let State {
            pods: all, serial, ..
        } = &mut *state;
        all.extend(pods.into_iter().map(|mut pod| {
            pod.created = Some(now);
            pod.node_name = None;
            pod.phase = Phase::Pending;
            pod.unschedulable = false;
            if !pod.claims().is_empty() && pod.uid().is_none() {
                pod.dra_mut().uid = Some(names::uid(&pod.namespace, &pod.name, serial));
            }
            pod
        }));
    }

    /// Deletes the pods `matching` says so of, wherever they are, and the claims made for them.
    pub fn delete_pods(&self, matching: impl Fn(&Pod) -> bool) {
        let mut state = self.state();
        let State { pods, dra, .. } = &mut *state;
        pods.retain(|p| {
            let delete = matching(p);
            if delete {
                claims::release(dra, p);
            }
            !delete
        });
    }

    /// Adds DeviceClasses.
    pub fn create_device_classes(&self, classes: impl IntoIterator<Item = Arc<DeviceClass>>) {
        self.state().dra.classes.extend(classes);
    }

    /// Adds ResourceClaimTemplates, from which the claim controller makes pods their claims.
    pub fn create_claim_templates(&self, templates: impl IntoIterator<Item = Arc<ClaimTemplate>>) {
        self.state().dra.templates.extend(templates);
    }

    /// Adds ResourceClaims (claims pods name themselves, which several may share).
    pub fn create_claims(&self, claims: impl IntoIterator<Item = Arc<ResourceClaim>>) {
        self.state().dra.claims.extend(claims);
    }

    /// The DRA objects: classes, templates, claims with their allocations, the slices nodes publish.
    pub fn dra(&self) -> DraObjects {
        self.state().dra.clone()
    }

    /// From now on, the instances of node group `group` that start fail as `how` says.
    pub fn break_nodes(&self, group: &str, how: Broken) {
        self.state().broken.insert(group.to_string(), how);
    }

    /// Adds a PodDisruptionBudget, enforced on evictions.
    pub fn create_pdb(&self, budget: Budget) {
        self.state().budgets.push(budget);
    }

    /// Writes (or, with `None`, deletes) the ConfigMap `ekscale-disruption`: its `config.yaml`.
    pub fn set_disruption_config(&self, text: Option<&str>) {
        self.state().disruption_config = text.map(Arc::from);
    }

    /// Adds CapacityBuffers.
    pub fn create_buffers(&self, buffers: Vec<VersionedBuffer>) {
        self.state().buffers.buffers.extend(buffers);
    }

    /// Adds PodTemplates, which buffers and ProvisioningRequests name.
    pub fn create_templates(&self, templates: Vec<Template>) {
        self.state().buffers.templates.extend(templates);
    }

    /// Sets a scalable object (a Deployment's replicas, as its HPA scales it), adding it if it is new.
    pub fn scale(&self, scalable: Scalable) {
        let scalables = &mut self.state().buffers.scalables;
        let same = |s: &Scalable| {
            (
                s.api_group.as_str(),
                s.kind.as_str(),
                s.namespace.as_str(),
                s.name.as_str(),
            ) == (
                &*scalable.api_group,
                &*scalable.kind,
                &*scalable.namespace,
                &*scalable.name,
            )
        };
        match scalables.iter_mut().find(|s| same(s)) {
            Some(s) => *s = scalable,
            None => scalables.push(scalable),
        }
    }

    /// Adds a ProvisioningRequest.
    pub fn create_request(&self, request: VersionedRequest) {
        self.state().requests.push(request);
    }

    /// Deletes the ProvisioningRequests named `name` (in any namespace), as deleting the workload that owns
    /// one does; says how many went.
    pub fn delete_requests(&self, name: &str) -> usize {
        let requests = &mut self.state().requests;
        let before = requests.len();
        requests.retain(|r| r.request.metadata.name.as_deref() != Some(name));
        before - requests.len()
    }

    /// The ProvisioningRequests, with their statuses as last written.
    pub fn requests(&self) -> Vec<VersionedRequest> {
        self.state().requests.clone()
    }

    /// Adds CapacityQuotas.
    pub fn create_quotas(&self, quotas: Vec<CapacityQuota>) {
        self.state().quotas.extend(quotas);
    }

    /// The CapacityQuotas, with their statuses as last written.
    pub fn quotas(&self) -> Vec<CapacityQuota> {
        self.state().quotas.clone()
    }

    /// The buffers, with their statuses as last written.
    pub fn buffers(&self) -> Vec<VersionedBuffer> {
        self.state().buffers.buffers.clone()
    }

    pub fn pods(&self) -> Vec<Pod> {
        self.state().pods.clone()
    }

    pub fn nodes(&self) -> Vec<Arc<Node>> {
        self.state().nodes.clone()
    }

    /// Where the companion's predicates placed a pod on a node that kube-scheduler's rules, written plainly,
    /// refuse (or found no node for a pod they bind), each once: what the demo counts and tests fail on.
    pub fn disagreements(&self) -> Vec<Disagreement> {
        self.state().disagreements.clone()
    }

    /// Registers nodes for instances that now run, removes nodes whose instances are gone (their pods go
    /// back to pending if a controller owns them, and are lost otherwise), then schedules pending pods.
    pub async fn step(&self) -> Result<(), ClientError> {
        self.client.refresh().await?;
        let fargate = self.fargate_profiles().await?;
        let registered: HashSet<String> = (self.state().nodes.iter())
            .map(|n| n.provider_id.clone())
            .collect();
        let mut running: Vec<(String, Arc<Node>, String)> = Vec::new();
        let mut known: HashSet<String> = HashSet::new();
        for group in self.client.node_groups().await?.iter() {
            let instances = self.client.nodes(&group.id).await?;
            let Some(template) = self.client.template(&group.id).await? else {
                continue;
            };
            let template = match node_from_pb(&template) {
                Ok(node) => Arc::new(node),
                Err(e) => {
                    tracing::warn!(group = %group.id, error = %e, "simulated cluster: unreadable template");
                    continue;
                }
            };
            for instance in instances {
                known.insert(instance.id.clone());
                if instance.state == InstanceState::Running {
                    running.push((instance.id, template.clone(), group.id.clone()));
                }
            }
        }
        // The devices new nodes publish (DRA drivers' slices), asked only when a node is about to register.
        let slices = match running.iter().any(|(id, ..)| !registered.contains(id)) {
            true => self.client.all_template_slices().await?,
            false => None,
        };
        let now = self.now();
        let mut state = self.state();
        let State {
            nodes,
            pods,
            broken,
            dra,
            serial,
            disagreements,
            ..
        } = &mut *state;
        // Nodes whose instance is gone leave; so do their pods, which controllers recreate.
        let gone: HashSet<String> = nodes
            .iter()
            .filter(|n| !n.provider_id.is_empty() && !known.contains(&n.provider_id))
            .map(|n| n.name.clone())
            .collect();
        nodes.retain(|n| !gone.contains(&n.name));
        claims::unpublish(dra, &gone);
        pods.retain_mut(|pod| {
            if !pod.node_name.as_deref().is_some_and(|n| gone.contains(n)) {
                return true;
            }
            claims::release(dra, pod);
            pod.node_name = None;
            pod.phase = Phase::Pending;
            pod.unschedulable = false;
            renew(pod, serial);
            pod.controller.is_some() && !pod.daemonset()
        });
        let registered: HashSet<String> = nodes.iter().map(|n| n.provider_id.clone()).collect();
        for (id, template, group) in running {
            let broken = broken.get(&group).copied();
            if !registered.contains(&id) && broken != Some(Broken::NeverRegister) {
                let mut node = node_for(&id, &template, now);
                node.ready = broken != Some(Broken::NeverReady);
                if let Some(template) = slices.as_ref().and_then(|s| s.get(&group)) {
                    dra.slices.extend(claims::published(template, &node.name));
                }
                nodes.push(Arc::new(node));
            }
        }
        run_on_fargate(nodes, pods, &fargate, now);
        // Claims even without DRA objects: a pod naming a template the cluster lacks stays pending, saying so.
        claims::make_claims(dra, pods, serial);
        let planned = claims::find_needs(dra, pods);
        for found in schedule(nodes, pods, dra, serial) {
            if !disagreements.contains(&found) {
                tracing::warn!(%found, "simulated cluster: the companion's predicates disagree");
                if self.on_disagreement == OnDisagreement::Panic {
                    panic!("simulated cluster: {found}");
                }
                disagreements.push(found);
            }
        }
        planned.restore(pods);
        preempt(nodes, pods, dra);
        Ok(())
    }
}

impl SimulatedCluster {
    /// For each Fargate-bound pod still waiting, whether a profile takes it (asked of the provider, as EKS
    /// decides): pod key -> profile.
    async fn fargate_profiles(&self) -> Result<HashMap<String, String>, ClientError> {
        let unasked: Vec<Pod> = {
            let state = self.state();
            state
                .pods
                .iter()
                .filter(|p| p.node_name.is_none() && p.scheduler_name == FARGATE_SCHEDULER)
                .filter(|p| !state.fargate.contains_key(&p.key()))
                .cloned()
                .collect()
        };
        for pod in unasked {
            let answer = match &pod.json {
                Some(json) => self.client.match_pod_json(json.clone()).await?,
                None => self.client.match_pod(pod_to_pb_bytes(&pod)).await?,
            };
            let profile = answer.map(|a| a.profile).filter(|p| !p.is_empty());
            self.state().fargate.insert(pod.key(), profile);
        }
        let mut state = self.state();
        let State { pods, fargate, .. } = &mut *state;
        // Pods that are gone need no answer any more.
        let live: HashSet<String> = pods.iter().map(Pod::key).collect();
        fargate.retain(|key, _| live.contains(key));
        Ok(fargate
            .iter()
            .filter_map(|(key, profile)| Some((key.clone(), profile.clone()?)))
            .collect())
    }
}

/// A pod lost and made again by its controller is a new pod: a new uid (where claims name it), claims still to
/// be made from its templates, and none made for its extended resources.
fn renew(pod: &mut Pod, serial: &mut u64) {
    let Some(dra) = pod.dra.as_deref_mut() else {
        return;
    };
    dra.uid = (!dra.claims.is_empty()).then(|| names::uid(&pod.namespace, &pod.name, serial));
    dra.extended_claim = None;
    for entry in &mut dra.claims {
        if let ClaimSource::Template { made, .. } = &mut entry.source {
            *made = None;
        }
    }
    dra.needs = None;
}

/// The node kubelet would register for instance `id` of a group with `template`.
fn node_for(id: &str, template: &Node, now: SystemTime) -> Node {
    let name = format!("ip-{}", id.rsplit('/').next().unwrap_or(id));
    let mut node = template.clone();
    node.labels.insert(HOSTNAME_LABEL.into(), name.clone());
    if let Some(zone) = id
        .strip_prefix("aws:///")
        .and_then(|rest| rest.split('/').next())
    {
        node.labels.insert(ZONE_LABEL.into(), zone.to_string());
    }
    node.name = name;
    node.provider_id = id.to_string();
    node.created = Some(now);
    node.ready = true;
    node
}

#[async_trait::async_trait]
impl ClusterSource for SimulatedCluster {
    async fn view(&self) -> Result<Arc<ClusterView>, ClusterError> {
        self.step()
            .await
            .map_err(|e| ClusterError::Sim(e.to_string()))?;
        let state = self.state();
        Ok(Arc::new(ClusterView {
            nodes: state.nodes.clone(),
            pods: state.pods.iter().cloned().map(Arc::new).collect(),
            keys: PodNames::of(&state.pods).into(),
            pdbs: state.pdbs(),
            daemonsets: Vec::new(),
            buffers: state.buffers.clone(),
            requests: RequestObjects {
                requests: state.requests.clone(),
                templates: state.buffers.templates.clone(),
            },
            now: Some(self.now()),
            disruption_config: state.disruption_config.clone(),
            dra: Arc::new(state.dra.clone()),
            quotas: state.quotas.clone().into(),
        }))
    }

    fn can_act(&self) -> bool {
        true
    }

    async fn write_buffer_status(&self, buffer: BufferStatus<'_>) -> Result<(), ClusterError> {
        let mut state = self.state();
        let key = buffer.key();
        let read = (state.buffers.buffers.iter_mut())
            .find(|r| r.buffer.key() == key)
            .ok_or_else(|| ClusterError::Sim(format!("no CapacityBuffer {key}")))?;
        read.buffer.status = Some(buffer.status.clone());
        Ok(())
    }

    async fn write_request_status(&self, request: RequestStatus<'_>) -> Result<(), ClusterError> {
        let mut state = self.state();
        let key = request.key();
        let read = (state.requests.iter_mut())
            .find(|r| request_key(&r.request) == key)
            .ok_or_else(|| ClusterError::Sim(format!("no ProvisioningRequest {key}")))?;
        read.request.status = Some(request.status.clone());
        Ok(())
    }

    /// A merge patch of the status, as the API server applies it: a status without `used` keeps the one
    /// there, a null figure is removed.
    async fn write_quota_status(&self, quota: QuotaStatusWrite<'_>) -> Result<(), ClusterError> {
        let mut state = self.state();
        let read = (state.quotas.iter_mut())
            .find(|q| q.name == quota.name)
            .ok_or_else(|| ClusterError::Sim(format!("no CapacityQuota {}", quota.name)))?;
        let mut written = read_quota_status(quota.status);
        if quota.status.used.is_none() {
            written.used = read.status.used.take();
        }
        read.status = written;
        Ok(())
    }

    async fn taint(&self, node: &str, taint: &Taint) -> Result<(), ClusterError> {
        self.change_node(node, |n| {
            n.taints.retain(|t| t.key != taint.key);
            n.taints.push(taint.clone());
        })
    }

    async fn untaint(&self, node: &str, key: &str) -> Result<(), ClusterError> {
        self.change_node(node, |n| n.taints.retain(|t| t.key != key))
    }

    async fn cordon(&self, node: &str, why: &str) -> Result<(), ClusterError> {
        self.change_node(node, |n| {
            n.unschedulable = true;
            n.cordoned_by_ekscale = Some(why.to_string());
        })
    }

    async fn uncordon(&self, node: &str) -> Result<(), ClusterError> {
        self.change_node(node, |n| {
            n.unschedulable = false;
            n.cordoned_by_ekscale = None;
        })
    }

    /// Evicts at once (the simulated kubelet stops pods without delay): the controller's replacement is
    /// pending until the next step schedules it; a pod without a controller is gone.
    async fn evict(
        &self,
        namespace: &str,
        name: &str,
        _grace: Duration,
    ) -> Result<(), ClusterError> {
        let mut state = self.state();
        let key = format!("{namespace}/{name}");
        let Some(i) = state
            .pods
            .iter()
            .position(|p| &*p.namespace == namespace && p.name == name)
        else {
            return Err(ClusterError::NoPod(key));
        };
        let pod = &state.pods[i];
        if let Some(pdb) = state
            .pdbs()
            .into_iter()
            .find(|b| b.covers(&pod.namespace, &pod.labels) && b.disruptions_allowed < 1)
        {
            return Err(ClusterError::EvictionRefused {
                pod: key,
                why: format!(
                    "Cannot evict pod as it would violate the pod's disruption budget {}",
                    pdb.name
                ),
            });
        }
        state.leave(i);
        Ok(())
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        _grace: Duration,
    ) -> Result<(), ClusterError> {
        let mut state = self.state();
        let Some(i) =
            (state.pods.iter()).position(|p| &*p.namespace == namespace && p.name == name)
        else {
            return Err(ClusterError::NoPod(format!("{namespace}/{name}")));
        };
        state.leave(i);
        Ok(())
    }
}

impl SimulatedCluster {
    /// The node monitoring agent sets `condition` False with `reason` on node `name`, now: the node's
    /// problems, as the companion reads them from its conditions. A replaced instance's node is a new node,
    /// without it.
    pub fn set_node_condition(
        &self,
        name: &str,
        condition: &str,
        reason: &str,
    ) -> Result<(), ClusterError> {
        let since = Some(self.now());
        self.change_node(name, |node| {
            node.problems.retain(|p| p.condition != condition);
            node.problems.push(NodeProblem {
                condition: condition.to_string(),
                reason: reason.to_string(),
                since,
            });
        })
    }

    /// The node monitoring agent sets `condition` True again on node `name` (a reboot fixed it).
    pub fn clear_node_condition(&self, name: &str, condition: &str) -> Result<(), ClusterError> {
        self.change_node(name, |node| {
            node.problems.retain(|p| p.condition != condition)
        })
    }

    /// Someone other than ekscale cordons node `name` (`kubectl cordon`): no mark of ekscale's.
    pub fn cordon_by_hand(&self, name: &str) -> Result<(), ClusterError> {
        self.change_node(name, |node| node.unschedulable = true)
    }

    fn change_node(&self, name: &str, change: impl FnOnce(&mut Node)) -> Result<(), ClusterError> {
        let mut state = self.state();
        let node = state
            .nodes
            .iter_mut()
            .find(|n| n.name == name)
            .ok_or_else(|| ClusterError::NoNode(name.into()))?;
        change(Arc::make_mut(node));
        Ok(())
    }
}
