//! EKS's node auto repair for a simulated managed node group (`nodeRepairConfig`). The simulated EKS cannot
//! see Node objects, so it is told which instances the node monitoring agent marked unhealthy (and when);
//! after the condition's wait (EKS's: 10 minutes for `AcceleratedHardwareReady`, 30 for the others; an
//! override's `minRepairWaitTimeMins` wins) it repairs them: `Replace` terminates the instance with the
//! target unchanged (the group launches another), `Reboot` keeps it and the condition clears a minute later,
//! `NoAction` waits for ever. Never more at once than `maxParallelNodesRepaired*` allows (one, when unset),
//! and not at all while more nodes are unhealthy than `maxUnhealthyNodeThreshold*` (when unset, EKS's rule:
//! more than 20% of a group of more than 5 nodes).

use super::fleet::{Fleet, SimInstance};
use crate::model::NodeRepairConfig;
use std::time::Duration;

/// How long a reboot takes before the node's condition clears.
pub(super) const REBOOT_TAKES: Duration = Duration::from_secs(60);
/// EKS's wait before repairing an `AcceleratedHardwareReady` problem.
const ACCELERATED_WAIT: Duration = Duration::from_secs(10 * 60);
/// EKS's wait before repairing any other condition's problem (`Ready` included).
const OTHER_WAIT: Duration = Duration::from_secs(30 * 60);

/// What repair does to a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RepairAction {
    Replace,
    Reboot,
    NoAction,
}

/// An instance the monitoring agent marked unhealthy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Sick {
    pub(super) instance: String,
    pub(super) condition: String,
    pub(super) reason: String,
    /// When the condition turned False, on the simulated EKS's clock.
    pub(super) since: Duration,
}

/// A repair under way: the replacement coming, or the reboot.
struct Underway {
    instance: String,
    action: RepairAction,
    done: Duration,
}

/// A group's unhealthy instances and its repairs under way.
#[derive(Default)]
pub(super) struct Repairs {
    sick: Vec<Sick>,
    underway: Vec<Underway>,
    /// How many repairs were started, for the tests and the demo.
    pub(super) started: usize,
}

/// The wait and the action for a problem: the override for its condition and reason, else EKS's defaults.
fn plan(config: &NodeRepairConfig, sick: &Sick) -> (Duration, RepairAction) {
    let given = (config.overrides.iter()).find(|o| {
        o.node_monitoring_condition == sick.condition && o.node_unhealthy_reason == sick.reason
    });
    match given {
        Some(o) => {
            let minutes = u64::try_from(o.min_repair_wait_time_mins).unwrap_or(0);
            let action = match o.repair_action.as_str() {
                "Reboot" => RepairAction::Reboot,
                "NoAction" => RepairAction::NoAction,
                _ => RepairAction::Replace,
            };
            (Duration::from_secs(minutes * 60), action)
        }
        None if sick.condition == "AcceleratedHardwareReady" => {
            (ACCELERATED_WAIT, RepairAction::Replace)
        }
        None => (OTHER_WAIT, RepairAction::Replace),
    }
}

/// `part` percent of `whole`, rounded up.
fn percent_of(part: i32, whole: usize) -> usize {
    (usize::try_from(part).unwrap_or(0) * whole).div_ceil(100)
}

impl Repairs {
    /// Marks `instance` unhealthy for `condition` since `since` (a mark of the same condition is replaced).
    pub(super) fn mark(&mut self, sick: Sick) {
        (self.sick).retain(|s| !(s.instance == sick.instance && s.condition == sick.condition));
        self.sick.push(sick);
    }

    /// Clears every mark of `instance`; false when it had none.
    pub(super) fn clear(&mut self, instance: &str) -> bool {
        let before = self.sick.len();
        self.sick.retain(|s| s.instance != instance);
        self.underway
            .retain(|u| !(u.instance == instance && u.action == RepairAction::Reboot));
        before != self.sick.len()
    }

    /// The instances marked unhealthy now.
    pub(super) fn unhealthy(&self) -> &[Sick] {
        &self.sick
    }

    /// How many of the group's live instances (not being deleted: a replaced one is no longer the group's
    /// problem) are marked unhealthy, each once whatever its marks.
    fn unhealthy_count(&self, instances: &[SimInstance]) -> usize {
        (instances.iter())
            .filter(|i| i.is_live() && self.sick.iter().any(|s| s.instance == i.id))
            .count()
    }

