//! The disruption document (issue 47), in Karpenter's words: for the node groups whose names an entry's
//! `match` finds, the budgets that limit how many nodes may be disrupted at once, when nodes expire, and how
//! long a blocked drain waits before it is forced.
//!
//! ```yaml
//! nodeGroups:
//!   - match: "^general$"
//!     budgets:
//!       - nodes: "20%"
//!       - nodes: "0"
//!         schedule: "0 9 * * mon-fri"
//!         duration: 8h
//!         timeZone: Europe/Berlin
//!         reasons: [Underutilized, Empty]
//!     expireAfter: 720h
//!     terminationGracePeriod: 2h
//!     repair: {after: 10m, conditions: {AcceleratedHardwareReady: 5m}}
//! ```
//!
//! The document is refused whole when any part of it is wrong, naming the entry (its index and its match)
//! and the field, so that a typo never leaves a group with less protection than was written.

use super::budget::{Budget, Nodes, NodesError, Reason, Reasons};
use super::duration::{self, DurationError};
use super::policy::GroupPolicy;
use super::repair::{NodeRepair, RepairText};
use super::schedule::{Schedule, ScheduleError};
use super::sizes::SizeSchedule;
use regex::Regex;
use serde::Deserialize;
use std::fmt;
use std::time::Duration;

