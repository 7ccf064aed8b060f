//! The node groups' sizes, cluster-autoscaler's `node_group_target_count`, `_min_count` and `_max_count`, and
//! the min and max a `schedules:` window holds a group to while it is open.

use super::labels::{BoundLabels, GroupLabels};
use crate::autoscaler::status::Status;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The node groups' sizes: target, min and max.
pub(super) struct GroupSizeMetrics {
    target: Family<GroupLabels, Gauge>,
    min: Family<GroupLabels, Gauge>,
    max: Family<GroupLabels, Gauge>,
    /// The sizes a `schedules:` window holds a group to (`bound` min or max); absent while none is open.
    scheduled: Family<BoundLabels, Gauge>,
}

impl GroupSizeMetrics {
    pub(super) fn register(registry: &mut Registry) -> GroupSizeMetrics {
        let metrics = GroupSizeMetrics {
            target: Family::default(),
            min: Family::default(),
            max: Family::default(),
            scheduled: Family::default(),
        };
        let sized = [
            (
                "node_group_target_count",
                "Target size per node group",
                &metrics.target,
            ),
            (
                "node_group_min_count",
                "Min size per node group",
                &metrics.min,
            ),
            (
                "node_group_max_count",
                "Max size per node group",
                &metrics.max,
            ),
        ];
        for (name, help, family) in sized {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "autoscaler_scheduled_size",
            "Min and max size a scheduled window holds a node group to; absent while none is open",
            metrics.scheduled.clone(),
        );
        metrics
    }

    /// Each node group's target, min and max size as the loop found them.
    pub(super) fn observe(&self, status: &Status) {
        for g in &status.node_groups {
            let labels = GroupLabels {
                node_group: g.id.clone(),
            };
            self.target
                .get_or_create(&labels)
                .set(i64::from(g.target_size));
            self.min.get_or_create(&labels).set(i64::from(g.min_size));
            self.max.get_or_create(&labels).set(i64::from(g.max_size));
        }
        self.scheduled.clear();
        for g in &status.node_groups {
            let Some(s) = &g.schedule else { continue };
            for (bound, size) in [("min", s.min_size), ("max", s.max_size)] {
                let labels = BoundLabels {
                    node_group: g.id.clone(),
                    bound,
                };
                self.scheduled.get_or_create(&labels).set(i64::from(size));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn scheduled_sizes_while_a_window_is_open_and_absent_after() {
        use crate::autoscaler::status::{GroupStatus, ScheduleStatus};
        let until = SystemTime::UNIX_EPOCH;
        let mut status = Status {
            node_groups: vec![GroupStatus {
                id: "batch".into(),
                max_size: 10,
                schedule: Some(ScheduleStatus::new(0, 2, until, "schedules[0]".into())),
                ..GroupStatus::default()
            }],
            ..Status::default()
        };
        let mut registry = Registry::with_prefix("ekscale");
        let metrics = GroupSizeMetrics::register(&mut registry);
        let scheduled = |registry: &Registry| -> Vec<String> {
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
            (text.lines())
                .filter(|l| l.starts_with("ekscale_autoscaler_scheduled_size{"))
                .map(str::to_string)
                .collect()
        };
        metrics.observe(&status);
        let mut seen = scheduled(&registry);
        seen.sort();
        assert_eq!(
            seen,
            [
                r#"ekscale_autoscaler_scheduled_size{node_group="batch",bound="max"} 2"#,
                r#"ekscale_autoscaler_scheduled_size{node_group="batch",bound="min"} 0"#,
            ]
        );
        status.node_groups[0].schedule = None;
        metrics.observe(&status);
        assert!(scheduled(&registry).is_empty());
    }
}
