//! The embedded simulated EKS: node groups from a scenario, instances with a lifecycle, no AWS account.
//!
//! Instances of `desiredSize` run from the start; instances requested later report `creating` at once and
//! `running` after the group's `provisioningDelay`; deleted ones report `deleting` for `deletionDelay`, then
//! are gone. A group with `availableCapacity` behaves like an Auto Scaling group hitting a stockout: what
//! it cannot launch is listed as placeholder instances with an out-of-resources error, exactly as the AWS
//! backend reports unfulfillable desired capacity, and is launched as soon as capacity frees up.

use super::scenario::{Scenario, SimNodeGroup};
use crate::clock::Clock;
use crate::cloud::backend::{CloudError, NodeGroupBackend};
use crate::cloud::fargate::FargateRates;
use crate::cloud::instance_types;
use crate::cloud::node_group::{
    Instance, InstanceError, InstanceErrorClass, InstanceState, NodeGroupSpec,
};
use crate::model::FargateProfile;
use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The error code of placeholder instances, the same as the AWS provider's.
pub const PLACEHOLDER_ERROR_CODE: &str = "placeholder-cannot-be-fulfilled";

pub struct SimulatedEks {
    clock: Clock,
    specs: Vec<Arc<NodeGroupSpec>>,
    by_id: HashMap<String, usize>,
    fargate_profiles: Vec<FargateProfile>,
    fargate_rates: FargateRates,
    state: Mutex<State>,
}

struct State {
    groups: Vec<Group>,
    /// Instance id -> index of its group, for NodeGroupForNode.
    index: HashMap<String, usize>,
    rng: StdRng,
}

struct Group {
    config: SimNodeGroup,
    target: i32,
    /// Real instances, deleting ones included until they are gone.
    instances: Vec<SimInstance>,
}

struct SimInstance {
    id: String,
    zone: usize,
    running_at: Duration,
    deleting_since: Option<Duration>,
}

impl SimInstance {
    fn state(&self, now: Duration) -> InstanceState {
        match self.deleting_since {
            Some(_) => InstanceState::Deleting,
            None if now >= self.running_at => InstanceState::Running,
            None => InstanceState::Creating,
        }
    }
}

impl SimulatedEks {
    /// A simulated EKS serving `scenario`, with its clock.
    pub fn new(scenario: Scenario, clock: Clock) -> SimulatedEks {
        let specs: Vec<_> = scenario
            .node_groups
            .iter()
            .map(|g| g.spec.clone())
            .collect();
        let by_id = specs
            .iter()
            .enumerate()
            .map(|(i, s)| (s.id.clone(), i))
            .collect();
        let mut state = State {
            groups: Vec::with_capacity(specs.len()),
            index: HashMap::new(),
            rng: StdRng::seed_from_u64(scenario.seed),
        };
        for config in scenario.node_groups {
            let target = config.desired_size;
            state.groups.push(Group {
                config,
                target,
                instances: Vec::new(),
            });
            let idx = state.groups.len() - 1;
            // The scenario's desired instances are already running when the provider starts.
            state.launch(idx, Duration::ZERO, Duration::ZERO);
        }
        SimulatedEks {
            clock,
            specs,
            by_id,
            fargate_profiles: scenario.fargate_profiles,
            fargate_rates: scenario.fargate_rates,
            state: Mutex::new(state),
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Sets how many instances group `id` may have (`None`: no limit), as a spot pool that dries up or frees
    /// up. Capacity asked for and not launched launches at the next look; running instances stay.
    pub fn set_available_capacity(
        &self,
        id: &str,
        available: Option<u32>,
    ) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, _) = self.settled(idx);
        state.groups[idx].config.available_capacity = available;
        Ok(())
    }

    fn group_index(&self, id: &str) -> Result<usize, CloudError> {
        self.by_id
            .get(id)
            .copied()
            .ok_or_else(|| CloudError::NodeGroupNotFound(id.to_string()))
    }

    /// Locks the state with group `idx` brought up to the clock's present.
    fn settled(&self, idx: usize) -> (MutexGuard<'_, State>, Duration) {
        let now = self.clock.now();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state.settle(idx, now);
        (state, now)
    }
}

impl State {
    /// Sets group `idx`'s target and launches what it asks for and capacity allows.
    fn set_target(&mut self, idx: usize, now: Duration, target: i32) -> Result<(), CloudError> {
        let group = &mut self.groups[idx];
        if target < 0 || (target as usize) < group.live() {
            return Err(CloudError::FailedPrecondition(format!(
                "target {target} is below the {} existing instances",
                group.live()
            )));
        }
        group.target = target;
        let delay = group.config.provisioning_delay;
        self.launch(idx, now, delay);
        Ok(())
    }

