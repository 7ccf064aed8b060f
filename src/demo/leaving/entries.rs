//! The timeline entries `interrupt`, `rebalance`, `maintenance` and `unhealthy`, as a script writes them,
//! checked against the script's scenario when the script loads.

use crate::cloud::{Pick, Scenario, SimNodeGroup};
use crate::model::{Invalid, repair_condition, rfc3339};
use serde::Deserialize;
use std::time::{Duration, SystemTime};

/// `{nodeGroup: spot, count: 3}` or `{nodeGroup: spot, index: 0}`: which instances of a group.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instances {
    node_group: String,
    /// This many of its running instances, oldest first.
    #[serde(default)]
    count: Option<usize>,
    /// Its instance at this position in NodeGroupNodes.
    #[serde(default)]
    index: Option<usize>,
}

/// `maintenance: {nodeGroup: general, index: 0, in: 30m}` (or `at: <RFC 3339>`, which needs the script's
/// `start` and is no earlier than the entry's own time, `start` plus its `at`).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceFile {
    node_group: String,
    #[serde(default)]
    count: Option<usize>,
    #[serde(default)]
    index: Option<usize>,
    /// When the instance is retired (RFC 3339).
    #[serde(default)]
    at: Option<String>,
    /// How long after the entry the instance is retired.
    #[serde(default, rename = "in", with = "humantime_serde")]
    after: Option<Duration>,
}

/// `unhealthy: {nodeGroup: gpu, index: 0, condition: AcceleratedHardwareReady, reason: NvidiaXID79Error}`
/// (`nodeGroup` and `index` together), or `{node: 3, ...}`: the node at that position of the cluster's nodes
/// (in the order they registered).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnhealthyFile {
    #[serde(default)]
    node: Option<usize>,
    #[serde(default)]
    node_group: Option<String>,
    #[serde(default)]
    index: Option<usize>,
    condition: String,
    reason: String,
}

/// The four entries, as a timeline entry holds them (at most one is given).
#[derive(Clone, Debug, Default)]
pub struct LeavingFiles {
    pub interrupt: Option<Instances>,
    pub rebalance: Option<Instances>,
    pub maintenance: Option<MaintenanceFile>,
    pub unhealthy: Option<UnhealthyFile>,
}

/// When a scheduled event retires its instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum When {
    At(SystemTime),
    After(Duration),
}

/// Which node a monitoring agent marks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Marked {
    /// The node at this position of the cluster's nodes.
    Node(usize),
    /// The node of the group's instance at this position.
    Instance { node_group: String, index: usize },
}

/// A checked entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaving {
    Interrupt {
        node_group: String,
        pick: Pick,
    },
    Rebalance {
        node_group: String,
        pick: Pick,
    },
    Maintenance {
        node_group: String,
        pick: Pick,
        when: When,
    },
    Unhealthy {
        marked: Marked,
        condition: String,
        reason: String,
    },
}

impl LeavingFiles {
    /// How many of the four are given.
    pub fn given(&self) -> usize {
        usize::from(self.interrupt.is_some())
            + usize::from(self.rebalance.is_some())
            + usize::from(self.maintenance.is_some())
            + usize::from(self.unhealthy.is_some())
    }

    /// The one given, checked against `scenario`, or why it cannot be played (naming the entry's key).
    /// `played_at` is the wall-clock time the entry is played at, when the script has a `start`.
    pub fn read(
        self,
        scenario: &Scenario,
        played_at: Option<SystemTime>,
    ) -> Result<Option<Leaving>, Invalid> {
        if let Some(i) = self.interrupt {
            let (node_group, pick) = i.read("interrupt", scenario, Capacity::Spot)?;
            return Ok(Some(Leaving::Interrupt { node_group, pick }));
        }
        if let Some(i) = self.rebalance {
            let (node_group, pick) = i.read("rebalance", scenario, Capacity::Spot)?;
            return Ok(Some(Leaving::Rebalance { node_group, pick }));
        }
        if let Some(m) = self.maintenance {
            let instances = Instances {
                node_group: m.node_group,
                count: m.count,
                index: m.index,
            };
            let (node_group, pick) = instances.read("maintenance", scenario, Capacity::Any)?;
            let when = match (m.at, m.after) {
                (Some(at), None) => When::At(maintenance_at(&at, played_at)?),
                (None, Some(after)) => When::After(after),
                _ => {
                    let rule = "give exactly one of `at` and `in`";
                    return Err(Invalid::new("maintenance", rule));
                }
            };
            return Ok(Some(Leaving::Maintenance {
                node_group,
                pick,
                when,
            }));
        }
        match self.unhealthy {
            Some(u) => u.read(scenario).map(Some),
            None => Ok(None),
        }
    }
}

