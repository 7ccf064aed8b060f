//! One iteration of the loop (cluster-autoscaler's RunOnce): Refresh, read the node groups, count what is
//! coming, find the pods that need help, set Fargate pods aside, place what fits where it already is or will
//! be, plan scale-ups for the rest, act (unless dry), and record why for every pod.

use super::backoff::{Backoff, BackoffSettings};
use super::classify;
use super::client::{ClientError, ProviderClient};
use super::cluster::{ClusterSource, ClusterView};
use super::cluster_state::{self, ClusterState};
use super::expander::Expander;
use super::fargate::FargateAnswers;
use super::headroom::{self, Capacity, Policy};
use super::pricing::PriceBook;
use super::scaledown;
use super::scaledown_policy::{Context, ScaleDownPolicy};
use super::scaleup::{self, Limits, Pending, Totals};
use super::status::{GroupStatus, HeadroomStatus, NoScaleUp, Placed, Status};
use super::zones;
use crate::model::fargate;
use crate::model::node::ZONE_LABEL;
use crate::model::pod::LabelProjection;
use crate::model::taint::TO_BE_DELETED_TAINT;
use crate::model::{Node, Pod};
use crate::simulator::equivalence;
use crate::simulator::world::{self, Place, PlaceKind, PodTerms, Topology};
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
            backoff: BackoffSettings::default(),
            act: false,
            remove_unregistered: false,
            wait_for_new_pods: false,
            new_pod_scale_up_delay: Duration::ZERO,
            scale_down: scaledown::Settings::default(),
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

    /// One iteration over `view`, at `now` (the view's own time for a snapshot).
    pub async fn run(&mut self, view: &ClusterView, now: SystemTime) -> Result<Status, LoopError> {
        let started = Instant::now();
        let mut status = Status::default();
        self.client.refresh().await?;
        self.state.backoff.forget_old(now);
        // Fargate profiles are read beside the groups; without them no pod is set aside for Fargate.
        let (facts, profiles) = futures::join!(
            cluster_state::read_groups(&self.client, &self.settings),
            self.client.fargate_profiles()
        );
        let facts = facts?;
        let node_group = cluster_state::groups_of_nodes(&self.client, view, &facts).await?;
        let mut restored = HashSet::new();
        if let Some(cluster) = self.actor() {
            let cx = Context {
                settings: &self.settings,
                client: &self.client,
                actor: Some(cluster.clone()),
            };
            restored = self
                .down
                .remove_stale_taints(&*cluster, view, &facts, &mut status)
                .await;
            self.down
                .advance_deletions(&cx, &*cluster, view, now, &mut status)
                .await;
        }
        // Nodes on their way out: ours, and any carrying the ToBeDeleted taint (ours from an earlier run
        // that was not just removed, or another autoscaler's).
        let deleting: HashSet<String> = view
            .nodes
            .iter()
            .filter(|n| {
                self.down.deleting(&n.name)
                    || n.tainted(TO_BE_DELETED_TAINT) && !restored.contains(&n.name)
            })
            .map(|n| n.name.clone())
            .collect();
        let startup = self.settings.max_node_startup_time;
        let (mut groups, counts) = self.state.count(startup, view, &facts, &node_group, now);
        if self.settings.remove_unregistered {
            let act = self.settings.act;
            self.state
                .remove_long_unregistered(&self.client, act, &facts, now, &mut status)
                .await;
        }

        // Headroom's virtual pods go after the real ones, so real pods keep their indices.
        let reserved = self.headroom(view, &mut status);
        let combined: Vec<Pod>;
        let pods: &[Pod] = if reserved.is_empty() {
            &view.pods
        } else {
            combined = view.pods.iter().cloned().chain(reserved).collect();
            &combined
        };
        let node_names: HashSet<&str> = view.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut sorted = classify::sort_pods(
            pods,
            &node_names,
            self.settings.expendable_pods_priority_cutoff,
            &mut status,
        );
        if self.settings.wait_for_new_pods {
            sorted.to_help = classify::old_enough(
                pods,
                sorted.to_help,
                self.settings.new_pod_scale_up_delay,
                now,
                &mut status,
            );
        }
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
        let report = self
            .fargate
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

        // The world: the nodes with their pods, each group's template with its DaemonSet pods, and the
        // nodes already requested.
        let exemplars: Vec<&Pod> = help_groups.iter().map(|eg| eg.exemplar(pods)).collect();
        let (mut topology, mut places) = planning(|| {
            world::build(
                &view.nodes,
                &node_group,
                pods,
                &sorted.bound,
                &exemplars,
                &projection,
            )
        });
        for (place, node) in places.iter_mut().zip(view.nodes.iter()) {
            if deleting.contains(&node.name) {
                place.accepts = false;
            }
        }
        let mut on_node = pods_on_nodes(view, pods, &sorted.bound);
        let daemonsets = daemonset_exemplars(pods, &view.daemonsets);
        let registered: HashSet<&str> = view.nodes.iter().map(|n| n.provider_id.as_str()).collect();
        for (gi, f) in facts.iter().enumerate() {
            let Some(node) = &f.template else { continue };
            let template = template_place(&mut topology, node, gi, &daemonsets);
            let variants: Vec<Place> = zones::templates(node, &f.zones)
                .iter()
                .map(|n| template_place(&mut topology, n, gi, &daemonsets))
                .collect();
            if variants.is_empty() {
                for _ in 0..counts[gi].upcoming {
                    places.push(topology.copy(&template, PlaceKind::Upcoming));
                }
            } else {
                // Upcoming nodes where their instances are, or where the group will launch them.
                let names: Vec<&str> = variants
                    .iter()
                    .map(|v| v.node.labels[ZONE_LABEL].as_str())
                    .collect();
                let mut per_zone = vec![0u64; names.len()];
                for (n, g) in view.nodes.iter().zip(&node_group) {
                    let zone = n.labels.get(ZONE_LABEL).map(String::as_str);
                    if *g == Some(gi)
                        && let Some(z) = names.iter().position(|name| Some(*name) == zone)
                    {
                        per_zone[z] += 1;
                    }
                }
                let coming = f
                    .instances
                    .iter()
                    .filter(|i| !registered.contains(i.id.as_str()))
                    .filter_map(|i| zones::of_instance(&i.id));
                for z in zones::upcoming(&names, &mut per_zone, coming, counts[gi].upcoming) {
                    places.push(topology.copy(&variants[z], PlaceKind::Upcoming));
                }
            }
            groups[gi].template = Some(template);
            groups[gi].zones = variants;
        }

        // Pods that fit where they are or where nodes are coming need nothing new.
        let terms: Vec<PodTerms> = help_groups
            .iter()
            .map(|eg| topology.resolve(eg.exemplar(pods)))
            .collect();
        let mut done = vec![0usize; help_groups.len()];
        for (e, eg) in help_groups.iter().enumerate() {
            let placed = planning(|| {
                world::place_all(&mut topology, &mut places, pods, &eg.pods, &terms[e])
            });
            for (k, p) in placed.into_iter().enumerate() {
                let place = &places[p];
                if place.kind == PlaceKind::Existing {
                    // Scale-down must find these a place too, as upstream's snapshot holds them there.
                    on_node[p].push(eg.pods[k]);
                }
                status.placed.push(Placed {
                    pod: pods[eg.pods[k]].key(),
                    node: match place.kind {
                        PlaceKind::Existing => place.node.name.clone(),
                        _ => "upcoming".into(),
                    },
                    node_group: place.group.map(|g| groups[g].id.clone()),
                });
                done[e] += 1;
            }
        }

        // Plan for the rest.
        let totals = places.iter().fold(Totals::default(), |t, p| Totals {
            nodes: t.nodes + 1,
            cpu_millis: t.cpu_millis + p.node.capacity.cpu_millis,
            memory_bytes: t.memory_bytes + p.node.capacity.memory_bytes,
        });
        let mut pending = Pending {
            pods,
            prices: vec![None; help_groups.len()],
            groups: help_groups,
            terms,
            done,
            stabilizer: 0.0,
        };
        let mut paused = None;
        if self.settings.wait_for_new_pods
            && let Some(why) = classify::batching(&pending, now)
        {
            paused = Some(format!("scale-up is {why}"));
            // Wait one loop for more pods, as upstream does; nothing is planned.
            for (e, eg) in pending.groups.iter().enumerate() {
                for &p in &eg.pods[pending.done[e]..] {
                    status.no_scale_up.push(NoScaleUp {
                        pod: pods[p].key(),
                        reasons: BTreeMap::from([(String::new(), why.clone())]),
                    });
                }
            }
            pending.done = pending.groups.iter().map(|g| g.pods.len()).collect();
        }
        let mut expander = std::borrow::Cow::Borrowed(&self.settings.expander);
        if expander.needs_prices() {
            let profiles = profile_list.unwrap_or_default();
            let priced = self
                .prices
                .price(&self.client, profiles, &mut groups, &mut pending)
                .await;
            if let Err(e) = priced {
                // The price expander sits this loop out; the rest of the chain decides.
                status
                    .errors
                    .push(format!("pricing, the price expander is skipped: {e}"));
                expander = std::borrow::Cow::Owned(expander.without_price());
            }
        }
        let plan = planning(|| {
            scaleup::plan(
                &mut topology,
                &mut places,
                &groups,
                &mut pending,
                &self.settings.limits,
                &expander,
                totals,
            )
        })?;
        status.estimate_ms = plan.estimate_time.as_secs_f64() * 1000.0;
        status.scale_up = plan.scale_ups;
        for (e, eg) in pending.groups.iter().enumerate() {
            for &p in &eg.pods[pending.done[e]..] {
                status.no_scale_up.push(NoScaleUp {
                    pod: pods[p].key(),
                    reasons: plan.reasons[e].clone(),
                });
            }
        }

        if self.settings.act {
            self.act(&mut status, now).await;
        }
        if self.settings.scale_down.enabled {
            let existing = &mut places[..view.nodes.len()];
            let world = (&mut topology, existing);
            let nodes = (node_group.as_slice(), on_node.as_slice(), &deleting);
            let cx = Context {
                settings: &self.settings,
                client: &self.client,
                actor: self.actor(),
            };
            self.down
                .run(
                    &cx,
                    view,
                    pods,
                    &facts,
                    nodes,
                    world,
                    &projection,
                    paused,
                    now,
                    &mut status,
                )
                .await;
        }
        status.node_groups = facts
            .iter()
            .zip(&counts)
            .zip(&groups)
            .map(|((f, c), g)| GroupStatus {
                id: f.group.id.clone(),
                min_size: f.group.min_size,
                max_size: f.group.max_size,
                target_size: f.target,
                registered: c.registered,
                upcoming: c.upcoming,
                skipped: g.skip.clone(),
            })
            .collect();
        headroom_outcome(&mut status);
        status.elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(status)
    }

    /// Asks for each planned scale-up; a refusal backs the group off and is recorded.
    async fn act(&mut self, status: &mut Status, now: SystemTime) {
        for scale_up in &mut status.scale_up {
            let delta = i32::try_from(scale_up.delta).unwrap_or(i32::MAX);
            let result = self.client.increase_size(&scale_up.node_group, delta).await;
            if result.is_ok() {
                self.down.last_scale_up = Some(now);
            }
            if let Err(error) = result {
                let why = error.to_string();
                self.state
                    .backoff
                    .fail(&scale_up.node_group, why.clone(), now);
                status
                    .errors
                    .push(format!("scale-up of {}: {why}", scale_up.node_group));
                scale_up.error = Some(why);
            }
        }
    }

    /// Headroom's virtual pods for this loop, each policy sized on the cluster as it is now.
    fn headroom(&self, view: &ClusterView, status: &mut Status) -> Vec<Pod> {
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
        pods
    }
}

