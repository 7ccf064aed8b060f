//! The embedded simulated EKS: node groups from a scenario, instances with a lifecycle, no AWS account.
//!
//! Instances of `desiredSize` run from the start; instances requested later report `creating` at once and
//! `running` after the group's `provisioningDelay`; deleted ones report `deleting` for `deletionDelay`, then
//! are gone. A group with `availableCapacity` behaves like an Auto Scaling group hitting a stockout: what
//! it cannot launch is listed as placeholder instances with an out-of-resources error, exactly as the AWS
//! backend reports unfulfillable desired capacity, and is launched as soon as capacity frees up.
//!
//! A managed node group update (`SimulatedEks::start_update`) replaces a group's instances with ones of a
//! new image the way EKS does, on the same clock: surge, replace one by one, scale back down. What EC2 says
//! about instances (`super::notices`) and EKS's node auto repair (`super::repair`) take their steps here too,
//! in time order with the update's.

use super::fleet::{Fleet, SimInstance};
use super::leaving_keys::EventKind;
use super::notices::{Notices, Rebalancing, seen_from};
use super::repair::Repairs;
use super::reservations::GroupReservations;
use super::scenario::{Scenario, SimNodeGroup, image_problem};
use crate::clock::Clock;
use crate::cloud::backend::{CloudError, NodeGroupBackend};
use crate::cloud::fargate::FargateRates;
use crate::cloud::instance_types;
use crate::cloud::node_group::{
    Instance, InstanceError, InstanceErrorClass, InstanceState, NodeGroupSpec,
};
use crate::cloud::template;
use crate::model::{FargateProfile, LeavingInstance, NodeGroupStatus, Reservation};
use async_trait::async_trait;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

/// The error code of placeholder instances, the same as the AWS provider's.
pub const PLACEHOLDER_ERROR_CODE: &str = "placeholder-cannot-be-fulfilled";

pub struct SimulatedEks {
    pub(super) clock: Clock,
    /// The wall-clock time the clock's zero stands for (what event times are read against).
    pub(super) epoch: SystemTime,
    /// Group id -> index of the group (ids never change; a group's spec does, in an update).
    by_id: HashMap<String, usize>,
    fargate_profiles: Vec<FargateProfile>,
    fargate_rates: FargateRates,
    state: Mutex<SimState>,
}

pub(super) struct SimState {
    pub(super) groups: Vec<SimGroup>,
    /// Instance id -> index of its group, for NodeGroupForNode.
    pub(super) index: HashMap<String, usize>,
    rng: StdRng,
}

pub(super) struct SimGroup {
    /// What the scenario says, with the spec served now (an update changes its status, image and template).
    pub(super) config: SimNodeGroup,
    pub(super) target: i32,
    /// Real instances, deleting ones included until they are gone.
    pub(super) instances: Vec<SimInstance>,
    /// Capacity rebalancing's replacements, launched beside the target: not counted in it until their old
    /// instance goes.
    surges: Vec<String>,
    update: Option<Update>,
    /// What EC2 said about its instances.
    pub(super) notices: Notices,
    /// Its unhealthy instances and the repairs under way.
    pub(super) repairs: Repairs,
    /// The capacity reservations it launches into, and how far a Capacity Block's end has gone.
    pub(super) reservations: GroupReservations,
}

/// A managed node group update under way, as EKS carries one out: the target raised by a surge of new-image
/// instances, then each instance that was there before terminated in turn (the Auto Scaling group launches a
/// new-image one in its place, the target unchanged), then the target lowered by the surge again. EKS picks
/// the old nodes at random and waits for their pods to leave; here they go in launch order, at even steps
/// over the update's duration, so that a run is reproducible.
struct Update {
    started: Duration,
    duration: Duration,
    /// How much the target was raised (max(1, zones), capped by the max size).
    surge: i32,
    /// The instances there when it started, in launch order.
    old: Vec<String>,
    /// How many of them have been replaced (or were gone by their turn).
    replaced: usize,
}

