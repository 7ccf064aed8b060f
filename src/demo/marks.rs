//! What the report marks on a day's charts, from what each loop said: spans of time when a group's nodes
//! were held (by its disruption budget, or by a managed node group update) or its sizes were a schedule's, and
//! moments when an expired or drifted node was removed or replaced, or a node was drained because its Capacity
//! Block ends. The log says each span's start and end and each moment.

use crate::autoscaler::status::Status;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// A span of the day: what held which group's nodes, and the most nodes held at once.
#[derive(Clone, Debug)]
pub struct Span {
    pub from: Duration,
    /// `None` while it lasts (the day ended in it).
    pub to: Option<Duration>,
    pub label: String,
    pub most_held: usize,
}

/// An expired or drifted node removed or replaced.
#[derive(Clone, Debug)]
pub struct Moment {
    pub at: Duration,
    pub label: String,
}

/// What held a group's nodes, as the report names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Hold {
    Budget,
    Update,
    /// A window of its `schedules:` holds its sizes.
    Schedule,
}

#[derive(Debug, Default)]
pub struct Marks {
    pub spans: Vec<Span>,
    pub moments: Vec<Moment>,
    /// The spans still open, by group and hold: their index in `spans`.
    open: BTreeMap<(String, Hold), usize>,
    /// The nodes already marked as leaving because their Capacity Block ends.
    block_ending: BTreeSet<String>,
}