/// The document as written.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    #[serde(default)]
    node_groups: Option<Vec<EntryText>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EntryText {
    #[serde(rename = "match")]
    pattern: String,
    #[serde(default)]
    budgets: Option<Vec<BudgetText>>,
    #[serde(default)]
    expire_after: Option<String>,
    #[serde(default)]
    termination_grace_period: Option<String>,
    #[serde(default)]
    repair: Option<RepairText>,
    #[serde(default)]
    schedules: Option<Vec<SizeScheduleText>>,
    /// How long before EKS scales a Capacity Block group in its pods are planned elsewhere.
    #[serde(default)]
    drain_lead: Option<String>,
    /// Whether the group's nodes on reserved capacity (an active Capacity Block or ODCR) may be scaled down
    /// for low utilization; by default not, as removing them saves nothing.
    #[serde(default)]
    scale_down_reserved: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SizeScheduleText {
    schedule: String,
    duration: String,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    min_size: Option<i32>,
    #[serde(default)]
    max_size: Option<i32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct BudgetText {
    /// A string in Karpenter (`"20%"`, `"5"`); a bare YAML number is taken as a count too.
    nodes: serde_norway::Value,
    #[serde(default)]
    schedule: Option<String>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    time_zone: Option<String>,
    #[serde(default)]
    reasons: Option<Vec<Reason>>,
}

/// An entry of `nodeGroups`, as errors name it: `nodeGroups[1] (match "^gpu-")`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryName {
    pub index: usize,
    /// Its `match`, when it has one that is a string.
    pub pattern: Option<String>,
}

impl fmt::Display for EntryName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nodeGroups[{}]", self.index)?;
        match &self.pattern {
            Some(pattern) => write!(f, " (match {pattern:?})"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DisruptionConfigError {
    /// Not the document: YAML syntax, a value of the wrong type, a key it does not have. `message` is
    /// serde_norway's, with the path inside the entry and the line.
    #[error("{}{message}", entry.as_ref().map(|e| format!("{e}: ")).unwrap_or_default())]
    Yaml {
        entry: Option<EntryName>,
        message: String,
    },
    /// A value the document does not take, in `field` of `entry` (as `budgets[1].schedule`).
    #[error("{entry}: {field}: {problem}")]
    Invalid {
        entry: EntryName,
        field: String,
        problem: Problem,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum Problem {
    #[error("not a regular expression: {0}")]
    Match(#[from] regex::Error),
    #[error(transparent)]
    Nodes(#[from] NodesError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error(transparent)]
    Duration(#[from] DurationError),
    #[error("schedule without duration: each firing opens a window of `duration`")]
    ScheduleWithoutDuration,
    #[error("duration without schedule: the window opens when `schedule` fires")]
    DurationWithoutSchedule,
    #[error("timeZone without schedule: the zone is the one the schedule is read in")]
    TimeZoneWithoutSchedule,
    #[error("{0} is listed twice")]
    RepeatedReason(Reason),
    #[error("0 would replace every node as soon as it is up: write Never to turn expiry off")]
    ZeroExpiry,
    #[error("{}", .0.rule)]
    NodeRepair(crate::model::Invalid),
    #[error("{0} must not be negative")]
    NegativeSize(i32),
    #[error("minSize {min} is more than maxSize {max}")]
    MinOverMax { min: i32, max: i32 },
    #[error("a window that sets neither minSize nor maxSize changes nothing")]
    NoSizes,
    #[error(
        "Never is for expireAfter: leave terminationGracePeriod out to let a drain wait for as long as it takes"
    )]
    NeverGrace,
}

/// The disruption document, read and checked: the entries in the order written.
#[derive(Clone, Debug, Default)]
pub struct DisruptionConfig {
    entries: Vec<(Regex, GroupPolicy)>,
}

impl DisruptionConfig {
    /// Reads the document. An empty one, or `nodeGroups: []`, is valid and says nothing.
    pub fn parse(text: &str) -> Result<DisruptionConfig, DisruptionConfigError> {
        let document: Option<Document> =
            serde_norway::from_str(text).map_err(|e| yaml_error(text, &e))?;
        let entries = (document.and_then(|d| d.node_groups).unwrap_or_default())
            .into_iter()
            .enumerate()
            .map(|(index, entry)| read_entry(index, entry))
            .collect::<Result<_, _>>()?;
        Ok(DisruptionConfig { entries })
    }

    /// The policy of the first entry whose `match` finds `group` (anywhere in the name, as Go's and Rust's
    /// regular expressions search: anchor with `^` and `$` to match the whole name). `None` when no entry
    /// matches: the group is disrupted as it would be without the document.
    pub fn policy_for(&self, group: &str) -> Option<&GroupPolicy> {
        (self.entries.iter())
            .find(|(pattern, _)| pattern.is_match(group))
            .map(|(_, policy)| policy)
    }

    /// Whether the document has no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn read_entry(
    index: usize,
    entry: EntryText,
) -> Result<(Regex, GroupPolicy), DisruptionConfigError> {
    let name = EntryName {
        index,
        pattern: Some(entry.pattern.clone()),
    };
    let invalid = |field: &str, problem: Problem| DisruptionConfigError::Invalid {
        entry: name.clone(),
        field: field.to_string(),
        problem,
    };
    let pattern = Regex::new(&entry.pattern).map_err(|e| invalid("match", e.into()))?;
    // Budgets left out mean no limit, not Karpenter's default of one 10% budget: a document with no entry for a
    // group, or an entry that only sets expireAfter, must leave scale-down exactly as it is today.
    let budgets = (entry.budgets.unwrap_or_default().into_iter().enumerate())
        .map(|(i, budget)| {
            read_budget(budget).map_err(|(field, p)| invalid(&format!("budgets[{i}]{field}"), p))
        })
        .collect::<Result<_, _>>()?;
    let expire_after = match entry.expire_after.as_deref() {
        None | Some("Never") => None,
        Some(text) => match duration::parse(text).map_err(|e| invalid("expireAfter", e.into()))? {
            Duration::ZERO => return Err(invalid("expireAfter", Problem::ZeroExpiry)),
            after => Some(after),
        },
    };
    let termination_grace_period = match entry.termination_grace_period.as_deref() {
        None => None,
        Some("Never") => return Err(invalid("terminationGracePeriod", Problem::NeverGrace)),
        // 0s is taken: the drain is forced at once, as Karpenter does.
        Some(text) => {
            Some(duration::parse(text).map_err(|e| invalid("terminationGracePeriod", e.into()))?)
        }
    };
    let repair = (entry.repair.map(NodeRepair::read).transpose())
        .map_err(|e| invalid(&e.field.clone(), Problem::NodeRepair(e)))?;
    let schedules = (entry.schedules.unwrap_or_default().into_iter().enumerate())
        .map(|(i, s)| {
            read_size_schedule(s)
                .map_err(|(field, p)| invalid(&format!("schedules[{i}]{field}"), p))
        })
        .collect::<Result<_, _>>()?;
    let drain_lead = (entry.drain_lead.as_deref())
        .map(|text| duration::parse(text).map_err(|e| invalid("drainLead", e.into())))
        .transpose()?;
    let policy = GroupPolicy::new(budgets, expire_after, termination_grace_period);
    let policy = policy.with_repair(repair).with_capacity(
        schedules,
        drain_lead,
        entry.scale_down_reserved.unwrap_or(false),
    );
    Ok((pattern, policy))
}

/// One budget, or the field inside it that is wrong (`""` for the budget itself, `.nodes` for a field) and why.
fn read_budget(budget: BudgetText) -> Result<Budget, (&'static str, Problem)> {
    let nodes = read_nodes(&budget.nodes).map_err(|e| (".nodes", e.into()))?;
    let mut listed: Vec<Reason> = budget.reasons.unwrap_or_default();
    listed.sort();
    if let Some(pair) = listed.windows(2).find(|pair| pair[0] == pair[1]) {
        return Err((".reasons", Problem::RepeatedReason(pair[0])));
    }
    let schedule = match (budget.schedule, budget.duration) {
        (None, None) if budget.time_zone.is_some() => {
            return Err((".timeZone", Problem::TimeZoneWithoutSchedule));
        }
        (None, None) => None,
        (Some(_), None) => return Err(("", Problem::ScheduleWithoutDuration)),
        (None, Some(_)) => return Err(("", Problem::DurationWithoutSchedule)),
        (Some(cron), Some(duration)) => {
            let duration = duration::parse(&duration).map_err(|e| (".duration", e.into()))?;
            let schedule =
                Schedule::new(&cron, duration, budget.time_zone.as_deref()).map_err(|e| {
                    let field = match e {
                        ScheduleError::Zone(_) => ".timeZone",
                        ScheduleError::EmptyWindow | ScheduleError::PartMinute(_) => ".duration",
                        _ => ".schedule",
                    };
                    (field, Problem::Schedule(e))
                })?;
            Some(schedule)
        }
    };
    Ok(Budget {
        nodes,
        schedule,
        reasons: Reasons::of(&listed),
    })
}

/// One of `schedules`, or the field inside it that is wrong and why.
fn read_size_schedule(text: SizeScheduleText) -> Result<SizeSchedule, (&'static str, Problem)> {
    for (field, size) in [(".minSize", text.min_size), (".maxSize", text.max_size)] {
        if let Some(n) = size.filter(|n| *n < 0) {
            return Err((field, Problem::NegativeSize(n)));
        }
    }
    match (text.min_size, text.max_size) {
        (None, None) => return Err(("", Problem::NoSizes)),
        (Some(min), Some(max)) if min > max => return Err(("", Problem::MinOverMax { min, max })),
        _ => {}
    }
    let duration = duration::parse(&text.duration).map_err(|e| (".duration", e.into()))?;
    let window =
        Schedule::new(&text.schedule, duration, text.time_zone.as_deref()).map_err(|e| {
            let field = match e {
                ScheduleError::Zone(_) => ".timeZone",
                ScheduleError::EmptyWindow | ScheduleError::PartMinute(_) => ".duration",
                _ => ".schedule",
            };
            (field, Problem::Schedule(e))
        })?;
    Ok(SizeSchedule {
        window,
        min_size: text.min_size,
        max_size: text.max_size,
    })
}

/// `nodes` as Karpenter writes it (a string), or a bare YAML number of nodes.
fn read_nodes(value: &serde_norway::Value) -> Result<Nodes, NodesError> {
    match value {
        serde_norway::Value::String(text) => text.parse(),
        serde_norway::Value::Number(n) => match n.as_u64() {
            Some(count) => Ok(Nodes::Count(count)),
            None => Err(NodesError::Syntax(n.to_string())), // negative, or a fraction
        },
        other => Err(NodesError::Syntax(
            serde_norway::to_string(other)
                .unwrap_or_default()
                .trim()
                .to_string(),
        )),
    }
}

/// serde_norway's error, with the entry it is in named by its match as well as its index. serde_norway starts
/// its message with the path of the value it refused (`nodeGroups[2].budgets[0].reasons[0]: unknown variant
/// ...`); the entry's match is read again from the text, leniently, since the text did not read as the document.
fn yaml_error(text: &str, error: &serde_norway::Error) -> DisruptionConfigError {
    let message = error.to_string();
    let entry = (message.strip_prefix("nodeGroups["))
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(index, rest)| Some((index.parse::<usize>().ok()?, rest)));
    let Some((index, rest)) = entry else {
        return DisruptionConfigError::Yaml {
            entry: None,
            message,
        };
    };
    let pattern = serde_norway::from_str::<serde_norway::Value>(text)
        .ok()
        .and_then(|doc| {
            Some(
                doc.get("nodeGroups")?
                    .get(index)?
                    .get("match")?
                    .as_str()?
                    .to_string(),
            )
        });
    DisruptionConfigError::Yaml {
        entry: Some(EntryName { index, pattern }),
        message: (rest
            .strip_prefix('.')
            .or_else(|| rest.strip_prefix(": "))
            .unwrap_or(rest))
        .to_string(),
    }
}
