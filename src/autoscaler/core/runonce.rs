//! One iteration of the loop (cluster-autoscaler's RunOnce), as a list of stages. Each stage takes what it
//! needs and returns its decisions and its part of the report; `run` assembles the status from them:
//!
//! 0. one pass over every pod (`classify.rs`), before the stages that read it: the pods sorted by what the
//!    loop does with them, and what the view check, the label projection and the snapshot's DaemonSets read
//!    of all pods;
//! 1. cluster state (`clusterstate/`): Refresh, the groups, which group each node is in, what is coming;
//!    the deletions and replacements in progress take their next step;
//! 2. health (`health.rs`): an unhealthy cluster ends the loop, an unhealthy group is not scaled up;
//! 3. pods: the features' virtual pods (`features.rs`: headroom's and the CapacityBuffers' from `headroom/`,
//!    the ProvisioningRequests' from `provreq/`, each joining through `autoscaler::feature::LoopFeature`)
//!    sorted with the rest in the first pass, the pods consuming a request and Fargate's (`fargate.rs`) set
//!    aside, the rest in equivalence groups;
//! 4. the snapshot (`clustersnapshot/`), the requests' booked room held in it, and the pending pods that
//!    fit in it as it is;
//! 5. scale-up: the requests not provisioned yet, each all or nothing (`provreq/`); then planned for the
//!    rest (`scaleup/`), carried out (unless dry);
//! 6. scale-down and consolidation (`scaledown/`): decided over the world scale-up left, carried out;
//! 7. each feature's part of the report (where its virtual pods went) and its statuses written back.
//!
//! The CapacityQuotas' statuses (`autoscaler/quotas/`, upstream's controller's part) are written first, from
//! the view alone: they say what the registered nodes hold, whatever this loop decides or whether it gets
//! far; their figures before and after scale-up go in the report.

