//! Cluster state, as cluster-autoscaler's clusterstate registry keeps it: every node group's size, instances,
//! template, zones, EKS state and options as the provider says them this loop; which group each node is in;
//! what is registered and what is still coming; instances that failed to start or never registered, and the
//! backoff they earn their group. Only instances seen this loop are remembered.

use crate::autoscaler::client::{ClientError, ProviderClient};
use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::clusterstate::backoff::GroupBackoff;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::k8s::node_from_pb;
use crate::model::{FastMap, FastSet, GroupOptions};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// Why a group at its max size is not scaled up (upstream's words); a scheduled max says its own.
pub const MAX_SIZE_REACHED: &str = "max node group size reached";

#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub registered: usize,
    pub upcoming: usize,
    /// Its instances without a node yet (indices into the group's `instances`): where upcoming nodes are.
    pub unregistered: Vec<usize>,
}

/// What the loop remembers of instances between iterations, and the backoff of groups.
pub struct ClusterState {
    pub backoff: GroupBackoff,
    /// Instance ids whose creation error was already counted against their group.
    failed_instances: HashSet<String>,
    /// When each instance without a node was first seen.
    unregistered_since: HashMap<String, SystemTime>,
    /// The all-or-nothing increases asked for and not yet whole: the target asked of each group, and when.
    atomic: HashMap<String, (i32, SystemTime)>,
}

impl ClusterState {
    pub fn new(backoff: GroupBackoff) -> ClusterState {
        ClusterState {
            backoff,
            failed_instances: HashSet::new(),
            unregistered_since: HashMap::new(),
            atomic: HashMap::new(),
        }
    }

    /// An all-or-nothing increase of `group` to `target` was taken by the provider: until the group has that
    /// many nodes, a target set back below it is a failed scale-up.
    pub fn increased_atomically(&mut self, group: &str, target: i32, now: SystemTime) {
        self.atomic.insert(group.to_string(), (target, now));
    }

    /// Backs off the groups whose all-or-nothing increase the provider set back (not all of it launched in
    /// its provisioning time), as a failed scale-up is, unless a failed instance already did; forgets the
    /// increases that are whole, or older than twice the provisioning time.
    fn atomic_set_back(&mut self, f: &GroupFacts, registered: usize, now: SystemTime) {
        let Some(&(asked, at)) = self.atomic.get(&f.group.id) else {
            return;
        };
        let whole = registered >= usize::try_from(asked).unwrap_or(0);
        let old = now
            .duration_since(at)
            .is_ok_and(|age| age > 2 * f.options.provision);
        if f.target < asked {
            if self.backoff.backed_off(&f.group.id, now).is_none() {
                let why = format!(
                    "the all-or-nothing increase to {asked} was set back by the provider: not all of it \
                     launched within {:?}",
                    f.options.provision
                );
                self.backoff.fail(&f.group.id, why, now);
            }
        } else if !whole && !old {
            return;
        }
        self.atomic.remove(&f.group.id);
    }

