//! What the report marks on a day's charts, from what each loop said: spans of time when a group's nodes
//! were held (by its disruption budget, or by a managed node group update) and moments when an expired or
//! drifted node was removed or replaced. The log says each span's start and end and each moment.

use crate::autoscaler::status::Status;
use std::collections::BTreeMap;
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
}

#[derive(Debug, Default)]
pub struct Marks {
    pub spans: Vec<Span>,
    pub moments: Vec<Moment>,
    /// The spans still open, by group and hold: their index in `spans`.
    open: BTreeMap<(String, Hold), usize>,
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
            };
            said.push(("held", text));
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
}