impl Marks {
    /// Takes in one loop at `at`; returns the log lines it adds (kind, text).
    pub fn observe(&mut self, at: Duration, status: &Status) -> Vec<(&'static str, String)> {
        let mut said = Vec::new();
        let mut now: BTreeMap<(String, Hold), (usize, String)> = BTreeMap::new();
        for g in (status.node_groups.iter()).filter(|g| g.eks_status.as_deref() == Some("UPDATING"))
        {
            let why = format!("{} is UPDATING: EKS replaces its nodes", g.id);
            now.insert((g.id.clone(), Hold::Update), (0, why));
        }
        for g in &status.node_groups {
            if let Some(s) = &g.schedule {
                let why = format!(
                    "{}'s schedule holds it to {} to {} node(s) until {}",
                    g.id, s.min_size, s.max_size, s.until
                );
                now.insert((g.id.clone(), Hold::Schedule), (0, why));
            }
        }
        for k in &status.scale_down.unremovable {
            let hold = match k.reason.as_str() {
                "DisruptionBudget" => Hold::Budget,
                "NodeGroupUpdating" => Hold::Update,
                _ => continue,
            };
            let group = k.node_group.clone().unwrap_or_default();
            let entry = now.entry((group, hold)).or_insert((0, k.detail.clone()));
            entry.0 += 1;
        }
        for (key, (held, why)) in &now {
            match self.open.get(key) {
                Some(&i) => self.spans[i].most_held = self.spans[i].most_held.max(*held),
                None => {
                    let label = match key.1 {
                        Hold::Budget => format!("{}: held by its budget", key.0),
                        Hold::Update => format!("{} UPDATING", key.0),
                        Hold::Schedule => format!("{}: sized by its schedule", key.0),
                    };
                    self.open.insert(key.clone(), self.spans.len());
                    self.spans.push(Span {
                        from: at,
                        to: None,
                        label,
                        most_held: *held,
                    });
                    said.push(("held", format!("{held} node(s) of {} kept: {why}", key.0)));
                }
            }
        }
        let ended: Vec<_> = (self.open.keys())
            .filter(|k| !now.contains_key(*k))
            .cloned()
            .collect();
        for key in ended {
            let i = self.open.remove(&key).expect("open");
            self.spans[i].to = Some(at);
            let text = match key.1 {
                Hold::Budget => format!("{}: its budgets let its nodes go again", key.0),
                Hold::Update => format!("{}: the update is over", key.0),
                Hold::Schedule => format!("{}: its schedule's window closed", key.0),
            };
            said.push(("held", text));
        }
        let ending = (status.leaving.iter()).filter(|l| l.reason == "capacityBlockEnding");
        for l in ending {
            if self.block_ending.insert(l.node.clone()) {
                let label = format!(
                    "{} ({}) capacity block ending: {}",
                    l.node, l.node_group, l.action
                );
                self.moments.push(Moment {
                    at,
                    label: label.clone(),
                });
                said.push(("leaving", format!("{label}; {}", l.detail)));
            }
        }
        for d in (status.scale_down.disruptions.iter()).filter(|d| d.action != "wait") {
            let label = format!("{} ({}) {}: {}", d.node, d.node_group, d.reason, d.action);
            self.moments.push(Moment {
                at,
                label: label.clone(),
            });
            said.push(("disruption", format!("{label}; {}", d.detail)));
        }
        said
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscaler::status::{DisruptionStatus, GroupStatus, KeptNode, ScaleDownStatus};

    fn kept(node: &str, reason: &str) -> KeptNode {
        KeptNode {
            node: node.into(),
            node_group: Some("general".into()),
            reason: reason.into(),
            detail: "general: 0 allowed from 09:00 to 17:00 Europe/Berlin".into(),
        }
    }

    #[test]
    fn spans_open_and_close_with_what_the_loops_say() {
        let mut marks = Marks::default();
        let minute = |m: u64| Duration::from_secs(60 * m);
        let mut held = Status::default();
        held.scale_down.unremovable =
            vec![kept("a", "DisruptionBudget"), kept("b", "DisruptionBudget")];
        let said = marks.observe(minute(1), &held);
        assert_eq!(said.len(), 1);
        assert!(
            said[0]
                .1
                .starts_with("2 node(s) of general kept: general: 0 allowed"),
            "{said:?}"
        );
        held.scale_down.unremovable.pop();
        assert!(marks.observe(minute(2), &held).is_empty());

        let updating = Status {
            node_groups: vec![GroupStatus {
                id: "batch".into(),
                eks_status: Some("UPDATING".into()),
                ..GroupStatus::default()
            }],
            scale_down: ScaleDownStatus {
                disruptions: vec![DisruptionStatus {
                    node: "n1".into(),
                    node_group: "general".into(),
                    reason: "expired".into(),
                    action: "replace".into(),
                    detail: "a new general node first".into(),
                }],
                ..ScaleDownStatus::default()
            },
            ..Status::default()
        };
        let said = marks.observe(minute(3), &updating);
        let texts: Vec<&str> = said.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "0 node(s) of batch kept: batch is UPDATING: EKS replaces its nodes",
                "general: its budgets let its nodes go again",
                "n1 (general) expired: replace; a new general node first",
            ]
        );
        let spans: Vec<_> = (marks.spans.iter())
            .map(|s| (s.label.as_str(), s.from, s.to, s.most_held))
            .collect();
        assert_eq!(
            spans,
            [
                ("general: held by its budget", minute(1), Some(minute(3)), 2),
                ("batch UPDATING", minute(3), None, 0),
            ]
        );
        assert_eq!(marks.moments.len(), 1);
    }

    #[test]
    fn a_schedule_is_a_span_and_a_capacity_block_ending_a_moment_per_node() {
        use crate::autoscaler::status::{LeavingAction, LeavingStatus, ScheduleStatus};
        let mut marks = Marks::default();
        let minute = |m: u64| Duration::from_secs(60 * m);
        let ending = |node: &str| LeavingStatus {
            node: node.into(),
            node_group: "gpu-block".into(),
            reason: "capacityBlockEnding".into(),
            at: "2026-03-03T02:20:00Z".into(),
            action: LeavingAction::Drain,
            detail: "its block ends".into(),
            source: String::new(),
        };
        let night = Status {
            node_groups: vec![GroupStatus {
                id: "batch".into(),
                schedule: Some(ScheduleStatus {
                    min_size: 0,
                    max_size: 0,
                    until: "2026-03-03T06:00:00Z".into(),
                    window: "schedules[0]: \"0 19 * * mon-fri\" for 12h in Europe/Berlin".into(),
                    note: None,
                }),
                ..GroupStatus::default()
            }],
            leaving: vec![ending("g1")],
            ..Status::default()
        };
        let said = marks.observe(minute(1), &night);
        let texts: Vec<&str> = said.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(
            texts,
            [
                "0 node(s) of batch kept: batch's schedule holds it to 0 to 0 node(s) until 2026-03-03T06:00:00Z",
                "g1 (gpu-block) capacity block ending: drain; its block ends",
            ]
        );
        // The same node again is no new moment; a second node is.
        let later = Status {
            leaving: vec![ending("g1"), ending("g2")],
            ..night.clone()
        };
        assert_eq!(marks.observe(minute(2), &later).len(), 1);
        let said = marks.observe(minute(3), &Status::default());
        assert_eq!(said[0].1, "batch: its schedule's window closed");
        assert_eq!(marks.spans[0].label, "batch: sized by its schedule");
        assert_eq!(
            (marks.spans[0].from, marks.spans[0].to),
            (minute(1), Some(minute(3)))
        );
        assert_eq!(marks.moments.len(), 2);
    }
}
