//! Leaving nodes' metrics, `ekscale_autoscaler_leaving_*` (the design's prefix for the companion's new
//! families): how many nodes are leaving by reason, how their pods were planned for, and how long until none
//! of them was pending any more.

use super::labels::{ReasonLabels, ReasonOutcomeLabels};
use crate::autoscaler::status::Status;
use crate::model::LeavingReason;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub(super) struct LeavingMetrics {
    nodes: Family<ReasonLabels, Gauge>,
    replacements: Family<ReasonOutcomeLabels, Counter>,
    seconds: Histogram,
}

impl LeavingMetrics {
    pub(super) fn register(registry: &mut Registry) -> LeavingMetrics {
        let metrics = LeavingMetrics {
            nodes: Family::default(),
            replacements: Family::default(),
            // 5 s to ~85 min: a Spot warning gives two minutes, a new node takes one or two.
            seconds: Histogram::new(exponential_buckets(5.0, 2.0, 11)),
        };
        registry.register(
            "autoscaler_leaving_nodes",
            "Nodes leaving for reasons no autoscaler decided, by reason (spotInterruption, rebalance, \
             scheduledEvent, instanceStopped, unhealthy, capacityBlockEnding)",
            metrics.nodes.clone(),
        );
        registry.register(
            "autoscaler_leaving_replacements",
            "Leaving nodes by how their pods were planned for in the loop that first saw them: existingRoom, \
             scaleUp, nodeGroup (the group replaces it), unmet, later (nothing moved yet)",
            metrics.replacements.clone(),
        );
        registry.register(
            "autoscaler_leaving_replacement_seconds",
            "Seconds from the loop that first saw a node leaving to the loop where none of its pods was \
             pending any more",
            metrics.seconds.clone(),
        );
        metrics
    }

    pub(super) fn observe(&self, status: &Status) {
        for reason in LeavingReason::ALL {
            let count = status
                .leaving
                .iter()
                .filter(|l| l.reason == reason.as_str());
            let labels = ReasonLabels {
                reason: reason.as_str().to_string(),
            };
            self.nodes.get_or_create(&labels).set(count.count() as i64);
        }
        let replaced = &status.leaving_replaced;
        for &(reason, outcome) in &replaced.outcomes {
            let labels = ReasonOutcomeLabels {
                reason: reason.as_str(),
                outcome,
            };
            self.replacements.get_or_create(&labels).inc();
        }
        for &(_, seconds) in &replaced.seconds {
            self.seconds.observe(seconds);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscaler::leaving::{LeavingAction, LeavingReplaced, LeavingStatus};

    #[test]
    fn nodes_by_reason_outcomes_and_seconds_are_counted() {
        let mut registry = Registry::with_prefix("ekscale");
        let metrics = LeavingMetrics::register(&mut registry);
        let status = Status {
            leaving: vec![LeavingStatus {
                node: "a".into(),
                node_group: "spot".into(),
                reason: "spotInterruption".into(),
                at: String::new(),
                action: LeavingAction::Drain,
                detail: String::new(),
                source: String::new(),
            }],
            leaving_replaced: LeavingReplaced {
                outcomes: vec![(LeavingReason::SpotInterruption, "scaleUp")],
                seconds: vec![(LeavingReason::SpotInterruption, 75.0)],
            },
            ..Status::default()
        };
        metrics.observe(&status);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(
            has("ekscale_autoscaler_leaving_nodes{reason=\"spotInterruption\"} 1"),
            "{text}"
        );
        assert!(
            has("ekscale_autoscaler_leaving_nodes{reason=\"unhealthy\"} 0"),
            "{text}"
        );
        assert!(
            has(
                "ekscale_autoscaler_leaving_replacements_total{reason=\"spotInterruption\",outcome=\"scaleUp\"} 1"
            ),
            "{text}"
        );
        assert!(
            has("ekscale_autoscaler_leaving_replacement_seconds_count 1"),
            "{text}"
        );
    }
}