use crate::autoscaler::capacity;
use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::cluster::{ClusterSource, ClusterView};
use crate::autoscaler::clustersnapshot::snapshot::{self as cluster_snapshot, ClusterSnapshot};
use crate::autoscaler::clusterstate::backoff::GroupBackoff;
use crate::autoscaler::clusterstate::state::{self as cluster_state, ClusterState, LateInstances};
use crate::autoscaler::core::claim_needs;
use crate::autoscaler::core::classify::{self, Sorted};
use crate::autoscaler::core::disruption_source::DisruptionSource;
use crate::autoscaler::core::features::Features;
use crate::autoscaler::core::health::Judge;
use crate::autoscaler::core::leaving;
use crate::autoscaler::core::record;
use crate::autoscaler::core::record::{Read, quota_report, snapshot_inputs};
use crate::autoscaler::core::stages::{Grouped, ProvisionStage, ScaleDownStage, context};
use crate::autoscaler::degradation::{Degradation, Progress};
use crate::autoscaler::disruption::DisruptionConfig;
use crate::autoscaler::fargate::FargateAnswers;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::leaving::LeavingMemory;
use crate::autoscaler::planning::planning;
use crate::autoscaler::provreq::outcome::Requests;
use crate::autoscaler::provreq::provision;
use crate::autoscaler::quotas::QuotaStage;
use crate::autoscaler::scaledown::carry_out::CarryGround;
use crate::autoscaler::scaledown::consolidation::consolidator::Fleet;
use crate::autoscaler::scaledown::consolidation::replacement::WatchMode;
use crate::autoscaler::scaledown::decision::Scene;
use crate::autoscaler::scaledown::policy::ScaleDownPolicy;
use crate::autoscaler::scaledown::report::ScaleDownReport as Report;
use crate::autoscaler::scaleup::executor::Executor;
use crate::autoscaler::scaleup::expander::{Expander, ExpanderError};
use crate::autoscaler::scaleup::orchestrator as scaleup;
use crate::autoscaler::scaleup::pending::Pending;
use crate::autoscaler::scaleup::pricing::{self, PriceBook};
use crate::autoscaler::schedules::SizesInForce;
use crate::autoscaler::settings::Settings;
use crate::autoscaler::status::{
    ClusterHealth, LoopProblem, LoopStage, NoScaleUp, ProblemKind, ScaleUp, Status,
};
use crate::model::{
    FargateProfile, FastSet, LabelProjection, PodList, TO_BE_DELETED_TAINT, fargate_label_keys,
    fargate_namespaces,
};
use crate::simulator::Dra;
use crate::simulator::{EquivalenceGroup, group_pods};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    #[error("the provider failed, nothing was done this loop: {0}")]
    Provider(#[from] ClientError),
    #[error(transparent)]
    Expander(#[from] ExpanderError),
}

/// The loop's state between iterations.
pub struct RunOnce {
    client: ProviderClient,
    settings: Settings,
    /// Groups, instances and backoff, as the loop remembers them.
    state: ClusterState,
    /// Where scale-down acts (taints, evictions); without it scale-down is planned, never carried out.
    cluster: Option<Arc<dyn ClusterSource>>,
    /// Unneeded timers, cooldowns, budgets, the deletions and replacements in progress.
    down: ScaleDownPolicy,
    /// MatchPod's answers by pod shape.
    fargate: FargateAnswers,
    /// Pod prices by demand, for the price expander.
    prices: PriceBook,
    /// The disruption configuration: the file's, or the cluster's, the last good one kept.
    disruption: DisruptionSource,
    /// The last loop's DRA state (classes with their selectors compiled, pools with their devices'
    /// verdicts), of which the next loop rebuilds only what changed.
    dra: Option<Arc<Dra>>,
    /// Whether the CapacityQuotas are kept (enforced, reported, their statuses written).
    quotas: QuotaStage,
    /// The leaving nodes seen: since when, and whether their pods found room since.
    leaving: LeavingMemory,
    /// Graceful degradation: the batching timeout, the loop's progress, the degraded loops in a row.
    degradation: Degradation,
}

impl RunOnce {
    pub fn new(client: ProviderClient, mut settings: Settings) -> RunOnce {
        settings.scale_down.rules.expendable_cutoff = settings.expendable_pods_priority_cutoff;
        let disruption = DisruptionSource::new(settings.disruption.clone());
        let quotas = match settings.capacity_quotas {
            true => QuotaStage::Kept,
            false => QuotaStage::Ignored,
        };
        let timeout = settings.pending_pods_batching_timeout;
        let degradation = Degradation {
            timeout,
            ..Degradation::default()
        };
        RunOnce {
            client,
            state: ClusterState::new(GroupBackoff::new(settings.backoff)),
            settings,
            cluster: None,
            down: ScaleDownPolicy::default(),
            fargate: FargateAnswers::default(),
            prices: PriceBook::default(),
            disruption,
            dra: None,
            quotas,
            leaving: LeavingMemory::default(),
            degradation,
        }
    }

    /// The loop's progress, beaten as it works: what `/health-check` counts activity from.
    pub fn progress(&self) -> Progress {
        self.degradation.progress.clone()
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
    /// taking what it needs and handing back a value; the status is assembled from those values.
    pub async fn run(&mut self, view: &ClusterView, now: SystemTime) -> Result<Status, LoopError> {
        let (started, mut status) = (Instant::now(), Status::default());
        self.degradation.progress.beat();
        let errors = self.quotas.write_statuses(self.actor(), view, now).await;
        status.problems(LoopStage::Quotas, ProblemKind::StatusWrite, errors);

        // Every pod in one pass, the features' virtual pods after the real ones (which keep their indices).
        let mut features = Features::read(&self.settings, view, now);
        let mut extra = features.virtual_pods(view.pods.len());
        let requests = &mut features.requests;
        let claimed = claim_needs::with_needs(view, &mut extra);
        let pods = PodList::new(claimed.as_deref().unwrap_or(&view.pods), &extra);
        let mut sorted = self.classify(view, pods, now);
        let disruption = self.disruption.keep(view.disruption_config.as_ref());
        status.disruption_config_refused = disruption.stale;

        // Cluster state, the deletions in progress a step on; health: an unhealthy cluster ends the loop.
        let config = disruption.config.as_deref();
        let (mut read, mut groups) = self
            .cluster_state(view, sorted.on_nodes, config, now)
            .await?;
        let unevaluated = read.schedules.take_problems();
        status.problems(LoopStage::Schedules, ProblemKind::Evaluation, unevaluated);
        record::scale_down(&mut status, std::mem::take(&mut read.report));
        status.cluster_health = self.health(view, &read, &mut groups, now);
        if !status.cluster_health.healthy {
            status.node_groups = record::group_statuses(&read.facts, &read.counts, &groups);
            read.schedules.report(&mut status.node_groups);
            return Ok(record::finish(status, started));
        }

        // Capacity Blocks: a group grows only inside its window, into its available instances.
        let config = disruption.config.as_deref();
        capacity::gate(
            &read.facts,
            config,
            &mut groups,
            &mut self.state.backoff,
            now,
        );

        // Leaving nodes: no room, their pods to help this loop, their groups' own replacements coming.
        let changes = leaving::Changes {
            sorted: &mut sorted,
            read: &mut read,
            groups: &mut groups,
            backoff: &mut self.state.backoff,
        };
        let handling = self.settings.leaving_nodes;
        let memory = (&self.client, &self.leaving, &self.down, handling);
        let (gone, errors) = leaving::read(memory, (view, pods), changes, config, now).await;
        status.problems(LoopStage::Leaving, ProblemKind::ProviderCall, errors);

        // Pods: those consuming a request set aside, Fargate's reported, the rest in equivalence groups.
        requests.set_aside(&mut sorted.to_help, pods);
        status.no_scale_up.append(&mut sorted.said);
        let grouped = self
            .group_pods(pods, &mut sorted, &mut read, &mut status)
            .await;

        // The snapshot: the requests' booked room held first, then the pending pods that fit in it as it is.
        let asked = requests.groups(pods, &grouped.projection);
        let inputs = snapshot_inputs(view, pods, &sorted, &read, &grouped.projection, self.quotas);
        let mut snapshot = self.snapshot(&inputs, (&grouped.help, &asked), &mut groups);
        requests.hold_booked(&mut snapshot, pods, &asked, &groups, now);
        let (world, mut help) = ((&mut snapshot, pods, &groups[..]), grouped.help);
        let fitted = record::fit_pending(world, &mut help, &mut self.degradation, &mut status);
        let quotas_before = self.quotas.before(|| snapshot.totals().quotas);

        // Scale-up: the requests not provisioned yet, each all or nothing; then planned for the rest (not
        // for the pods the batching timeout left untried: they may fit where nodes are).
        let mut pending = Pending::new(pods, view.pod_keys(), help, fitted.terms, fitted.done);
        pending.set_homes(&gone.moved, &gone.homes);
        let paused = self.batching(&mut pending, now, &mut status.no_scale_up);
        let profiles = grouped.profiles.as_deref().map(Vec::as_slice);
        let (expander, unpriced) = self.expander(profiles, &mut groups, &mut pending).await;
        status.problems(LoopStage::Expander, ProblemKind::ProviderCall, unpriced);
        let stage = (&mut snapshot, &mut groups[..], &asked[..], &expander);
        let provisioned = self.provision(requests, stage, view, pods, now);
        let for_requests = provisioned.await?;
        let up = self.scale_up(&mut snapshot, &groups, &mut pending, &expander, now);
        let mut plan = up.await?;
        let raised = self.raise_to_min(&read.schedules, &groups, &plan.scale_ups, now);
        plan.scale_ups.extend(raised.await);
        plan.scale_ups.splice(0..0, for_requests);
        status.capacity_quotas = quota_report(quotas_before, view, &snapshot, &groups);
        record::scale_up(&mut status, plan, &pending);

        // Leaving nodes that go now drain (when acting); the groups' new nodes are held from scale-down.
        let (actor, down) = (self.actor(), &mut self.down);
        let errors = leaving::drain(down, actor, (&gone, view, &mut read), now).await;
        status.problems(LoopStage::Leaving, ProblemKind::Action, errors);

        // Scale-down (and consolidation): decided over the snapshot scale-up left, carried out, described.
        if self.settings.scale_down.enabled && self.degradation.loops.scales_down() {
            let stage = ScaleDownStage {
                view,
                pods,
                snapshot,
                read: &read,
                groups: &mut groups,
                scale_ups: &status.scale_up,
                priced: expander.needs_prices(),
                projection: &grouped.projection,
                paused,
                disruption: disruption.config.as_deref(),
                leaving: &gone,
            };
            let report = self.scale_down(stage, now).await;
            record::scale_down(&mut status, report);
        }

        let memory = (&mut self.leaving, &gone);
        leaving::report(memory, (view, pods, &read), &mut status, now);

        // Where the virtual pods went; the features' statuses written back.
        status.node_groups = record::group_statuses(&read.facts, &read.counts, &groups);
        read.schedules.report(&mut status.node_groups);
        let actor = self.actor();
        features.finish(&mut status, actor.as_deref(), now).await;
        Ok(record::finish(status, started))
    }

    /// The snapshot of `inputs` with the pods to help and the requests' pods (`help`, `asked`) in it, built
    /// on the last loop's DRA state, which it replaces.
    fn snapshot(
        &mut self,
        inputs: &cluster_snapshot::Inputs<'_>,
        (help, asked): (&[EquivalenceGroup], &[Vec<EquivalenceGroup>]),
        groups: &mut [Group],
    ) -> ClusterSnapshot {
        let pending = help.iter().chain(asked.iter().flatten());
        let last_dra = self.dra.take();
        let inputs = cluster_snapshot::Inputs {
            last_dra: last_dra.as_deref(),
            ..*inputs
        };
        let snapshot = planning(|| ClusterSnapshot::build(&inputs, pending, groups));
        self.dra = snapshot.dra.clone();
        snapshot
    }

    /// The pending pods in equivalence groups, on labels projected onto the keys some selector reads (and
    /// Fargate's profiles, in the namespaces they take); Fargate's pods reported in `status` with their
    /// profile and price.
    async fn group_pods(
        &mut self,
        pods: PodList<'_>,
        sorted: &mut Sorted,
        read: &mut Read,
        status: &mut Status,
    ) -> Grouped {
        let profiles = std::mem::replace(&mut read.profiles, Ok(None));
        let profiles = profiles.unwrap_or_else(|e| {
            status.errors.push(LoopProblem::new(
                LoopStage::Fargate,
                ProblemKind::ProviderCall,
                format!("Fargate: {e}"),
            ));
            None
        });
        let in_use = profiles.as_deref().map(Vec::as_slice);
        let selecting = sorted.selecting.iter().map(|&i| pods.get(i));
        let projection = LabelProjection::of(selecting, []);
        let projection = match in_use {
            Some(profiles) => projection.scoped(
                fargate_label_keys(profiles),
                fargate_namespaces(profiles, pods),
            ),
            None => projection,
        };
        let help = group_pods(pods, std::mem::take(&mut sorted.to_help), &projection);
        let on_fargate = group_pods(pods, std::mem::take(&mut sorted.fargate), &projection);
        let client = &self.client;
        let found = (self.fargate).report(client, in_use, pods, &on_fargate, &help);
        let found = found.await;
        status.fargate = found.pods;
        status.problems(LoopStage::Fargate, ProblemKind::ProviderCall, found.errors);
        Grouped {
            help,
            projection,
            profiles,
        }
    }

    /// The ProvisioningRequests not provisioned yet, oldest first, each all or nothing on a fork of the
    /// snapshot; an atomic one's increase asked for (when acting). Returns the scale-ups made for them.
    async fn provision(
        &mut self,
        requests: &mut Requests,
        (snapshot, groups, asked, expander): ProvisionStage<'_, '_>,
        view: &ClusterView,
        pods: PodList<'_>,
        now: SystemTime,
    ) -> Result<Vec<ScaleUp>, LoopError> {
        let world = provision::ProvisionWorld {
            snapshot,
            groups,
            pods,
            keys: view.pod_keys(),
            asked,
            limits: &self.settings.limits,
            expander,
        };
        let acting = self.settings.act.then_some(Executor {
            client: &self.client,
            state: &mut self.state,
            last_scale_up: self.down.last_scale_up(),
        });
        Ok(provision::provision(requests, world, acting, now).await?)
    }

    /// Cluster state: Refresh, every group as the provider says it (the Fargate profiles beside them), which
    /// group each node is in, the deletions and replacements in progress one step on, and what is registered
    /// and coming; instances that never registered are removed.
    async fn cluster_state(
        &mut self,
        view: &ClusterView,
        on_nodes: usize,
        disruption: Option<&DisruptionConfig>,
        now: SystemTime,
    ) -> Result<(Read, Vec<Group>), LoopError> {
        self.degradation.progress.beat();
        self.client.refresh().await?;
        self.state.backoff.forget_old(now);
        // The leaving instances are asked with the groups, not after them: the leaving stage reads them from
        // the client's cache (or asks again, and reports, when this asking failed), so that the loop waits on
        // one round of calls here, not two.
        let (facts, profiles, _) = futures::join!(
            cluster_state::read_groups(&self.client, self.settings.group_defaults()),
            self.client.fargate_profiles(),
            self.client.leaving_instances()
        );
        let mut facts = facts?;
        let schedules = SizesInForce::apply(disruption, &mut facts, now);
        let node_group = cluster_state::groups_of_nodes(&self.client, view, &facts).await?;
        let deletions = self.deletions_in_progress(view, &facts, on_nodes, now);
        let (deleting, mut report) = deletions.await;
        let startup = self.settings.max_node_startup_time;
        let (mut groups, counts) = self.state.count(startup, view, &facts, &node_group, now);
        schedules.hold(&mut groups);
        if self.settings.remove_unregistered {
            let late = match self.settings.act {
                true => LateInstances::Delete,
                false => LateInstances::BackOffOnly,
            };
            let unregistered =
                (self.state).remove_long_unregistered(&self.client, late, &facts, now);
            report.errors.extend(unregistered.await);
        }
        let read = Read {
            facts,
            profiles,
            node_group,
            deleting,
            counts,
            report,
            schedules,
        };
        Ok((read, groups))
    }

    /// Health: groups whose nodes are mostly unready are skipped for scale-up; an unhealthy cluster ends the
    /// loop, as upstream's does, and unneeded timers start again once its nodes are back.
    fn health(
        &mut self,
        view: &ClusterView,
        read: &Read,
        groups: &mut [Group],
        now: SystemTime,
    ) -> ClusterHealth {
        let judge = Judge {
            settings: self.settings.health,
            max_node_startup_time: self.settings.max_node_startup_time,
            now,
        };
        judge.skip_unhealthy_groups(groups, &view.nodes, &read.node_group);
        let health = judge.cluster(&view.nodes);
        if !health.healthy {
            self.down.forget_unneeded();
        }
        health
    }

    /// The view is checked (`on_nodes` pods on nodes, DaemonSet pods aside); our deletions take their next
    /// step, unless the view lost its pods (and our ToBeDeleted taints an earlier run left come off, once);
    /// the replacements waiting for their new node are followed. Returns the nodes on their way out (ours,
    /// and any carrying the ToBeDeleted taint: ours from an earlier run that was not just removed, or another
    /// autoscaler's), and what happened.
    async fn deletions_in_progress(
        &mut self,
        view: &ClusterView,
        facts: &[GroupFacts],
        on_nodes: usize,
        now: SystemTime,
    ) -> (HashSet<String>, Report) {
        self.down.check_view(on_nodes, facts, now);
        let mut restored = HashSet::new();
        let mut report = Report::default();
        if let Some(cluster) = self.actor() {
            let cx = context(&self.settings, &self.client, Some(cluster.clone()));
            let stale = self.down.remove_stale_taints(&*cluster, view, facts).await;
            (restored, report) = stale;
            let advanced = (self.down)
                .advance_deletions(&cx, &*cluster, view, facts, now)
                .await;
            report.merge(advanced);
        }
        // Replacements waiting for their new node: which is theirs, whether it is Ready, or too late.
        let replacements = self.down.replacements();
        let mode = if self.settings.act {
            WatchMode::Act
        } else {
            WatchMode::PlanOnly
        };
        report.merge(
            replacements
                .watch(&self.client, mode, view, facts, now)
                .await,
        );
        for (group, why) in std::mem::take(&mut report.backoffs) {
            self.state.backoff.fail(&group, why, now);
        }
        let deleting = (view.nodes.iter())
            .filter(|n| {
                self.down.deleting(&n.name)
                    || n.tainted(TO_BE_DELETED_TAINT) && !restored.contains(&n.name)
            })
            .map(|n| n.name.clone())
            .collect();
        (deleting, report)
    }

    /// The pods by what the loop does with them; pods too young to scale up for wait (and are said), when
    /// that is on.
    fn classify(&self, view: &ClusterView, pods: PodList<'_>, now: SystemTime) -> Sorted {
        let node_names: FastSet<&str> = view.nodes.iter().map(|n| n.name.as_str()).collect();
        let cutoff = self.settings.expendable_pods_priority_cutoff;
        let mut sorted = classify::sort_pods(pods, &node_names, cutoff);
        if self.settings.wait_for_new_pods {
            let delay = self.settings.new_pod_scale_up_delay;
            let candidates = std::mem::take(&mut sorted.to_help);
            let (old, young) = classify::old_enough(pods, candidates, delay, now);
            sorted.to_help = old;
            sorted.said.extend(young);
        }
        sorted
    }

    /// Upstream's batching: while new pods keep coming, scale-up waits one loop for more and plans nothing;
    /// each pod that waits is said in `said`. Returns why it waits (scale-down waits too). A degraded loop
    /// whose turn is scale-down's plans no scale-up either (and scale-down goes on).
    fn batching(
        &self,
        pending: &mut Pending,
        now: SystemTime,
        said: &mut Vec<NoScaleUp>,
    ) -> Option<String> {
        if !self.degradation.loops.scales_up() {
            record::scale_down_turn(pending, said);
            return None;
        }
        if !self.settings.wait_for_new_pods {
            return None;
        }
        let why = classify::batching(pending, now)?;
        said.extend(pending.left_over(|_| BTreeMap::from([(String::new(), why.clone())])));
        pending.done = pending.groups.iter().map(|g| g.pods.len()).collect();
        Some(format!("scale-up is {why}"))
    }

    /// The expander chain for this loop, with prices when it needs them; a pricing failure leaves the price
    /// expander out of this loop (the error returned beside it), and the rest of the chain decides.
    async fn expander(
        &mut self,
        profiles: Option<&[FargateProfile]>,
        groups: &mut [Group],
        pending: &mut Pending<'_>,
    ) -> (Expander, Option<String>) {
        let expander = &self.settings.expander;
        if !expander.needs_prices() {
            return (expander.clone(), None);
        }
        let profiles = profiles.unwrap_or_default();
        match (self.prices)
            .price(&self.client, profiles, groups, pending)
            .await
        {
            Ok(()) => (expander.clone(), None),
            Err(e) => {
                let why = format!("pricing, the price expander is skipped: {e}");
                (expander.without_price(), Some(why))
            }
        }
    }

    /// Scale-up: the plan over the snapshot (each expansion committed into it, so scale-down sees it), then
    /// each scale-up asked for (when acting); a refusal backs the group off and is recorded in the scale-up.
    async fn scale_up(
        &mut self,
        snapshot: &mut ClusterSnapshot,
        groups: &[Group],
        pending: &mut Pending<'_>,
        expander: &Expander,
        now: SystemTime,
    ) -> Result<scaleup::ScaleUpPlan, LoopError> {
        let totals = snapshot.totals();
        let ClusterSnapshot {
            topology, places, ..
        } = snapshot;
        let limits = &self.settings.limits;
        let orchestrator = scaleup::ScaleUpOrchestrator {
            groups,
            limits,
            expander,
            totals,
        };
        let mut plan = planning(|| orchestrator.plan(topology, places, pending))?;
        if !self.settings.act {
            return Ok(plan);
        }
        let mut executor = Executor {
            client: &self.client,
            state: &mut self.state,
            last_scale_up: self.down.last_scale_up(),
        };
        executor.execute(&mut plan.scale_ups, groups, now).await;
        Ok(plan)
    }

    /// The scale-ups that take groups up to their scheduled min (beyond `planned`), asked for when acting.
    async fn raise_to_min(
        &mut self,
        schedules: &SizesInForce,
        groups: &[Group],
        planned: &[ScaleUp],
        now: SystemTime,
    ) -> Vec<ScaleUp> {
        let mut raised = schedules.raise_to_min(groups, planned);
        if self.settings.act && !raised.is_empty() {
            let mut executor = Executor {
                client: &self.client,
                state: &mut self.state,
                last_scale_up: self.down.last_scale_up(),
            };
            executor.execute(&mut raised, groups, now).await;
        }
        raised
    }

    /// Scale-down (and consolidation): decided over the snapshot scale-up left, then carried out. Returns
    /// its report; the groups it backs off are backed off here.
    async fn scale_down(&mut self, stage: ScaleDownStage<'_>, now: SystemTime) -> Report {
        self.degradation.progress.beat();
        let ScaleDownStage {
            view,
            pods,
            mut snapshot,
            read,
            groups,
            scale_ups,
            priced,
            projection,
            paused,
            disruption,
            leaving,
        } = stage;
        let mut report = Report::default();
        if self.settings.consolidation.replaces()
            && !priced
            && let Err(e) = pricing::node_prices(&self.client, groups).await
        {
            let why = format!("pricing, consolidation has no prices: {e}");
            report.errors.push(why);
        }
        let grown: HashMap<String, u64> = (scale_ups.iter())
            .filter(|s| s.error.is_none())
            .map(|s| (s.node_group.clone(), s.delta))
            .collect();
        let mut cx = context(&self.settings, &self.client, self.actor());
        cx.disruption = disruption;
        cx.quotas = snapshot.quotas.clone();
        let ClusterSnapshot {
            topology,
            places,
            on_node,
            ..
        } = &mut snapshot;
        let scene = Scene {
            view,
            pods,
            facts: &read.facts,
            fleet: Fleet {
                groups,
                grown: &grown,
            },
            node_group: &read.node_group,
            on_node,
            deleting: &read.deleting,
            leaving,
            projection,
            paused,
            schedules: &read.schedules,
            now,
        };
        let decision = self.down.decide(&cx, &scene, topology, places);
        let ground = CarryGround {
            view,
            deleting: &read.deleting,
            facts: &read.facts,
            now,
        };
        let done = self.down.carry_out(&cx, &ground, decision);
        report.merge(done.await);
        for (group, why) in std::mem::take(&mut report.backoffs) {
            self.state.backoff.fail(&group, why, now);
        }
        report
    }
}