    /// Removes instances whose deletion finished and launches what the target asks for and capacity allows.
    fn settle(&mut self, idx: usize, now: Duration) {
        let group = &mut self.groups[idx];
        let delay = group.config.deletion_delay;
        let index = &mut self.index;
        group
            .instances
            .retain(|instance| match instance.deleting_since {
                Some(since) if now >= since + delay => {
                    index.remove(&instance.id);
                    false
                }
                _ => true,
            });
        let delay = group.config.provisioning_delay;
        self.launch(idx, now, delay);
    }

    /// Launches instances until the group has its target or no capacity is left, each in the zone with
    /// the fewest instances, as Auto Scaling balances zones.
    fn launch(&mut self, idx: usize, now: Duration, provisioning_delay: Duration) {
        let group = &self.groups[idx];
        let live = group.live();
        let capacity = group
            .config
            .available_capacity
            .map_or(usize::MAX, |c| c as usize);
        let wanted = usize::try_from(group.target)
            .unwrap_or(0)
            .saturating_sub(live);
        let room = capacity.saturating_sub(group.instances.len());
        for _ in 0..wanted.min(room) {
            let group = &self.groups[idx];
            let mut per_zone = vec![0usize; group.config.zones.len()];
            for instance in group
                .instances
                .iter()
                .filter(|i| i.deleting_since.is_none())
            {
                per_zone[instance.zone] += 1;
            }
            let zone = (0..per_zone.len())
                .min_by_key(|&z| per_zone[z])
                .unwrap_or(0);
            let id = loop {
                let id = format!(
                    "aws:///{}/i-{:017x}",
                    group.config.zones[zone],
                    self.rng.random::<u128>() & ((1 << 68) - 1)
                );
                if !self.index.contains_key(&id) {
                    break id;
                }
            };
            self.index.insert(id.clone(), idx);
            self.groups[idx].instances.push(SimInstance {
                id,
                zone,
                running_at: now + provisioning_delay,
                deleting_since: None,
            });
        }
    }
}

impl Group {
    /// Instances not being deleted.
    fn live(&self) -> usize {
        self.instances
            .iter()
            .filter(|i| i.deleting_since.is_none())
            .count()
    }

    /// Requested capacity the cloud could not launch.
    fn placeholders(&self) -> usize {
        usize::try_from(self.target)
            .unwrap_or(0)
            .saturating_sub(self.live())
    }

    fn placeholder_id(&self, n: usize) -> String {
        let zone = &self.config.zones[n % self.config.zones.len()];
        format!("aws:///{zone}/i-placeholder-{}-{n}", self.config.spec.id)
    }

    fn is_placeholder(&self, id: &str) -> bool {
        (0..self.placeholders()).any(|n| self.placeholder_id(n) == id)
    }
}

/// The group name inside a placeholder id `aws:///<az>/i-placeholder-<group>-<n>`.
fn placeholder_group(id: &str) -> Option<&str> {
    let (_, rest) = id.strip_prefix("aws:///")?.split_once('/')?;
    let (group, n) = rest.strip_prefix("i-placeholder-")?.rsplit_once('-')?;
    n.parse::<usize>().ok().map(|_| group)
}

