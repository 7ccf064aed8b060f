//! Graceful degradation's metric, cluster-autoscaler's `skipped_pods_count`: the pending pods a loop did not
//! try because placing them ran past `--pending-pods-batching-timeout` (0 when every pod was tried).

use crate::autoscaler::status::Status;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Upstream's `requestor` label: which simulation skipped them (here, as there, the filter-out processor:
/// the pending pods placed on the nodes there are).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestorLabels {
    requestor: &'static str,
}

const FILTER_OUT: RequestorLabels = RequestorLabels {
    requestor: "filter-out-pod-list-processor",
};

pub(super) struct SkippedMetrics {
    pods: Family<RequestorLabels, Gauge>,
}

impl SkippedMetrics {
    pub(super) fn register(registry: &mut Registry) -> SkippedMetrics {
        let metrics = SkippedMetrics {
            pods: Family::default(),
        };
        registry.register(
            "skipped_pods_count",
            "Pending pods the last loop did not try, by requestor: placing them ran past \
             --pending-pods-batching-timeout (graceful degradation), so they wait for the next loop",
            metrics.pods.clone(),
        );
        metrics.pods.get_or_create(&FILTER_OUT).set(0);
        metrics
    }

    pub(super) fn observe(&self, status: &Status) {
        let skipped = i64::try_from(status.skipped_pods).unwrap_or(i64::MAX);
        self.pods.get_or_create(&FILTER_OUT).set(skipped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_loops_skipped_pods_are_counted_under_upstreams_requestor() {
        let mut registry = Registry::with_prefix("ekscale");
        let metrics = SkippedMetrics::register(&mut registry);
        let encoded = |registry: &Registry| {
            let mut out = String::new();
            prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
            out
        };
        let line = "ekscale_skipped_pods_count{requestor=\"filter-out-pod-list-processor\"}";
        assert!(encoded(&registry).contains(&format!("{line} 0")));
        let status = Status {
            skipped_pods: 1234,
            ..Status::default()
        };
        metrics.observe(&status);
        assert!(encoded(&registry).contains(&format!("{line} 1234")));
        metrics.observe(&Status::default());
        assert!(encoded(&registry).contains(&format!("{line} 0")));
    }
}
