//! Capacity paid for ahead, `ekscale_autoscaler_reserved_instances`: each group's reservations (Capacity
//! Blocks, ODCRs) with their instances in use and available, as the provider last read them; what was paid
//! for and stands unused is what a team asks of these.

use crate::autoscaler::status::Status;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReservedLabels {
    node_group: String,
    reservation: String,
    /// `capacity-block` or `odcr`.
    r#type: String,
    /// `used` or `available`.
    state: &'static str,
}

pub(super) struct CapacityMetrics {
    instances: Family<ReservedLabels, Gauge>,
}

impl CapacityMetrics {
    pub(super) fn register(registry: &mut Registry) -> CapacityMetrics {
        let metrics = CapacityMetrics {
            instances: Family::default(),
        };
        registry.register(
            "autoscaler_reserved_instances",
            "Instances of the capacity reservations each node group's launch template targets (Capacity \
             Blocks, ODCRs), by state: used (an instance runs in it) or available",
            metrics.instances.clone(),
        );
        metrics
    }

    /// The reservations of this loop's groups; those no longer said are dropped.
    pub(super) fn observe(&self, status: &Status) {
        self.instances.clear();
        for group in &status.node_groups {
            for r in &group.reservations {
                let labels = |state| ReservedLabels {
                    node_group: group.id.clone(),
                    reservation: r.id.clone(),
                    r#type: r.kind.clone(),
                    state,
                };
                let used = r.total.saturating_sub(r.available);
                self.instances
                    .get_or_create(&labels("used"))
                    .set(i64::from(used));
                (self.instances.get_or_create(&labels("available"))).set(i64::from(r.available));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::autoscaler::status::{GroupStatus, ReservationStatus};

    #[test]
    fn each_reservation_says_its_used_and_available_instances_and_a_gone_one_is_dropped() {
        let mut registry = Registry::with_prefix("ekscale");
        let metrics = CapacityMetrics::register(&mut registry);
        let mut status = Status {
            node_groups: vec![GroupStatus {
                id: "gpu".into(),
                reservations: vec![ReservationStatus {
                    id: "cr-0b10c4".into(),
                    kind: "capacity-block".into(),
                    start: None,
                    end: None,
                    total: 4,
                    available: 1,
                }],
                ..GroupStatus::default()
            }],
            ..Status::default()
        };
        let encoded = |metrics: &CapacityMetrics, status: &Status| {
            metrics.observe(status);
            let mut text = String::new();
            prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
            text
        };
        let text = encoded(&metrics, &status);
        let labels = "node_group=\"gpu\",reservation=\"cr-0b10c4\",type=\"capacity-block\"";
        for line in [
            format!("ekscale_autoscaler_reserved_instances{{{labels},state=\"used\"}} 3"),
            format!("ekscale_autoscaler_reserved_instances{{{labels},state=\"available\"}} 1"),
        ] {
            assert!(text.lines().any(|l| l == line), "{line}: {text}");
        }
        status.node_groups[0].reservations.clear();
        let text = encoded(&metrics, &status);
        assert!(!text.contains("cr-0b10c4"), "{text}");
    }
}