#[async_trait]
impl NodeGroupBackend for SimulatedEks {
    fn name(&self) -> &'static str {
        "sim"
    }

    async fn refresh(&self) -> Result<(), CloudError> {
        let now = self.clock.now();
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for idx in 0..state.groups.len() {
            state.settle(idx, now);
        }
        Ok(())
    }

    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>> {
        self.specs.clone()
    }

    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>> {
        self.by_id.get(id).map(|&idx| self.specs[idx].clone())
    }

    fn node_group_of(&self, instance_id: &str) -> Option<String> {
        let state = self
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&idx) = state.index.get(instance_id) {
            return Some(self.specs[idx].id.clone());
        }
        let group = placeholder_group(instance_id)?;
        let idx = *self.by_id.get(group)?;
        state.groups[idx]
            .is_placeholder(instance_id)
            .then(|| group.to_string())
    }

    fn target_size(&self, id: &str) -> Result<i32, CloudError> {
        let idx = self.group_index(id)?;
        let (state, _) = self.settled(idx);
        Ok(state.groups[idx].target)
    }

    fn instances(&self, id: &str) -> Result<Vec<Instance>, CloudError> {
        let idx = self.group_index(id)?;
        let (state, now) = self.settled(idx);
        let group = &state.groups[idx];
        let mut instances: Vec<_> = group
            .instances
            .iter()
            .map(|i| Instance {
                id: i.id.clone(),
                state: i.state(now),
                placeholder: false,
                error: None,
            })
            .collect();
        let placeholders = group.placeholders();
        instances.extend((0..placeholders).map(|n| Instance {
            id: group.placeholder_id(n),
            state: InstanceState::Creating,
            placeholder: true,
            error: Some(InstanceError {
                class: InstanceErrorClass::OutOfResources,
                code: PLACEHOLDER_ERROR_CODE.into(),
                message: format!(
                    "simulated EKS: node group {id} has no capacity for {placeholders} more instance(s) \
                     (availableCapacity {})",
                    group.config.available_capacity.unwrap_or_default()
                ),
            }),
        }));
        Ok(instances)
    }

    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        state.set_target(idx, now, target)
    }

    /// The simulated cloud knows its capacity at once: an increase it cannot launch whole is refused.
    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        let group = &state.groups[idx];
        let delta = usize::try_from(target - group.target).unwrap_or(0);
        if let Some(capacity) = group.config.available_capacity {
            // What was asked for before and still waits for room launches first.
            let free = (capacity as usize)
                .saturating_sub(group.instances.len())
                .saturating_sub(group.placeholders());
            if free < delta {
                return Err(CloudError::Exhausted(format!(
                    "simulated EKS: node group {id} can launch {free} more instance(s) now \
                     (availableCapacity {capacity}), not all {delta}; nothing was changed"
                )));
            }
        }
        state.set_target(idx, now, target)
    }

    async fn delete_instances(&self, id: &str, instance_ids: &[String]) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        let group = &mut state.groups[idx];
        // Check everything before changing anything.
        let mut real = Vec::new();
        let mut placeholders = 0;
        for instance_id in instance_ids {
            if let Some(pos) = group
                .instances
                .iter()
                .position(|i| &i.id == instance_id && i.deleting_since.is_none())
            {
                real.push(pos);
            } else if group.is_placeholder(instance_id) {
                placeholders += 1;
            } else {
                return Err(CloudError::FailedPrecondition(format!(
                    "instance {instance_id} is not a live instance of node group {id}"
                )));
            }
        }
        for pos in real.iter().copied() {
            group.instances[pos].deleting_since = Some(now);
        }
        group.target -= (real.len() + placeholders) as i32;
        state.settle(idx, now);
        Ok(())
    }

    fn fargate_profiles(&self) -> Vec<FargateProfile> {
        self.fargate_profiles.clone()
    }

    fn fargate_rates(&self) -> FargateRates {
        self.fargate_rates
    }

    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64> {
        instance_types::lookup(instance_type).map(|info| info.price_per_hour)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCENARIO: &str = r#"
cluster: test
region: us-east-1
nodeGroups:
  - name: web
    instanceType: m5.large
    zones: [us-east-1a, us-east-1b]
    minSize: 1
    maxSize: 10
    desiredSize: 2
    provisioningDelay: 30s
    deletionDelay: 5s
  - name: tight
    instanceType: c5.large
    zones: [us-east-1a]
    minSize: 0
    maxSize: 5
    desiredSize: 1
    availableCapacity: 2
"#;

    fn backend() -> SimulatedEks {
        SimulatedEks::new(Scenario::parse(SCENARIO).unwrap(), Clock::manual())
    }

    fn states(backend: &SimulatedEks, id: &str) -> Vec<InstanceState> {
        backend
            .instances(id)
            .unwrap()
            .iter()
            .map(|i| i.state)
            .collect()
    }

    #[tokio::test]
    async fn desired_instances_run_from_the_start_spread_over_zones() {
        let sim = backend();
        let instances = sim.instances("web").unwrap();
        assert_eq!(states(&sim, "web"), [InstanceState::Running; 2]);
        assert!(instances[0].id.starts_with("aws:///us-east-1a/i-"));
        assert!(instances[1].id.starts_with("aws:///us-east-1b/i-"));
        let suffix = instances[0].id.rsplit('/').next().unwrap();
        assert_eq!(suffix.len(), 19, "i- and 17 hex digits: {suffix}");
        assert!(suffix[2..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(sim.node_group_of(&instances[0].id).as_deref(), Some("web"));
    }

    #[tokio::test]
    async fn new_instances_are_creating_until_the_provisioning_delay() {
        let sim = backend();
        sim.set_target_size("web", 3).await.unwrap();
        assert_eq!(sim.target_size("web").unwrap(), 3);
        assert_eq!(states(&sim, "web")[2], InstanceState::Creating);
        sim.clock().advance(Duration::from_secs(29));
        assert_eq!(states(&sim, "web")[2], InstanceState::Creating);
        sim.clock().advance(Duration::from_secs(1));
        assert_eq!(states(&sim, "web")[2], InstanceState::Running);
    }

    #[tokio::test]
    async fn deleted_instances_report_deleting_then_vanish() {
        let sim = backend();
        let victim = sim.instances("web").unwrap()[0].id.clone();
        sim.delete_instances("web", std::slice::from_ref(&victim))
            .await
            .unwrap();
        assert_eq!(sim.target_size("web").unwrap(), 1);
        assert_eq!(
            sim.instances("web").unwrap()[0].state,
            InstanceState::Deleting
        );
        assert_eq!(
            sim.node_group_of(&victim).as_deref(),
            Some("web"),
            "still a node while deleting"
        );
        sim.clock().advance(Duration::from_secs(5));
        assert_eq!(sim.instances("web").unwrap().len(), 1);
        assert_eq!(sim.node_group_of(&victim), None);
    }

    #[tokio::test]
    async fn capacity_beyond_what_is_available_becomes_placeholders() {
        let sim = backend();
        sim.set_target_size("tight", 4).await.unwrap();
        let instances = sim.instances("tight").unwrap();
        assert_eq!(instances.len(), 4);
        let placeholders: Vec<_> = instances.iter().filter(|i| i.placeholder).collect();
        assert_eq!(placeholders.len(), 2);
        assert_eq!(placeholders[0].state, InstanceState::Creating);
        assert_eq!(
            placeholders[0].error.as_ref().unwrap().class,
            InstanceErrorClass::OutOfResources
        );
        assert_eq!(
            placeholders[0].id,
            "aws:///us-east-1a/i-placeholder-tight-0"
        );
        assert_eq!(
            sim.node_group_of(&placeholders[1].id).as_deref(),
            Some("tight")
        );

        // Cancelling not-yet-created capacity removes placeholders, never instances.
        sim.set_target_size("tight", 3).await.unwrap();
        assert_eq!(
            sim.instances("tight")
                .unwrap()
                .iter()
                .filter(|i| i.placeholder)
                .count(),
            1
        );
        assert!(
            sim.set_target_size("tight", 1).await.is_err(),
            "two instances exist"
        );

        // Deleting a real instance frees capacity; the outstanding request is launched.
        let real = sim.instances("tight").unwrap()[0].id.clone();
        sim.delete_instances("tight", &[real]).await.unwrap();
        sim.clock().advance(Duration::from_secs(10));
        let instances = sim.instances("tight").unwrap();
        assert_eq!(sim.target_size("tight").unwrap(), 2);
        assert_eq!(instances.len(), 2);
        assert!(instances.iter().all(|i| !i.placeholder));
    }

    #[tokio::test]
    async fn an_atomic_increase_the_capacity_cannot_hold_whole_changes_nothing() {
        let sim = backend();
        // `tight` runs 1 of its availableCapacity 2: one more fits, two do not.
        let before = sim.instances("tight").unwrap();
        let refused = sim.atomic_increase("tight", 3).await.unwrap_err();
        assert!(
            matches!(&refused, CloudError::Exhausted(m) if m.contains("can launch 1 more instance(s) now")),
            "{refused}"
        );
        assert_eq!(sim.target_size("tight").unwrap(), 1);
        assert_eq!(sim.instances("tight").unwrap(), before);

        // Capacity already promised to placeholders is not free: with 3 asked of 2, none is.
        sim.set_target_size("tight", 3).await.unwrap();
        assert!(sim.atomic_increase("tight", 4).await.is_err());
        assert_eq!(sim.target_size("tight").unwrap(), 3);
        sim.set_target_size("tight", 2).await.unwrap();

        // Room frees: the whole increase is taken and launched.
        sim.set_available_capacity("tight", Some(4)).unwrap();
        sim.atomic_increase("tight", 4).await.unwrap();
        let instances = sim.instances("tight").unwrap();
        assert_eq!(instances.len(), 4);
        assert!(instances.iter().all(|i| !i.placeholder));
        // Without a capacity limit it is a plain increase.
        sim.atomic_increase("web", 5).await.unwrap();
        assert_eq!(sim.instances("web").unwrap().len(), 5);
    }

    #[tokio::test]
    async fn ids_are_reproducible_from_the_seed() {
        let a: Vec<_> = backend()
            .instances("web")
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        let b: Vec<_> = backend()
            .instances("web")
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert_eq!(a, b);
    }
}