/// A `maintenance.at`: RFC 3339, read against the script's `start` (never the machine's clock), and no
/// earlier than when the entry is played (`played_at`).
fn maintenance_at(text: &str, played_at: Option<SystemTime>) -> Result<SystemTime, Invalid> {
    let at = rfc3339("maintenance.at", text)?;
    let played_at = played_at.ok_or_else(|| {
        let rule = "needs the script's `start` (what it is read against); or give `in`";
        Invalid::new("maintenance.at", rule)
    })?;
    if at < played_at {
        let rule = format!(
            "{text:?} is before the entry is played ({}, the script's start plus the entry's `at`)",
            humantime::format_rfc3339_seconds(played_at)
        );
        return Err(Invalid::new("maintenance.at", rule));
    }
    Ok(at)
}

/// Which groups an entry may name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capacity {
    /// SPOT groups only (EC2 interrupts and rebalances Spot instances only).
    Spot,
    Any,
}

impl Instances {
    fn read(
        self,
        key: &str,
        scenario: &Scenario,
        capacity: Capacity,
    ) -> Result<(String, Pick), Invalid> {
        let group = (scenario.node_groups.iter())
            .find(|g| g.spec.id == self.node_group)
            .ok_or_else(|| {
                let rule = format!("no node group {:?} in the scenario", self.node_group);
                Invalid::new(key, rule)
            })?;
        if capacity == Capacity::Spot && !group.is_spot() {
            let rule = format!(
                "node group {:?} is not SPOT: EC2 does this to Spot instances only",
                self.node_group
            );
            return Err(Invalid::new(key, rule));
        }
        let pick = match (self.count, self.index) {
            (Some(0), None) => return Err(Invalid::new(key, "count must be at least 1")),
            (Some(count), None) => Pick::Count(count),
            (None, Some(index)) => Pick::Index(index),
            _ => {
                let rule = "give exactly one of `count` and `index`";
                return Err(Invalid::new(key, rule));
            }
        };
        check_pick(key, group, pick)?;
        Ok((self.node_group, pick))
    }
}

/// The most instances group `group` can ever list: its max size, or its `availableCapacity` when less.
fn most_instances(group: &SimNodeGroup) -> usize {
    let max = usize::try_from(group.spec.max_size).unwrap_or(0);
    (group.available_capacity).map_or(max, |c| max.min(c as usize))
}

/// Refuses a `count` or `index` the group can never have, whatever the day did to it by then.
fn check_pick(key: &str, group: &SimNodeGroup, pick: Pick) -> Result<(), Invalid> {
    let most = most_instances(group);
    let (asked, field) = match pick {
        Pick::Count(count) if count > most => (count, "count"),
        Pick::Index(index) if index >= most => (index, "index"),
        _ => return Ok(()),
    };
    let rule = format!(
        "{field} {asked} is beyond node group {:?}, which never has more than {most} instance(s) (its \
         maxSize, or availableCapacity when less)",
        group.spec.id
    );
    Err(Invalid::new(key, rule))
}

impl UnhealthyFile {
    fn read(self, scenario: &Scenario) -> Result<Leaving, Invalid> {
        repair_condition("unhealthy.condition", &self.condition)?;
        if self.reason.is_empty() {
            return Err(Invalid::new("unhealthy.reason", "must not be empty"));
        }
        let marked = match (self.node, self.node_group, self.index) {
            (Some(node), None, None) => Marked::Node(node),
            (None, Some(node_group), Some(index)) => {
                let group = (scenario.node_groups.iter())
                    .find(|g| g.spec.id == node_group)
                    .ok_or_else(|| {
                        let rule = format!("no node group {node_group:?} in the scenario");
                        Invalid::new("unhealthy.nodeGroup", rule)
                    })?;
                check_pick("unhealthy", group, Pick::Index(index))?;
                Marked::Instance { node_group, index }
            }
            _ => {
                let rule = "give `node` (a position among the nodes), or `nodeGroup` and `index`";
                return Err(Invalid::new("unhealthy", rule));
            }
        };
        Ok(Leaving::Unhealthy {
            marked,
            condition: self.condition,
            reason: self.reason,
        })
    }
}