    /// Per group: registered nodes and what is still coming; instances that failed to start back the group
    /// off, instances without a node start their provision timer. Returns the groups as the planner sees them.
    pub fn count(
        &mut self,
        max_node_startup_time: Duration,
        view: &ClusterView,
        facts: &[GroupFacts],
        node_group: &[Option<usize>],
        now: SystemTime,
    ) -> (Vec<Group>, Vec<Counts>) {
        let mut counts = vec![Counts::default(); facts.len()];
        for (node, g) in view.nodes.iter().zip(node_group) {
            let Some(gi) = *g else { continue };
            // A node still starting is represented by an upcoming node, as upstream does.
            if !node.starting(now, max_node_startup_time) {
                counts[gi].registered += 1;
            }
        }
        let registered_ids: FastSet<&str> =
            view.nodes.iter().map(|n| n.provider_id.as_str()).collect();
        // Only instances seen this loop are remembered: ids come back (AWS placeholders are
        // `i-placeholder-<asg>-<n>` again after every IncreaseSize), and one gone for a loop is a new one.
        let seen: FastSet<&str> = facts
            .iter()
            .flat_map(|f| &f.instances)
            .map(|i| i.id.as_str())
            .collect();
        // A group the provider could not list this loop keeps its instances' memory until it can.
        if facts
            .iter()
            .all(|f| f.problem.is_none() || !f.instances.is_empty())
        {
            self.failed_instances
                .retain(|id| seen.contains(id.as_str()));
            self.unregistered_since
                .retain(|id, _| seen.contains(id.as_str()));
        }
        let mut groups = Vec::with_capacity(facts.len());
        for (f, c) in facts.iter().zip(&mut counts) {
            self.atomic_set_back(f, c.registered, now);
            let mut failed = 0;
            for (i, instance) in f.instances.iter().enumerate() {
                if !registered_ids.contains(instance.id.as_str()) {
                    c.unregistered.push(i);
                }
                if let Some(error) = instance.error.as_ref().filter(|_| instance.creating()) {
                    failed += 1;
                    if self.failed_instances.insert(instance.id.clone()) {
                        let why = format!(
                            "instance creation failed: {}: {}",
                            error.code, error.message
                        );
                        self.backoff.fail(&f.group.id, why, now);
                    }
                } else if registered_ids.contains(instance.id.as_str()) {
                    self.unregistered_since.remove(&instance.id);
                } else {
                    self.unregistered_since
                        .entry(instance.id.clone())
                        .or_insert(now);
                }
            }
            let failing = f
                .problem
                .clone()
                .or_else(|| self.backoff.backed_off(&f.group.id, now));
            // A backed-off group's requested nodes may never come: do not count on them.
            c.upcoming = if failing.is_some() {
                0
            } else {
                usize::try_from(f.target)
                    .unwrap_or(0)
                    .saturating_sub(c.registered + failed)
            };
            let unavailable = self.backoff.unavailable_now(&f.group.id, now);
            let skip = failing
                .or(unavailable)
                .or_else(|| (f.target >= f.group.max_size).then(|| MAX_SIZE_REACHED.to_string()));
            groups.push(Group {
                id: f.group.id.clone(),
                min_size: f.group.min_size,
                max_size: f.group.max_size,
                target_size: f.target,
                template: None,
                zones: Vec::new(),
                skip,
                node_price: None,
                zero_or_max: f.options.zero_or_max,
                prepaid: 0,
                full: false,
            });
        }
        (groups, counts)
    }

    /// Instances that have not become nodes within `--max-node-provision-time` are deleted (never below the
    /// group's min size) and their group backed off, as cluster-autoscaler does; so are instances the provider
    /// says it could not create (a stockout's placeholders: upstream deletes them in the loop that sees them,
    /// the group already backed off), or they would launch, unasked, whenever capacity frees up. Returns the
    /// removals that failed; with [`LateInstances::BackOffOnly`] (a dry run) the groups are backed off and
    /// nothing is deleted.
    pub async fn remove_long_unregistered(
        &mut self,
        client: &ProviderClient,
        late_instances: LateInstances,
        facts: &[GroupFacts],
        now: SystemTime,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        for f in facts {
            let failed: Vec<&str> = (f.instances.iter())
                .filter(|i| i.creating() && i.error.is_some())
                .map(|i| i.id.as_str())
                .collect();
            let late: Vec<&str> = f
                .instances
                .iter()
                .filter(|i| !failed.contains(&i.id.as_str()))
                .filter(|i| {
                    self.unregistered_since
                        .get(&i.id)
                        .and_then(|since| now.duration_since(*since).ok())
                        .is_some_and(|age| age > f.options.provision)
                })
                .map(|i| i.id.as_str())
                .collect();
            if !late.is_empty() {
                let why = format!(
                    "{} instance(s) did not register within {:?}",
                    late.len(),
                    f.options.provision
                );
                self.backoff.fail(&f.group.id, why, now);
            }
            // EKS is replacing an updating group's nodes: its instances are its to remove, and lowering its
            // target would fight the update.
            if late_instances == LateInstances::BackOffOnly || f.updating() {
                continue;
            }
            // An instance that was never created is no machine: cancelling it takes no node under the min size
            // (the provider allows it); a late instance may be running, so the min size holds for those.
            let removable = usize::try_from(f.target - f.group.min_size).unwrap_or(0);
            let nodes: Vec<(String, String)> = (failed.iter())
                .chain(late.iter().take(removable))
                .map(|id| (String::new(), id.to_string()))
                .collect();
            if nodes.is_empty() {
                continue;
            }
            match client.delete_nodes(&f.group.id, &nodes).await {
                Ok(()) => {
                    for (_, id) in &nodes {
                        self.unregistered_since.remove(id);
                    }
                }
                Err(e) => errors.push(format!(
                    "removing unregistered instances of {}: {e}",
                    f.group.id
                )),
            }
        }
        errors
    }
}