    /// Whether repair is halted: more of the group's live instances unhealthy than the threshold.
    fn halted(&self, config: &NodeRepairConfig, instances: &[SimInstance]) -> bool {
        let unhealthy = self.unhealthy_count(instances);
        let size = instances.iter().filter(|i| i.is_live()).count();
        match (
            config.max_unhealthy_node_threshold_count,
            config.max_unhealthy_node_threshold_percentage,
        ) {
            (Some(count), _) => unhealthy > usize::try_from(count).unwrap_or(0),
            (None, Some(percentage)) => {
                unhealthy * 100 > usize::try_from(percentage).unwrap_or(0) * size
            }
            (None, None) => size > 5 && unhealthy * 100 > 20 * size,
        }
    }

    /// How many more repairs may start now.
    fn room(&self, config: &NodeRepairConfig, instances: &[SimInstance]) -> usize {
        let limit = match (
            config.max_parallel_nodes_repaired_count,
            config.max_parallel_nodes_repaired_percentage,
        ) {
            (Some(count), _) => usize::try_from(count).unwrap_or(0),
            (None, Some(percentage)) => {
                percent_of(percentage, self.unhealthy_count(instances)).max(1)
            }
            (None, None) => 1,
        };
        limit.saturating_sub(self.underway.len())
    }

    /// The unhealthy instances waiting for a repair, each with when it is due and what it will be.
    fn waiting<'a>(
        &'a self,
        config: &'a NodeRepairConfig,
    ) -> impl Iterator<Item = (usize, Duration, RepairAction)> + 'a {
        (self.sick.iter().enumerate())
            .filter(|(_, s)| !self.underway.iter().any(|u| u.instance == s.instance))
            .map(|(i, s)| {
                let (wait, action) = plan(config, s);
                (i, s.since + wait, action)
            })
            .filter(|(_, _, action)| *action != RepairAction::NoAction)
    }

    /// When the next step is due: a repair finishing, or one starting (when the group, whose instances are
    /// `instances`, may start one).
    pub(super) fn next_at(
        &self,
        config: Option<&NodeRepairConfig>,
        instances: &[SimInstance],
    ) -> Option<Duration> {
        let finishing = self.underway.iter().map(|u| u.done).min();
        let starting = (config.filter(|c| c.enabled))
            .filter(|c| self.room(c, instances) > 0 && !self.halted(c, instances))
            .and_then(|c| self.waiting(c).map(|(_, due, _)| due).min());
        finishing.into_iter().chain(starting).min()
    }

    /// Takes the steps due by `at`: forgets instances that are gone, finishes repairs, starts those due
    /// that the parallelism and the threshold allow, oldest due first.
    pub(super) fn step(
        &mut self,
        at: Duration,
        config: Option<&NodeRepairConfig>,
        fleet: &mut Fleet<'_>,
    ) {
        self.sick.retain(|s| fleet.holds(&s.instance));
        let (done, underway): (Vec<_>, Vec<_>) =
            (self.underway.drain(..)).partition(|u| u.done <= at);
        self.underway = underway;
        for finished in done {
            // The rebooted node's condition clears; a replaced node's mark went with its instance.
            self.sick.retain(|s| s.instance != finished.instance);
        }
        let Some(config) = config.filter(|c| c.enabled) else {
            return;
        };
        loop {
            if self.room(config, fleet.instances) == 0 || self.halted(config, fleet.instances) {
                return;
            }
            let next = (self.waiting(config))
                .filter(|(_, due, _)| *due <= at)
                .min_by_key(|(_, due, _)| *due);
            let Some((i, _, action)) = next else {
                return;
            };
            let instance = self.sick[i].instance.clone();
            if !fleet.is_live(&instance) {
                // Deleted meanwhile: nothing to repair.
                self.sick.remove(i);
                continue;
            }
            let done = match action {
                RepairAction::Reboot => at + REBOOT_TAKES,
                _ => {
                    fleet.terminate(&instance, at);
                    at + fleet.provisioning_delay
                }
            };
            self.started += 1;
            self.underway.push(Underway {
                instance,
                action,
                done,
            });
        }
    }
}