/// A group's template as a place, with the DaemonSet pods that would run on such a node already on it.
fn template_place(
    topology: &mut Topology,
    node: &Arc<Node>,
    group: usize,
    daemonsets: &[Pod],
) -> Place {
    let mut template = topology.place(node.clone(), Some(group), PlaceKind::Planned);
    for ds in daemonsets {
        if crate::simulator::predicates::node_fit(&ds.scheduling, node).is_ok() {
            template.free = crate::simulator::predicates::minus(template.free, &ds.demand);
            template
                .ports
                .extend(ds.scheduling.host_ports.iter().cloned());
        }
    }
    template
}

/// Where each headroom policy's virtual pods ended up this loop.
fn headroom_outcome(status: &mut Status) {
    for h in &mut status.headroom {
        let mine = |pod: &str| headroom::policy_of(pod) == Some(h.policy.as_str());
        h.placed = status.placed.iter().filter(|p| mine(&p.pod)).count();
        h.scale_up = status
            .scale_up
            .iter()
            .flat_map(|s| &s.pods)
            .filter(|p| mine(p))
            .count();
        h.unmet = status.no_scale_up.iter().filter(|p| mine(&p.pod)).count();
    }
}

/// The pods on each node of the view (bound, or nominated to it), by node index.
fn pods_on_nodes(view: &ClusterView, pods: &[Pod], bound: &[usize]) -> Vec<Vec<usize>> {
    let index: HashMap<&str, usize> = view
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut on_node = vec![Vec::new(); view.nodes.len()];
    for &p in bound {
        let pod = &pods[p];
        let name = pod.node_name.as_deref().or(pod.nominated_node.as_deref());
        if let Some(&n) = name.and_then(|n| index.get(n)) {
            on_node[n].push(p);
        }
    }
    on_node
}

/// One pod per DaemonSet: what each would add to a new node. A running pod is preferred (admission may
/// have changed its requests); DaemonSets with no pod running yet come from their template. A running pod
/// loses the node its controller pinned it to (`matchFields` on `metadata.name`), as upstream's template
/// pods do, so that it asks of a new node only what its DaemonSet asks.
fn daemonset_exemplars(pods: &[Pod], templates: &[Pod]) -> Vec<Pod> {
    let mut seen = HashSet::new();
    pods.iter()
        .filter(|p| p.daemonset())
        .chain(templates)
        .filter(|p| seen.insert(p.controller.as_ref().map(|c| c.uid.as_str())))
        .map(|p| Pod {
            scheduling: Arc::new(p.scheduling.for_any_node()),
            ..p.clone()
        })
        .collect()
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