/// What becomes of instances that never registered (or were never created): deleted when the loop acts,
/// or only their groups backed off when it plans (`--dry-run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LateInstances {
    Delete,
    BackOffOnly,
}

/// Every group's size, instances and template, asked concurrently, and every group's zones and EKS state in
/// one call each. A group the provider cannot describe is kept with the problem, so that it is reported and
/// skipped rather than failing the loop.
/// `defaults` are the options of a group the provider gives none for.
pub async fn read_groups(
    client: &ProviderClient,
    defaults: GroupOptions,
) -> Result<Vec<GroupFacts>, ClientError> {
    let groups = client.node_groups().await?;
    // Every call of this stage is independent of the others: they go out together.
    let reads = groups.iter().map(|group| async move {
        let read = futures::future::try_join4(
            client.target_size(&group.id),
            client.nodes(&group.id),
            client.template_node_info(&group.id),
            client.group_options(&group.id, defaults),
        );
        match read.await {
            Ok((target, instances, info, options)) => {
                let (template, problem) = match info.as_ref().map(|t| node_from_pb(&t.node)) {
                    None => (None, None),
                    Some(Ok(node)) => (Some(Arc::new(node)), None),
                    Some(Err(e)) => (None, Some(format!("template: {e}"))),
                };
                // Field 3: what cluster-autoscaler 1.37 reads, from any provider that fills it.
                let own_slices =
                    info.map(|t| t.resource_slices.iter().cloned().map(Arc::new).collect());
                GroupFacts {
                    group: group.clone(),
                    target,
                    instances,
                    template,
                    template_slices: own_slices.unwrap_or_default(),
                    zones: Vec::new(),
                    state: None,
                    options,
                    problem,
                }
            }
            Err(e) => GroupFacts {
                problem: Some(e.to_string()),
                group: group.clone(),
                target: 0,
                instances: Vec::new(),
                template: None,
                template_slices: Vec::new(),
                zones: Vec::new(),
                state: None,
                options: defaults,
            },
        }
    });
    let (zones, states, slices, mut facts) = futures::join!(
        client.zones(),
        client.node_group_states(),
        client.extension_template_slices(),
        futures::future::join_all(reads)
    );
    // Zones are an extension: without them every new node is planned in its template's zone.
    let zones = zones.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "node group zones unknown this loop");
        None
    });
    // So are the groups' EKS states: without them no group is known to be updating.
    let states = states.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "node group states unknown this loop");
        None
    });
    // And the slices of the groups' new nodes, for a group whose template carries none (a provider that
    // does not fill field 3): without either no group at zero offers devices.
    let slices = slices.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "node group template ResourceSlices unknown this loop");
        None
    });
    for f in &mut facts {
        if f.template_slices.is_empty()
            && let Some(of_group) = slices.as_ref().and_then(|s| s.get(&f.group.id))
        {
            f.template_slices = of_group.iter().cloned().map(Arc::new).collect();
        }
        f.zones = zones
            .as_ref()
            .and_then(|z| z.get(&f.group.id).cloned())
            .unwrap_or_default();
        f.state = states.as_ref().and_then(|s| s.get(&f.group.id).cloned());
    }
    Ok(facts)
}

/// Which group each node belongs to: by providerID from the groups' instances, then by asking.
pub async fn groups_of_nodes(
    client: &ProviderClient,
    view: &ClusterView,
    facts: &[GroupFacts],
) -> Result<Vec<Option<usize>>, ClientError> {
    let mut group_of_instance: FastMap<&str, usize> = FastMap::default();
    for (gi, f) in facts.iter().enumerate() {
        for instance in &f.instances {
            group_of_instance.insert(instance.id.as_str(), gi);
        }
    }
    let index_of: HashMap<&str, usize> = facts
        .iter()
        .enumerate()
        .map(|(i, f)| (f.group.id.as_str(), i))
        .collect();
    let mut node_group = Vec::with_capacity(view.nodes.len());
    for node in &view.nodes {
        let found = match group_of_instance.get(node.provider_id.as_str()) {
            Some(&gi) => Some(gi),
            None if node.provider_id.is_empty() => None,
            None => client
                .node_group_for_node(&node.name, &node.provider_id)
                .await?
                .and_then(|g| index_of.get(g.id.as_str()).copied()),
        };
        node_group.push(found);
    }
    Ok(node_group)
}
