//! What the cluster-state stage reads and decides, and what the snapshot and the quota report are made of
//! out of it: the values the stages after it share (`RunOnce::run` hands them on).

use crate::autoscaler::client::{ClientError, Profiles};
use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::clustersnapshot::snapshot::{self as cluster_snapshot, ClusterSnapshot};
use crate::autoscaler::clusterstate::state::Counts;
use crate::autoscaler::core::classify::Sorted;
use crate::autoscaler::group::{Group, GroupFacts};
use crate::autoscaler::quotas::{QuotaBefore, QuotaReport, QuotaStage};
use crate::autoscaler::scaledown::report::ScaleDownReport as Report;
use crate::model::{LabelProjection, PodList};
use std::collections::HashSet;

/// What the cluster-state stage read and decided: the groups as the provider says them, which group each
/// node is in, the nodes on their way out, and what happened to the deletions in progress.
pub struct Read {
    pub facts: Vec<GroupFacts>,
    pub profiles: Result<Option<Profiles>, ClientError>,
    pub node_group: Vec<Option<usize>>,
    pub deleting: HashSet<String>,
    pub counts: Vec<Counts>,
    pub report: Report,
}

/// Every CapacityQuota of the view in the report, with the enforced ones' figures `before` this loop's
/// scale-ups and after them (committed into `snapshot`); none when quotas are not kept.
pub fn quota_report(
    before: Option<QuotaBefore>,
    view: &ClusterView,
    snapshot: &ClusterSnapshot,
    groups: &[Group],
) -> Vec<QuotaReport> {
    let Some(before) = before else {
        return Vec::new();
    };
    let after = (&snapshot.quotas, &snapshot.places[..]);
    before.report(&view.quotas, after, |g| groups[g].id.clone())
}

/// What the snapshot is built from, out of the earlier stages' values.
pub fn snapshot_inputs<'a>(
    view: &'a ClusterView,
    pods: PodList<'a>,
    sorted: &'a Sorted,
    read: &'a Read,
    projection: &'a LabelProjection,
    quotas: QuotaStage,
) -> cluster_snapshot::Inputs<'a> {
    cluster_snapshot::Inputs {
        view,
        pods,
        bound: &sorted.bound,
        daemonsets: &sorted.daemonsets,
        node_group: &read.node_group,
        facts: &read.facts,
        counts: &read.counts,
        deleting: &read.deleting,
        projection,
        last_dra: None,
        quotas: quotas.enforced(view),
    }
}
