//! One iteration of the loop (cluster-autoscaler's RunOnce): Refresh, read the node groups, count what is
//! coming, find the pods that need help, set Fargate pods aside, place what fits where it already is or will
//! be, plan scale-ups for the rest, act (unless dry), and record why for every pod.

use super::backoff::{Backoff, BackoffSettings};
use super::buffers;
use super::classify;
use super::client::{ClientError, ProviderClient};
use super::cluster::{ClusterSource, ClusterView};
use super::cluster_snapshot::{self, ClusterSnapshot};
use super::cluster_state::{self, ClusterState, Counts, GroupFacts};
use super::consolidation;
use super::expander::Expander;
use super::fargate::FargateAnswers;
use super::headroom::{Capacity, Owner, Policy, virtual_pods};
use super::health::{HealthSettings, Judge};
use super::pricing::{self, PriceBook};
use super::scaledown;
use super::scaledown_policy::{Context, Fleet, ScaleDownPolicy};
use super::scaleup::{self, Group, Limits, Pending};
use super::status::{
    CapacityBufferStatus, ConditionStatus, GroupStatus, HeadroomStatus, NoScaleUp, ScaleUp, Shape,
    Status,
};
use crate::model::fargate;
use crate::model::pod::LabelProjection;
use crate::model::taint::TO_BE_DELETED_TAINT;
use crate::model::{Pod, PodList};
use crate::simulator::equivalence;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The decision flags of `run` and `simulate`.
#[derive(Clone, Debug)]
pub struct Settings {
    pub expander: Expander,
    pub limits: Limits,
    pub expendable_pods_priority_cutoff: i32,
    pub max_node_provision_time: Duration,
    pub max_node_startup_time: Duration,
    /// When unready nodes stop the loop, or a group's scale-up.
    pub health: HealthSettings,
    pub backoff: BackoffSettings,
    /// Call IncreaseSize (and delete instances that never registered); false for `simulate` and `--dry-run`.
    pub act: bool,
    /// Delete instances that do not register within `max_node_provision_time`. Off over a static snapshot,
    /// where no instance ever registers.
    pub remove_unregistered: bool,
    /// Wait for pods to age before adding nodes for them: `new_pod_scale_up_delay` (or a pod's own
    /// `pod-scale-up-delay` annotation), and upstream's batching (no scale-up while the oldest pending pod is
    /// under 2 s old, or the oldest GPU pod under 30 s). Off for `simulate`, which plans as if time had passed.
    pub wait_for_new_pods: bool,
    pub new_pod_scale_up_delay: Duration,
    pub scale_down: scaledown::Settings,
    /// `--consolidation` and its guards.
    pub consolidation: consolidation::Settings,
    /// Capacity kept free ahead of demand, as virtual pending pods.
    pub headroom: Vec<Policy>,
}