impl Update {
    /// When its next step is due: the next replacement, or its end.
    fn next_at(&self) -> Duration {
        if self.replaced == self.old.len() {
            return self.started + self.duration;
        }
        let steps = u32::try_from(self.old.len() + 1).unwrap_or(u32::MAX);
        let step = self.duration / steps;
        self.started + step * u32::try_from(self.replaced + 1).unwrap_or(u32::MAX)
    }
}

impl SimulatedEks {
    /// A simulated EKS serving `scenario`, with its clock, whose zero stands for the scenario's `start`
    /// (the moment it is made, when the scenario has none).
    pub fn new(scenario: Scenario, clock: Clock) -> SimulatedEks {
        let epoch = scenario.start.unwrap_or_else(SystemTime::now);
        SimulatedEks::starting_at(scenario, clock, epoch)
    }

    /// A simulated EKS serving `scenario`, whose clock's zero stands for `epoch` whatever the scenario says
    /// (the demo's day sets it).
    pub fn starting_at(scenario: Scenario, clock: Clock, epoch: SystemTime) -> SimulatedEks {
        let by_id: HashMap<String, usize> = (scenario.node_groups.iter().enumerate())
            .map(|(i, g)| (g.spec.id.clone(), i))
            .collect();
        let mut state = SimState {
            groups: Vec::with_capacity(scenario.node_groups.len()),
            index: HashMap::new(),
            rng: StdRng::seed_from_u64(scenario.seed),
        };
        for config in scenario.node_groups {
            let target = config.desired_size;
            let spec = &config.spec;
            let reservations =
                GroupReservations::new(spec.capacity_type, &spec.reservations, epoch);
            state.groups.push(SimGroup {
                reservations,
                config,
                target,
                instances: Vec::new(),
                surges: Vec::new(),
                update: None,
                notices: Notices::default(),
                repairs: Repairs::default(),
            });
            let idx = state.groups.len() - 1;
            // The scenario's desired instances are already running when the provider starts.
            state.launch(idx, Duration::ZERO, Duration::ZERO);
        }
        for event in &scenario.instance_events {
            let Some(&idx) = by_id.get(&event.node_group) else {
                continue; // the scenario checked it
            };
            // Never before the epoch: the scenario refuses times before its start, the script before its own.
            let at = event.at.duration_since(epoch).unwrap_or(Duration::ZERO);
            state.groups[idx].notice(event.index, event.kind, at);
        }
        SimulatedEks {
            clock,
            epoch,
            by_id,
            fargate_profiles: scenario.fargate_profiles,
            fargate_rates: scenario.fargate_rates,
            state: Mutex::new(state),
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Starts a managed node group update of group `id` to `image`, which takes `duration`, as EKS's
    /// UpdateNodegroupVersion does: the group turns UPDATING and its new instances get `image` at once; its
    /// target rises by a surge of max(1, its zones) (less if that would pass its max size), launched with
    /// `image`; over `duration` each instance it had when the update started is terminated in turn and
    /// another launched in its place; at the end the target comes down by the surge again (never below
    /// the min size, the newest instances removed first when there are more than that) and the group is
    /// ACTIVE. Only an ACTIVE group can start one.
    pub fn start_update(
        &self,
        id: &str,
        image: &str,
        duration: Duration,
    ) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        if let Some(problem) = image_problem(image) {
            return Err(CloudError::FailedPrecondition(format!(
                "node group {id}: {problem}"
            )));
        }
        let (mut state, now) = self.settled(idx);
        let group = &mut state.groups[idx];
        let spec = &group.config.spec;
        if spec.status != NodeGroupStatus::Active {
            return Err(CloudError::FailedPrecondition(format!(
                "node group {id} is {}: an update starts only on an ACTIVE node group",
                spec.status
            )));
        }
        let zones = i32::try_from(group.config.zones.len()).unwrap_or(i32::MAX);
        let surge = zones.max(1).min((spec.max_size - group.target).max(0));
        let old = (group.instances.iter())
            .filter(|i| group.counts(i))
            .map(|i| i.id.clone())
            .collect();
        group.respec(NodeGroupStatus::Updating, image);
        group.update = Some(Update {
            started: now,
            duration,
            surge,
            old,
            replaced: 0,
        });
        let target = group.target + surge;
        state.set_target(idx, now, target)
    }

    pub(super) fn group_index(&self, id: &str) -> Result<usize, CloudError> {
        self.by_id
            .get(id)
            .copied()
            .ok_or_else(|| CloudError::NodeGroupNotFound(id.to_string()))
    }

    /// Locks the state with group `idx` brought up to the clock's present.
    pub(super) fn settled(&self, idx: usize) -> (MutexGuard<'_, SimState>, Duration) {
        let now = self.clock.now();
        let mut state = self.lock();
        state.settle(idx, now);
        (state, now)
    }

    /// Locks the state as it is.
    pub(super) fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl SimState {
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

    /// Brings group `idx` up to `now`: each step of an update under way, of what EC2 said and of repairs,
    /// at its own time, then what [`SimState::settle_at`] does.
    pub(super) fn settle(&mut self, idx: usize, now: Duration) {
        loop {
            let group = &self.groups[idx];
            let update = group.update.as_ref().map(Update::next_at);
            let notices = group.notices.next_at(group.rebalancing());
            let node_repair = group.config.spec.node_repair.clone();
            let repairs = (group.repairs).next_at(node_repair.as_ref(), &group.instances);
            let block_end = group.reservations.next_at();
            let Some(at) = [update, notices, repairs, block_end]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            if at > now {
                break;
            }
            self.settle_at(idx, at);
            if update == Some(at) {
                self.update_step(idx, at);
            }
            let rebalancing = self.groups[idx].rebalancing();
            let SimGroup {
                config,
                instances,
                surges,
                notices,
                repairs,
                reservations,
                target,
                ..
            } = &mut self.groups[idx];
            let mut fleet = Fleet {
                instances,
                surges,
                provisioning_delay: config.provisioning_delay,
            };
            notices.step(at, &mut fleet, rebalancing);
            repairs.step(at, node_repair.as_ref(), &mut fleet);
            let terminated = reservations.step(at, &mut fleet, target);
            instances.retain(|i| !terminated.contains(&i.id));
            for id in &terminated {
                self.index.remove(id);
            }
            let delay = config.provisioning_delay;
            self.launch(idx, at, delay);
        }
        self.settle_at(idx, now);
    }

    /// The next step of group `idx`'s update, at `at`: one instance of those it had before replaced, or
    /// the end of the update.
    fn update_step(&mut self, idx: usize, at: Duration) {
        let group = &mut self.groups[idx];
        let Some(update) = group.update.as_mut() else {
            return;
        };
        let surges = &group.surges;
        let live = |i: &&mut SimInstance| i.deleting_since.is_none() && !surges.contains(&i.id);
        if let Some(id) = update.old.get(update.replaced).cloned() {
            update.replaced += 1;
            // Terminated without lowering the target: the Auto Scaling group launches its replacement. One
            // deleted meanwhile (by a scale-down) needs none.
            if let Some(old) = (group.instances.iter_mut().filter(live)).find(|i| i.id == id) {
                old.deleting_since = Some(at);
            }
        } else {
            let surge = update.surge;
            group.update = None;
            group.target = (group.target - surge).max(group.config.spec.min_size);
            let surplus = group.live().saturating_sub(group.target as usize);
            for newest in group.instances.iter_mut().rev().filter(live).take(surplus) {
                newest.deleting_since = Some(at);
            }
            let image = group.config.spec.image.clone().unwrap_or_default();
            group.respec(NodeGroupStatus::Active, &image);
        }
        let delay = group.config.provisioning_delay;
        self.launch(idx, at, delay);
    }

    /// Removes instances whose deletion finished and launches what the target asks for and capacity allows.
    fn settle_at(&mut self, idx: usize, now: Duration) {
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

    /// Launches instances until the group has its target (and the replacements capacity rebalancing wants)
    /// or no capacity is left, each in the zone with the fewest instances, as Auto Scaling balances zones.
    pub(super) fn launch(&mut self, idx: usize, now: Duration, provisioning_delay: Duration) {
        self.end_surges(idx, now);
        let mut notices = std::mem::take(&mut self.groups[idx].notices);
        notices.launch_replacements(|| self.launch_replacement(idx, now, provisioning_delay));
        self.groups[idx].notices = notices;
        let group = &self.groups[idx];
        let wanted = usize::try_from(group.target)
            .unwrap_or(0)
            .saturating_sub(group.live());
        for _ in 0..wanted.min(group.room(now)) {
            self.new_instance(idx, now, provisioning_delay);
        }
    }

    /// Ends the surge of each rebalanced instance that left (however it left): its replacement counts in
    /// the target from now on, and what then passes the target goes, newest first, as an Auto Scaling group
    /// brings its instances down to its desired capacity.
    fn end_surges(&mut self, idx: usize, now: Duration) {
        let group = &mut self.groups[idx];
        if !group
            .notices
            .end_surges(&group.instances, &mut group.surges)
        {
            return;
        }
        let surplus = group
            .live()
            .saturating_sub(usize::try_from(group.target).unwrap_or(0));
        let SimGroup {
            instances, surges, ..
        } = group;
        (instances.iter_mut().rev())
            .filter(|i| i.is_live() && !surges.contains(&i.id))
            .take(surplus)
            .for_each(|newest| newest.deleting_since = Some(now));
    }

    /// Launches one capacity rebalancing replacement beside the target, when capacity allows and the group
    /// stays within what AWS lets rebalancing pass its max size by (10% of it, or one instance); its id and
    /// when it runs.
    fn launch_replacement(
        &mut self,
        idx: usize,
        now: Duration,
        provisioning_delay: Duration,
    ) -> Option<(String, Duration)> {
        let group = &self.groups[idx];
        let max = usize::try_from(group.config.spec.max_size).unwrap_or(0);
        let beyond_max = (max / 10).max(1);
        if group.room(now) == 0 || group.live() + group.surges.len() >= max + beyond_max {
            return None;
        }
        let id = self.new_instance(idx, now, provisioning_delay);
        self.groups[idx].surges.push(id.clone());
        Some((id, now + provisioning_delay))
    }

    /// Launches one instance of group `idx` in its zone with the fewest live instances; its id.
    fn new_instance(&mut self, idx: usize, now: Duration, provisioning_delay: Duration) -> String {
        let group = &self.groups[idx];
        let mut per_zone = vec![0usize; group.config.zones.len()];
        for instance in group.instances.iter().filter(|i| i.is_live()) {
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
            id: id.clone(),
            zone,
            running_at: now + provisioning_delay,
            deleting_since: None,
        });
        id
    }
}

impl SimGroup {
    /// Whether its Auto Scaling group has capacity rebalancing on.
    pub(super) fn rebalancing(&self) -> Rebalancing {
        match self.config.spec.capacity_rebalance {
            true => Rebalancing::On,
            false => Rebalancing::Off,
        }
    }

    /// Records what the scenario says EC2 says about its instance at `position` (in launch order), for `at`.
    pub(super) fn notice(&mut self, position: usize, kind: EventKind, at: Duration) {
        let Some(instance) = self.instances.get(position) else {
            return;
        };
        (self.notices).add(&instance.id, kind, seen_from(kind, at), at);
    }

    /// Serves the group with this status and image from now on (its template labelled with the image).
    pub(super) fn respec(&mut self, status: NodeGroupStatus, image: &str) {
        let spec = &self.config.spec;
        self.config.spec = Arc::new(NodeGroupSpec {
            status,
            image: Some(image.to_string()),
            template: Arc::new(template::with_image(&spec.template, image)),
            ..NodeGroupSpec::clone(spec)
        });
    }

    /// Refuses a target above the present one asked for outside its Capacity Block's window, as EKS does.
    fn refuse_outside_window(&self, now: Duration, target: i32) -> Result<(), CloudError> {
        match (self.reservations.refusal(now)).filter(|_| target > self.target) {
            Some(refusal) => Err(CloudError::FailedPrecondition(format!(
                "node group {}: {refusal}; nothing was changed",
                self.config.spec.id
            ))),
            None => Ok(()),
        }
    }

    /// Instances the target counts: not being deleted, and no rebalancing replacement still beside it.
    fn live(&self) -> usize {
        self.instances.iter().filter(|i| self.counts(i)).count()
    }

    /// Whether the target counts `instance`.
    fn counts(&self, instance: &SimInstance) -> bool {
        instance.is_live() && !self.surges.contains(&instance.id)
    }

    /// How many more instances capacity allows at `now` (those being deleted still hold theirs): its
    /// `availableCapacity`, and a Capacity Block group's block.
    fn room(&self, now: Duration) -> usize {
        let capacity = (self.config.available_capacity).map_or(usize::MAX, |c| c as usize);
        let room = capacity.saturating_sub(self.instances.len());
        let reserved = self.reservations.room(now, self.instances.len());
        reserved.map_or(room, |reserved| reserved.min(room))
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
        let mut state = self.lock();
        for idx in 0..state.groups.len() {
            state.settle(idx, now);
        }
        Ok(())
    }

    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>> {
        let state = self.lock();
        state.groups.iter().map(|g| g.config.spec.clone()).collect()
    }

    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>> {
        let &idx = self.by_id.get(id)?;
        Some(self.lock().groups[idx].config.spec.clone())
    }

    fn node_group_of(&self, instance_id: &str) -> Option<String> {
        let state = self.lock();
        if let Some(&idx) = state.index.get(instance_id) {
            return Some(state.groups[idx].config.spec.id.clone());
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
        let message = group.reservations.shortage(now).unwrap_or_else(|| {
            format!(
                "node group {id} has no capacity for {placeholders} more instance(s) \
                 (availableCapacity {})",
                group.config.available_capacity.unwrap_or_default()
            )
        });
        instances.extend((0..placeholders).map(|n| Instance {
            id: group.placeholder_id(n),
            state: InstanceState::Creating,
            placeholder: true,
            error: Some(InstanceError {
                class: InstanceErrorClass::OutOfResources,
                code: PLACEHOLDER_ERROR_CODE.into(),
                message: format!("simulated EKS: {message}"),
            }),
        }));
        Ok(instances)
    }

    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        state.groups[idx].refuse_outside_window(now, target)?;
        state.set_target(idx, now, target)
    }

    /// The simulated cloud knows its capacity at once: an increase it cannot launch whole is refused.
    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        let group = &state.groups[idx];
        group.refuse_outside_window(now, target)?;
        let delta = usize::try_from(target - group.target).unwrap_or(0);
        // What was asked for before and still waits for room launches first.
        let free = group.room(now).saturating_sub(group.placeholders());
        if free < delta {
            let limit = (group.reservations.shortage(now)).unwrap_or_else(|| {
                format!(
                    "availableCapacity {}",
                    group.config.available_capacity.unwrap_or_default()
                )
            });
            return Err(CloudError::Exhausted(format!(
                "simulated EKS: node group {id} can launch {free} more instance(s) now ({limit}), \
                 not all {delta}; nothing was changed"
            )));
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
        let mut surges = 0;
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
            // A rebalancing replacement was never in the target: capacity rebalancing launches another.
            let id = &group.instances[pos].id;
            if group.surges.contains(id) {
                group.surges.retain(|s| s != id);
                surges += 1;
            }
        }
        group.target -= (real.len() - surges + placeholders) as i32;
        state.settle(idx, now);
        Ok(())
    }

    fn fargate_profiles(&self) -> Vec<FargateProfile> {
        self.fargate_profiles.clone()
    }

    fn fargate_rates(&self) -> FargateRates {
        self.fargate_rates
    }

    fn leaving_instances(&self) -> Vec<LeavingInstance> {
        self.leaving()
    }

    /// Their counts now: the group's instances fill its active reservations in order.
    fn reservations(&self, id: &str) -> Vec<Reservation> {
        let Ok(idx) = self.group_index(id) else {
            return Vec::new();
        };
        let (state, now) = self.settled(idx);
        let group = &state.groups[idx];
        group.reservations.live(now, group.instances.len())
    }

    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64> {
        instance_types::lookup(instance_type).map(|info| info.price_per_hour)
    }
}

#[cfg(test)]
mod tests;
