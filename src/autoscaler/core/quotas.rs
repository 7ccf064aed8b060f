//! The CapacityQuotas' two parts in a loop, each a stage that hands back a value: their statuses as
//! upstream's controller writes them (`quota_status.rs`), written first and from the view alone, since they
//! say what the registered nodes hold whatever this loop decides; and their figures in the report, what the
//! enforced ones held before this loop's scale-ups and what they hold after.

use crate::autoscaler::cluster::{ClusterSource, ClusterView, StatusNotWritten};
use crate::autoscaler::clustersnapshot::snapshot::ClusterSnapshot;
use crate::autoscaler::group::Group;
use crate::autoscaler::quota_status;
use crate::autoscaler::quotas::{QuotaLedger, QuotaUsage};
use crate::autoscaler::status::QuotaReport;
use crate::model::CapacityQuota;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// Each CapacityQuota's status as upstream's controller writes it, written back where it changed on
/// `actor`, the cluster the loop acts on (a status is the cluster's; `simulate` and a dry run leave it as it
/// is). With `enabled` unset (`--capacity-quotas-enabled=false`) quotas are not the companion's to keep.
/// Returns the statuses not written.
pub(crate) async fn write_statuses(
    enabled: bool,
    actor: Option<Arc<dyn ClusterSource>>,
    view: &ClusterView,
    now: SystemTime,
) -> Vec<StatusNotWritten> {
    let keeps = enabled && !view.quotas.is_empty();
    let Some(cluster) = actor.filter(|_| keeps) else {
        return Vec::new();
    };
    let reconciled = quota_status::reconcile(&view.quotas, &view.nodes, now);
    quota_status::write_statuses(cluster.as_ref(), &reconciled).await
}

/// The quotas the snapshot enforces: the view's, unless `enabled` is unset.
pub(crate) fn enforced(enabled: bool, view: &ClusterView) -> &[CapacityQuota] {
    if enabled { &view.quotas } else { &[] }
}

/// What the enforced quotas held in the snapshot before this loop's scale-ups, in the view's order.
pub(crate) struct Before(Vec<QuotaUsage>);

impl Before {
    /// The figures before scale-up, when quotas are enforced (`enabled`); none to report otherwise.
    pub(crate) fn read(enabled: bool, snapshot: &ClusterSnapshot) -> Option<Before> {
        enabled.then(|| Before(snapshot.totals().quotas.usage()))
    }

    /// Every CapacityQuota of the view in the report: an enforced one with its figures before and after
    /// this loop's scale-ups (the ones committed into `snapshot`), one carrying a problem with it.
    pub(crate) fn report(
        self,
        quotas: &[CapacityQuota],
        snapshot: &ClusterSnapshot,
        groups: &[Group],
    ) -> Vec<QuotaReport> {
        let after = QuotaLedger::of(&snapshot.quotas, &snapshot.places).usage();
        reports(quotas, self.0, after, groups)
    }
}

/// The report's quotas from the figures `before` and `after` (the enforced ones, in the view's order).
fn reports(
    quotas: &[CapacityQuota],
    before: Vec<QuotaUsage>,
    after: Vec<QuotaUsage>,
    groups: &[Group],
) -> Vec<QuotaReport> {
    let mut figures = before.into_iter().zip(after);
    let by_resource = |u: &QuotaUsage, of: &[u64]| -> BTreeMap<String, u64> {
        u.resources
            .iter()
            .cloned()
            .zip(of.iter().copied())
            .collect()
    };
    (quotas.iter())
        .map(|quota| match quota.problem() {
            Some(problem) => QuotaReport {
                name: quota.name.clone(),
                problem: Some(problem.to_string()),
                ..QuotaReport::default()
            },
            None => {
                let (before, after) = figures.next().expect("one usage per valid quota");
                QuotaReport {
                    name: quota.name.clone(),
                    problem: None,
                    limits: by_resource(&before, &before.limits),
                    used: by_resource(&before, &before.used),
                    after_scale_up: by_resource(&after, &after.used),
                    node_groups: before
                        .groups
                        .iter()
                        .map(|&g| groups[g].id.clone())
                        .collect(),
                }
            }
        })
        .collect()
}
