//! The CapacityQuotas' two parts in a loop, each a stage that hands back a value: their statuses as
//! upstream's controller writes them (`status.rs`), written first and from the view alone, since they say
//! what the registered nodes hold whatever this loop decides; and their figures in the report, what the
//! enforced ones held before this loop's scale-ups and what they hold after.

use crate::autoscaler::cluster::{ClusterSource, ClusterView, StatusNotWritten};
use crate::autoscaler::quotas::ledger::{QuotaBook, QuotaLedger, QuotaUsage};
use crate::autoscaler::quotas::report::QuotaReport;
use crate::autoscaler::quotas::status;
use crate::model::CapacityQuota;
use crate::simulator::Place;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

/// Whether the CapacityQuotas are the companion's to keep this loop (`--capacity-quotas-enabled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaStage {
    /// Enforced, reported, and their statuses kept.
    Kept,
    /// `--capacity-quotas-enabled=false`: left alone.
    Ignored,
}

impl QuotaStage {
    /// Each CapacityQuota's status as upstream's controller writes it, written back where it changed on
    /// `actor`, the cluster the loop acts on (a status is the cluster's; `simulate` and a dry run leave it as
    /// it is). Returns the statuses not written.
    pub(crate) async fn write_statuses(
        self,
        actor: Option<Arc<dyn ClusterSource>>,
        view: &ClusterView,
        now: SystemTime,
    ) -> Vec<StatusNotWritten> {
        let keeps = self == QuotaStage::Kept && !view.quotas.is_empty();
        let Some(cluster) = actor.filter(|_| keeps) else {
            return Vec::new();
        };
        let reconciled = status::reconcile(&view.quotas, &view.nodes, now);
        status::write_statuses(cluster.as_ref(), &reconciled).await
    }

    /// The quotas the snapshot enforces: the view's, unless they are ignored.
    pub(crate) fn enforced(self, view: &ClusterView) -> &[CapacityQuota] {
        match self {
            QuotaStage::Kept => &view.quotas,
            QuotaStage::Ignored => &[],
        }
    }

    /// The figures before scale-up (`ledger`, the snapshot's totals' quotas, asked for only then), when
    /// quotas are enforced; none to report otherwise.
    pub(crate) fn before(self, ledger: impl FnOnce() -> QuotaLedger) -> Option<QuotaBefore> {
        (self == QuotaStage::Kept).then(|| QuotaBefore(ledger().usage()))
    }
}

/// What the enforced quotas held in the snapshot before this loop's scale-ups, in the view's order.
pub struct QuotaBefore(Vec<QuotaUsage>);

impl QuotaBefore {
    /// Every CapacityQuota of the view in the report: an enforced one with its figures before and after
    /// this loop's scale-ups (the ones committed into the snapshot's `book` and `places`), one carrying a
    /// problem with it; `group_id` names a node group by its index.
    pub(crate) fn report(
        self,
        quotas: &[CapacityQuota],
        (book, places): (&Arc<QuotaBook>, &[Place]),
        group_id: impl Fn(usize) -> String,
    ) -> Vec<QuotaReport> {
        let after = QuotaLedger::of(book, places).usage();
        reports(quotas, self.0, after, group_id)
    }
}

/// The report's quotas from the figures `before` and `after` (the enforced ones, in the view's order).
fn reports(
    quotas: &[CapacityQuota],
    before: Vec<QuotaUsage>,
    after: Vec<QuotaUsage>,
    group_id: impl Fn(usize) -> String,
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
                    node_groups: before.groups.iter().map(|&g| group_id(g)).collect(),
                }
            }
        })
        .collect()
}
