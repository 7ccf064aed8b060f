//! What the simulated EKS is told at run time, as EC2 and EKS would act with no autoscaler asking: a Spot
//! interruption (the two-minute warning, then the instance goes), a rebalance recommendation, a scheduled
//! event at a time, and the node monitoring agent's verdicts that EKS's node auto repair acts on. The demo
//! and tests call these as `start_update` is called; the leaving instances are served from here too.

use super::backend::{SimGroup, SimulatedEks};
use super::leaving_keys::EventKind;
use super::notices::SPOT_WARNING;
use super::repair::Sick;
use super::scenario::image_problem;
use crate::cloud::backend::CloudError;
use crate::model::LeavingInstance;
use std::time::{Duration, SystemTime};

/// Which instances of a group an event is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// This many of its running instances that have had no such event yet, oldest first (launch order).
    Count(usize),
    /// Its instance at this position in the group's NodeGroupNodes answer.
    Index(usize),
}

impl SimulatedEks {
    /// The wall-clock time the simulated clock's zero stands for.
    pub fn epoch(&self) -> SystemTime {
        self.epoch
    }

    /// Simulated wall-clock time.
    pub fn wall_now(&self) -> SystemTime {
        self.epoch + self.clock.now()
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

    /// Gives group `id`'s new instances `image` without an update, as a launch template version set on its
    /// Auto Scaling group outside EKS does: the instances it has keep theirs, and their nodes drift.
    pub fn set_image(&self, id: &str, image: &str) -> Result<(), CloudError> {
        let idx = self.group_index(id)?;
        if let Some(problem) = image_problem(image) {
            return Err(CloudError::FailedPrecondition(format!(
                "node group {id}: {problem}"
            )));
        }
        let (mut state, _) = self.settled(idx);
        let group = &mut state.groups[idx];
        let status = group.config.spec.status.clone();
        group.respec(status, image);
        Ok(())
    }

    /// EC2 takes `pick` Spot instances of group `id` back: the warning now, the instances terminated two
    /// minutes later (the group launching others in their place). Returns their ids.
    pub fn interrupt(&self, id: &str, pick: Pick) -> Result<Vec<String>, CloudError> {
        self.raise(id, pick, EventKind::SpotInterruption, |now| {
            (now, now + SPOT_WARNING)
        })
    }

    /// EC2 recommends rebalancing `pick` Spot instances of group `id` now. Returns their ids.
    pub fn rebalance(&self, id: &str, pick: Pick) -> Result<Vec<String>, CloudError> {
        self.raise(id, pick, EventKind::Rebalance, |now| (now, now))
    }

    /// AWS Health schedules the retirement of `pick` instances of group `id` at `at` (said now; at `at` the
    /// instances are stopped and replaced). Returns their ids; refused when `at` is past.
    pub fn schedule_event(
        &self,
        id: &str,
        pick: Pick,
        at: SystemTime,
    ) -> Result<Vec<String>, CloudError> {
        let at = self.clock_time(at)?;
        if at < self.clock.now() {
            return Err(CloudError::FailedPrecondition(format!(
                "a scheduled event at {} is before the simulated EKS's now, {}",
                humantime::format_rfc3339_seconds(self.epoch + at),
                humantime::format_rfc3339_seconds(self.wall_now())
            )));
        }
        self.raise(id, pick, EventKind::ScheduledEvent, |now| (now, at))
    }

    /// The node monitoring agent set `condition` False with `reason` on instance `instance_id`'s node at
    /// `since`: its group's node auto repair (when enabled) repairs it after the condition's wait.
    pub fn mark_unhealthy(
        &self,
        instance_id: &str,
        condition: &str,
        reason: &str,
        since: SystemTime,
    ) -> Result<(), CloudError> {
        let since = self.clock_time(since)?;
        self.with_instance(instance_id, |group| {
            group.repairs.mark(Sick {
                instance: instance_id.to_string(),
                condition: condition.to_string(),
                reason: reason.to_string(),
                since,
            });
        })
    }

    /// The node's conditions are fine again: no repair for instance `instance_id`. False when it was not
    /// marked.
    pub fn mark_healthy(&self, instance_id: &str) -> Result<bool, CloudError> {
        self.with_instance(instance_id, |group| group.repairs.clear(instance_id))
    }

    /// The instances marked unhealthy now (a reboot that finished cleared its mark; a replaced instance
    /// is gone), as `(instance id, condition)`.
    pub fn unhealthy_instances(&self) -> Vec<(String, String)> {
        let now = self.clock.now();
        let mut state = self.lock();
        let mut marked = Vec::new();
        for idx in 0..state.groups.len() {
            state.settle(idx, now);
            let group = &state.groups[idx];
            marked.extend(
                (group.repairs.unhealthy().iter())
                    .filter(|s| group.instances.iter().any(|i| i.id == s.instance))
                    .map(|s| (s.instance.clone(), s.condition.clone())),
            );
        }
        marked
    }

    /// How many repairs group `id`'s node auto repair has started.
    pub fn repairs_started(&self, id: &str) -> Result<usize, CloudError> {
        let idx = self.group_index(id)?;
        let (state, _) = self.settled(idx);
        Ok(state.groups[idx].repairs.started)
    }

    /// The instances leaving now: what EC2 said, by then, of instances their groups still list; one row per
    /// instance, its strongest reason (the first said of equals), as the AWS backend's record keeps them.
    pub(super) fn leaving(&self) -> Vec<LeavingInstance> {
        let now = self.clock.now();
        let mut state = self.lock();
        let mut leaving: Vec<LeavingInstance> = Vec::new();
        for idx in 0..state.groups.len() {
            state.settle(idx, now);
            let group = &state.groups[idx];
            let rebalancing = group.rebalancing();
            for notice in group.notices.said(now, &group.instances) {
                let row = LeavingInstance {
                    id: notice.instance.clone(),
                    node_group: group.config.spec.id.clone(),
                    reason: notice.reason(),
                    at: self.epoch + notice.at,
                    detail: notice.detail(rebalancing),
                };
                match leaving.iter_mut().find(|l| l.id == row.id) {
                    Some(said) if row.reason.strength() > said.reason.strength() => *said = row,
                    Some(_) => {}
                    None => leaving.push(row),
                }
            }
        }
        leaving
    }

    /// `at` on the simulated clock; refused when before its zero (the scenario's start).
    fn clock_time(&self, at: SystemTime) -> Result<Duration, CloudError> {
        at.duration_since(self.epoch).map_err(|_| {
            CloudError::FailedPrecondition(format!(
                "{} is before the simulated EKS's start, {}",
                humantime::format_rfc3339_seconds(at),
                humantime::format_rfc3339_seconds(self.epoch)
            ))
        })
    }

    /// Runs `change` on the group of instance `instance_id`, brought up to now.
    fn with_instance<T>(
        &self,
        instance_id: &str,
        change: impl FnOnce(&mut SimGroup) -> T,
    ) -> Result<T, CloudError> {
        let idx = (self.lock().index.get(instance_id).copied()).ok_or_else(|| {
            CloudError::FailedPrecondition(format!(
                "instance {instance_id} is no instance of the simulated EKS"
            ))
        })?;
        let (mut state, _) = self.settled(idx);
        Ok(change(&mut state.groups[idx]))
    }

    /// Records `kind` for `pick` instances of group `id`, `times` saying, from now, when it is said and
    /// for when; all or nothing.
    fn raise(
        &self,
        id: &str,
        pick: Pick,
        kind: EventKind,
        times: impl Fn(Duration) -> (Duration, Duration),
    ) -> Result<Vec<String>, CloudError> {
        let idx = self.group_index(id)?;
        let (mut state, now) = self.settled(idx);
        let group = &state.groups[idx];
        if kind.spot_only() && !group.config.is_spot() {
            return Err(CloudError::FailedPrecondition(format!(
                "node group {id} is not SPOT: EC2 sends a {} for Spot instances only",
                kind.as_str()
            )));
        }
        let picked = picked(group, pick, kind, now)?;
        let (seen, at) = times(now);
        let group = &mut state.groups[idx];
        for instance in &picked {
            group.notices.add(instance, kind, seen, at);
        }
        // What was raised and is due already takes effect.
        state.settle(idx, now);
        Ok(picked)
    }
}

/// The instances `pick` names in `group`, or why it names none.
fn picked(
    group: &SimGroup,
    pick: Pick,
    kind: EventKind,
    now: Duration,
) -> Result<Vec<String>, CloudError> {
    let refused = |problem: String| {
        let id = &group.config.spec.id;
        CloudError::FailedPrecondition(format!("node group {id}: {problem}"))
    };
    match pick {
        Pick::Index(position) => {
            let instance = (group.instances.get(position)).ok_or_else(|| {
                refused(format!(
                    "index {position} is beyond its {} instance(s)",
                    group.instances.len()
                ))
            })?;
            if !instance.is_live() {
                return Err(refused(format!(
                    "instance {} (index {position}) is being deleted",
                    instance.id
                )));
            }
            Ok(vec![instance.id.clone()])
        }
        Pick::Count(count) => {
            let candidates: Vec<String> = (group.instances.iter())
                .filter(|i| i.is_live() && i.running_at <= now)
                .filter(|i| !group.notices.has(&i.id, kind))
                .map(|i| i.id.clone())
                .take(count)
                .collect();
            if candidates.len() < count || count == 0 {
                return Err(refused(format!(
                    "asked for {count} running instance(s) without a {}, it has {}",
                    kind.as_str(),
                    candidates.len()
                )));
            }
            Ok(candidates)
        }
    }
}

#[cfg(test)]
mod tests;