impl Default for Settings {
    /// cluster-autoscaler's defaults; planning only (`act` off).
    fn default() -> Settings {
        Settings {
            expander: Expander {
                chain: vec![super::expander::Strategy::LeastWaste],
                priorities: None,
            },
            limits: Limits::default(),
            expendable_pods_priority_cutoff: -10,
            max_node_provision_time: Duration::from_secs(15 * 60),
            max_node_startup_time: Duration::from_secs(15 * 60),
            health: HealthSettings::default(),
            backoff: BackoffSettings::default(),
            act: false,
            remove_unregistered: false,
            wait_for_new_pods: false,
            new_pod_scale_up_delay: Duration::ZERO,
            scale_down: scaledown::Settings::default(),
            consolidation: consolidation::Settings::default(),
            headroom: Vec::new(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error("the provider failed, nothing was done this loop: {0}")]
    Provider(#[from] ClientError),
    #[error(transparent)]
    Expander(#[from] super::expander::ExpanderError),
}

/// The loop's state between iterations.
pub struct RunOnce {
    client: ProviderClient,
    settings: Settings,
    /// Groups, instances and backoff, as the loop remembers them.
    state: ClusterState,
    /// Where scale-down acts (taints, evictions); without it scale-down is planned, never carried out.
    cluster: Option<Arc<dyn ClusterSource>>,
    /// Unneeded timers, cooldowns, budgets and the deletions in progress.
    down: ScaleDownPolicy,
    /// MatchPod's answers by pod shape.
    fargate: FargateAnswers,
    /// Pod prices by demand, for the price expander.
    prices: PriceBook,
}

impl RunOnce {
    pub fn new(client: ProviderClient, mut settings: Settings) -> RunOnce {
        settings.scale_down.rules.expendable_cutoff = settings.expendable_pods_priority_cutoff;
        RunOnce {
            client,
            state: ClusterState::new(Backoff::new(settings.backoff)),
            settings,
            cluster: None,
            down: ScaleDownPolicy::default(),
            fargate: FargateAnswers::default(),
            prices: PriceBook::default(),
        }
    }

    /// Carries scale-down out on `cluster` (when `act` is set): taints, evictions.
    pub fn acting_on(mut self, cluster: Arc<dyn ClusterSource>) -> RunOnce {
        self.cluster = Some(cluster);
        self
    }

    /// The cluster scale-down acts on, when it may act.
    fn actor(&self) -> Option<Arc<dyn ClusterSource>> {
        self.cluster
            .clone()
            .filter(|c| self.settings.act && c.can_act())
    }

    /// One iteration over `view`, at `now` (the view's own time for a snapshot): the stages in order, each
    /// taking what it needs and handing on a value; the scale-up and scale-down plans are carried out (unless
    /// dry) and then described in the status.
    pub async fn run(&mut self, view: &ClusterView, now: SystemTime) -> Result<Status, LoopError> {
        let started = Instant::now();
        let mut status = Status::default();

        // Cluster state: what the provider says of every group; deletions in progress take their next step.
        self.client.refresh().await?;
        self.state.backoff.forget_old(now);
        // Fargate profiles are read beside the groups; without them no pod is set aside for Fargate.
        let (facts, profiles) = futures::join!(
            cluster_state::read_groups(&self.client, &self.settings),
            self.client.fargate_profiles()
        );
        let facts = facts?;
        let node_group = cluster_state::groups_of_nodes(&self.client, view, &facts).await?;
        let deleting = self
            .deletions_in_progress(view, &facts, now, &mut status)
            .await;
        let startup = self.settings.max_node_startup_time;
        let (mut groups, counts) = self.state.count(startup, view, &facts, &node_group, now);
        if self.settings.remove_unregistered {
            let act = self.settings.act;
            self.state
                .remove_long_unregistered(&self.client, act, &facts, now, &mut status)
                .await;
        }
        if !self.healthy(view, &node_group, &mut groups, now, &mut status) {
            status.node_groups = group_statuses(&facts, &counts, &groups);
            status.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
            return Ok(status);
        }

        // Pods: what needs help, what Fargate takes, what holds room; in equivalence groups.
        // Headroom's virtual pods go after the real ones, so real pods keep their indices.
        let reserved = self.headroom(view, now, &mut status);
        let pods = PodList::new(&view.pods, &reserved);
        let sorted = self.classify(view, pods, now, &mut status);
        let profiles = profiles.unwrap_or_else(|e| {
            status.errors.push(format!("Fargate: {e}"));
            None
        });
        let profile_list = profiles.as_deref().map(Vec::as_slice);
        let projection = LabelProjection::of(
            pods,
            profile_list.map(fargate::label_keys).unwrap_or_default(),
        );
        let help_groups = equivalence::group(pods, sorted.to_help, &projection);
        let fargate_groups = equivalence::group(pods, sorted.fargate, &projection);
        let report = (self.fargate)
            .report(
                &self.client,
                profile_list,
                pods,
                &fargate_groups,
                &help_groups,
            )
            .await;
        status.fargate = report.pods;
        status.errors.extend(report.errors);

        // The snapshot, and the pending pods that fit in it as it is.
        let input = cluster_snapshot::Inputs {
            view,
            pods,
            bound: &sorted.bound,
            node_group: &node_group,
            facts: &facts,
            counts: &counts,
            deleting: &deleting,
            projection: &projection,
        };
        let mut snapshot = planning(|| ClusterSnapshot::build(&input, &help_groups, &mut groups));
        let (terms, done) =
            planning(|| snapshot.place_pending(pods, &help_groups, &groups, &mut status.placed));

        // Scale-up: planned for the rest, carried out, described.
        let totals = snapshot.totals();
        let mut pending = Pending {
            pods,
            keys: view.pod_keys(),
            prices: vec![None; help_groups.len()],
            groups: help_groups,
            terms,
            done,
            stabilizer: 0.0,
        };
        let paused = self.batching(&mut pending, now, &mut status);
        let expander = self
            .expander(profile_list, &mut groups, &mut pending, &mut status)
            .await;
        let ClusterSnapshot {
            topology, places, ..
        } = &mut snapshot;
        let mut plan = planning(|| {
            let limits = &self.settings.limits;
            scaleup::plan(
                topology,
                places,
                &groups,
                &mut pending,
                limits,
                &expander,
                totals,
            )
        })?;
        if self.settings.act {
            self.scale_up(&mut plan.scale_ups, now).await;
        }
        describe_scale_up(plan, &pending, &mut status);

        // Scale-down (and consolidation): decided over the snapshot scale-up left, carried out, described.
        if self.settings.scale_down.enabled {
            let unpriced = self.settings.consolidation.replaces() && !expander.needs_prices();
            if unpriced && let Err(e) = pricing::node_prices(&self.client, &mut groups).await {
                let why = format!("pricing, consolidation has no prices: {e}");
                status.errors.push(why);
            }
            let grown: HashMap<String, u64> = (status.scale_up.iter())
                .filter(|s| s.error.is_none())
                .map(|s| (s.node_group.clone(), s.delta))
                .collect();
            let cx = Context {
                settings: &self.settings,
                client: &self.client,
                actor: self.actor(),
            };
            let fleet = Fleet {
                groups: &groups,
                grown: &grown,
            };
            let world = (&mut snapshot.topology, &mut snapshot.places);
            let nodes = (
                node_group.as_slice(),
                snapshot.on_node.as_slice(),
                &deleting,
            );
            let decision = self.down.decide(
                &cx,
                view,
                pods,
                &facts,
                fleet,
                nodes,
                world,
                &projection,
                paused,
                now,
            );
            let backoffs = (self.down)
                .carry_out(&cx, view, decision, &deleting, &facts, now, &mut status)
                .await;
            for (group, why) in backoffs {
                self.state.backoff.fail(&group, why, now);
            }
        }

        status.node_groups = group_statuses(&facts, &counts, &groups);
        headroom_outcome(&mut status, now);
        if let Some(cluster) = self.actor() {
            write_buffer_statuses(cluster.as_ref(), &mut status).await;
        }
        status.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(status)
    }

    /// Health: groups whose nodes are mostly unready are skipped for scale-up; an unhealthy cluster ends the
    /// loop, as upstream's does, and unneeded timers start again once its nodes are back.
    fn healthy(
        &mut self,
        view: &ClusterView,
        node_group: &[Option<usize>],
        groups: &mut [Group],
        now: SystemTime,
        status: &mut Status,
    ) -> bool {
        let judge = Judge {
            settings: self.settings.health,
            max_node_startup_time: self.settings.max_node_startup_time,
            now,
        };
        judge.skip_unhealthy_groups(groups, &view.nodes, node_group);
        status.cluster_health = judge.cluster(&view.nodes);
        if !status.cluster_health.healthy {
            self.down.forget_unneeded();
        }
        status.cluster_health.healthy
    }

    /// The view is checked; our deletions take their next step, unless the view lost its pods (and our
    /// ToBeDeleted taints an earlier run left come off, once);
    /// returns the nodes on their way out: ours, and any carrying the ToBeDeleted taint (ours from an
    /// earlier run that was not just removed, or another autoscaler's).
    async fn deletions_in_progress(
        &mut self,
        view: &ClusterView,
        facts: &[GroupFacts],
        now: SystemTime,
        status: &mut Status,
    ) -> HashSet<String> {
        self.down.check_view(&view.pods, facts, now);
        let mut restored = HashSet::new();
        if let Some(cluster) = self.actor() {
            let cx = Context {
                settings: &self.settings,
                client: &self.client,
                actor: Some(cluster.clone()),
            };
            restored = (self.down)
                .remove_stale_taints(&*cluster, view, facts, status)
                .await;
            (self.down)
                .advance_deletions(&cx, &*cluster, view, now, status)
                .await;
        }
        // Replacements waiting for their new node: which is theirs, whether it is Ready, or too late.
        let act = self.settings.act;
        let backoffs = (self.down.replacements)
            .watch(&self.client, act, view, facts, now, status)
            .await;
        for (group, why) in backoffs {
            self.state.backoff.fail(&group, why, now);
        }
        view.nodes
            .iter()
            .filter(|n| {
                self.down.deleting(&n.name)
                    || n.tainted(TO_BE_DELETED_TAINT) && !restored.contains(&n.name)
            })
            .map(|n| n.name.clone())
            .collect()
    }

    /// The pods by what the loop does with them; pods too young to scale up for wait, when that is on.
    fn classify(
        &self,
        view: &ClusterView,
        pods: PodList<'_>,
        now: SystemTime,
        status: &mut Status,
    ) -> classify::Sorted {
        let node_names: HashSet<&str> = view.nodes.iter().map(|n| n.name.as_str()).collect();
        let cutoff = self.settings.expendable_pods_priority_cutoff;
        let mut sorted = classify::sort_pods(pods, &node_names, cutoff, status);
        if self.settings.wait_for_new_pods {
            let delay = self.settings.new_pod_scale_up_delay;
            sorted.to_help = classify::old_enough(pods, sorted.to_help, delay, now, status);
        }
        sorted
    }

    /// Upstream's batching: while new pods keep coming, scale-up waits one loop for more and plans nothing.
    /// Returns why it waits (scale-down waits too).
    fn batching(
        &self,
        pending: &mut Pending,
        now: SystemTime,
        status: &mut Status,
    ) -> Option<String> {
        if !self.settings.wait_for_new_pods {
            return None;
        }
        let why = classify::batching(pending, now)?;
        for (e, eg) in pending.groups.iter().enumerate() {
            for &p in &eg.pods[pending.done[e]..] {
                status.no_scale_up.push(NoScaleUp {
                    pod: pending.pods[p].key(),
                    reasons: BTreeMap::from([(String::new(), why.clone())]),
                });
            }
        }
        pending.done = pending.groups.iter().map(|g| g.pods.len()).collect();
        Some(format!("scale-up is {why}"))
    }

    /// The expander chain for this loop, with prices when it needs them; a pricing failure leaves the price
    /// expander out of this loop, and the rest of the chain decides.
    async fn expander(
        &mut self,
        profiles: Option<&[fargate::FargateProfile]>,
        groups: &mut [Group],
        pending: &mut Pending<'_>,
        status: &mut Status,
    ) -> Expander {
        let expander = &self.settings.expander;
        if !expander.needs_prices() {
            return expander.clone();
        }
        let profiles = profiles.unwrap_or_default();
        match (self.prices)
            .price(&self.client, profiles, groups, pending)
            .await
        {
            Ok(()) => expander.clone(),
            Err(e) => {
                status
                    .errors
                    .push(format!("pricing, the price expander is skipped: {e}"));
                expander.without_price()
            }
        }
    }

    /// Asks for each planned scale-up; a refusal backs the group off and is recorded in the scale-up.
    async fn scale_up(&mut self, scale_ups: &mut [ScaleUp], now: SystemTime) {
        for scale_up in scale_ups {
            let delta = i32::try_from(scale_up.delta).unwrap_or(i32::MAX);
            match self.client.increase_size(&scale_up.node_group, delta).await {
                Ok(_) => self.down.last_scale_up = Some(now),
                Err(error) => {
                    let why = error.to_string();
                    self.state
                        .backoff
                        .fail(&scale_up.node_group, why.clone(), now);
                    scale_up.error = Some(why);
                }
            }
        }
    }

    /// The room kept free this loop, as virtual pods: each headroom policy sized on the cluster as it is
    /// now, and each CapacityBuffer resolved (the buffer controller's part, done here every loop).
    fn headroom(&self, view: &ClusterView, now: SystemTime, status: &mut Status) -> Vec<Pod> {
        let mut pods = Vec::new();
        for policy in &self.settings.headroom {
            let capacity = Capacity::of(&view.nodes, policy.node_group.as_deref());
            let reserved = policy.reserved(&capacity);
            pods.extend(policy.pods(reserved));
            status.headroom.push(HeadroomStatus {
                policy: policy.name.clone(),
                node_group: policy.node_group.clone(),
                shape: policy.describe_shape(),
                reserved,
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
                pods.extend(virtual_pods(&owner, chunk, resolved.reserved()));
            }
            status.capacity_buffers.push(CapacityBufferStatus {
                name: resolved.name.clone(),
                namespace: resolved.namespace.clone(),
                desired_chunks: resolved.chunks,
                chunk: resolved.chunk.as_ref().map(|c| Shape {
                    cpu: crate::k8s::quantity::cpu(c.demand.cpu_millis),
                    memory: crate::k8s::quantity::bytes(c.demand.memory_bytes),
                }),
                in_free_room: 0,
                in_scale_up: 0,
                unmet: 0,
                unmet_reasons: BTreeMap::new(),
                conditions: Vec::new(),
                resolved: Some(Box::new(resolved)),
            });
        }
        pods
    }
}

/// A scale-up plan, carried out, in the status: each scale-up with its outcome, and why no group helps each
/// pod left.
fn describe_scale_up(plan: scaleup::Plan, pending: &Pending, status: &mut Status) {
    status.estimate_ms = plan.estimate_time.as_secs_f64() * 1000.0;
    for failed in &plan.scale_ups {
        if let Some(why) = &failed.error {
            let group = &failed.node_group;
            status.errors.push(format!("scale-up of {group}: {why}"));
        }
    }
    status.scale_up = plan.scale_ups;
    for (e, eg) in pending.groups.iter().enumerate() {
        for &p in &eg.pods[pending.done[e]..] {
            status.no_scale_up.push(NoScaleUp {
                pod: pending.pods[p].key(),
                reasons: plan.reasons[e].clone(),
            });
        }
    }
}

/// Each group as the loop found it: sizes, nodes registered and coming, and why it could not grow.
fn group_statuses(facts: &[GroupFacts], counts: &[Counts], groups: &[Group]) -> Vec<GroupStatus> {
    facts
        .iter()
        .zip(counts)
        .zip(groups)
        .map(|((f, c), g)| GroupStatus {
            id: f.group.id.clone(),
            min_size: f.group.min_size,
            max_size: f.group.max_size,
            target_size: f.target,
            registered: c.registered,
            upcoming: c.upcoming,
            skipped: g.skip.clone(),
        })
        .collect()
}

/// Where each policy's and buffer's virtual pods ended up this loop, and each buffer's `Provisioning`.
fn headroom_outcome(status: &mut Status, now: SystemTime) {
    if status.headroom.is_empty() && status.capacity_buffers.is_empty() {
        return;
    }
    // One pass over the reports, by owner: placed, in a scale-up, unmet (with the first unmet one's reasons).
    #[derive(Default)]
    struct Outcome<'a> {
        placed: usize,
        scale_up: usize,
        unmet: usize,
        why: Option<&'a NoScaleUp>,
    }
    let mut outcomes: HashMap<Owner, Outcome> = HashMap::new();
    for p in &status.placed {
        if let Some(owner) = Owner::of(&p.pod) {
            outcomes.entry(owner).or_default().placed += 1;
        }
    }
    for pod in status.scale_up.iter().flat_map(|s| s.pods.iter()) {
        if let Some(owner) = Owner::of(pod) {
            outcomes.entry(owner).or_default().scale_up += 1;
        }
    }
    for n in &status.no_scale_up {
        if let Some(owner) = Owner::of(&n.pod) {
            let outcome = outcomes.entry(owner).or_default();
            outcome.unmet += 1;
            outcome.why.get_or_insert(n);
        }
    }
    let mut outcome_of = |owner: Owner| outcomes.remove(&owner).unwrap_or_default();
    for h in &mut status.headroom {
        let outcome = outcome_of(Owner::Policy(h.policy.clone()));
        (h.placed, h.scale_up, h.unmet) = (outcome.placed, outcome.scale_up, outcome.unmet);
    }
    for b in &mut status.capacity_buffers {
        let outcome = outcome_of(Owner::Buffer {
            namespace: b.namespace.clone(),
            name: b.name.clone(),
        });
        (b.in_free_room, b.in_scale_up, b.unmet) =
            (outcome.placed, outcome.scale_up, outcome.unmet);
        if let Some(why) = outcome.why {
            b.unmet_reasons = why.reasons.clone();
        }
        if let Some(resolved) = &mut b.resolved {
            let why = outcome.why.map(NoScaleUp::describe_reasons);
            resolved.provisioned(outcome.unmet, why.as_deref(), now);
            b.conditions = (resolved.status.conditions.iter())
                .map(|c| ConditionStatus {
                    kind: c.type_.clone(),
                    status: c.status.clone(),
                    reason: c.reason.clone(),
                    message: c.message.clone(),
                })
                .collect();
        }
    }
}

/// Writes each CapacityBuffer's status where it changed (the buffer controller's and the autoscaler's
/// conditions at once); a buffer whose status could not be written says so in the loop's errors.
async fn write_buffer_statuses(cluster: &dyn ClusterSource, status: &mut Status) {
    for b in &status.capacity_buffers {
        let Some(resolved) = b.resolved.as_ref().filter(|r| r.changed()) else {
            continue;
        };
        let written = cluster.write_buffer_status(resolved).await;
        if let Err(e) = written {
            let key = resolved.key();
            status
                .errors
                .push(format!("CapacityBuffer {key}: status not written: {e}"));
        }
    }
}

/// Runs planning (CPU work: the world, estimates, removal simulations) without holding a Tokio worker: on a
/// multi-thread runtime (the binaries') the worker hands its other tasks to another first; a current-thread
/// runtime has no other worker to keep free, so the work runs in place.
pub(super) fn planning<R>(work: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}
