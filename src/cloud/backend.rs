//! The one trait behind which node groups live, the errors a backend reports, and where it reports what it
//! asked of the cloud.

use super::fargate::FargateRates;
use super::node_group::{Instance, NodeGroupSpec};
use crate::model::FargateProfile;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

/// Where a backend reports what it asked of the cloud. The provider's metrics implement it, so that the cloud
/// never imports the program above it.
pub trait CloudObserver: Send + Sync {
    /// One AWS API call; `outcome` is "ok", "throttled", "error" or "unavailable".
    fn observe_aws_call(
        &self,
        service: &'static str,
        operation: &'static str,
        outcome: &'static str,
    );
    /// How long a refresh of the cloud's view took.
    fn observe_refresh(&self, elapsed: Duration);
    /// The node groups left out, by reason (replacing the last counts).
    fn set_skipped(&self, reasons: &[(String, i64)]);
    /// An all-or-nothing increase the cloud took ended: "whole" (every instance launched) or "set_back"
    /// (not all launched in time: the target was set back and what launched for it removed).
    fn observe_atomic_increase(&self, outcome: &'static str);
    /// One message of the interruption queue: `kind` is spotInterruption, rebalance, scheduledEvent,
    /// instanceStopped or unknown; `outcome` is received (every message), then parsed or ignored.
    fn observe_interruption_message(&self, kind: &'static str, outcome: &'static str);
    /// A call to the interruption queue failed (it is retried after a backoff).
    fn observe_interruption_queue_error(&self);
}

/// Errors a backend reports; the provider maps each to a gRPC status.
#[derive(Debug, thiserror::Error)]
pub enum CloudError {
    #[error("node group {0:?} not found")]
    NodeGroupNotFound(String),
    #[error("{0}")]
    FailedPrecondition(String),
    /// The cloud cannot give what was asked now (an all-or-nothing increase it cannot launch whole).
    #[error("{0}")]
    Exhausted(String),
    #[error("{0}")]
    NotFound(String),
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    #[error("cloud unavailable: {0}")]
    Unavailable(String),
    #[error("{0}")]
    Internal(String),
}

impl CloudError {
    /// The same error, its message prefixed with what had happened by then.
    pub fn context(self, prefix: &str) -> CloudError {
        match self {
            CloudError::NodeGroupNotFound(id) => CloudError::NodeGroupNotFound(id),
            CloudError::FailedPrecondition(m) => {
                CloudError::FailedPrecondition(format!("{prefix}: {m}"))
            }
            CloudError::Exhausted(m) => CloudError::Exhausted(format!("{prefix}: {m}")),
            CloudError::NotFound(m) => CloudError::NotFound(format!("{prefix}: {m}")),
            CloudError::PermissionDenied(m) => {
                CloudError::PermissionDenied(format!("{prefix}: {m}"))
            }
            CloudError::Unavailable(m) => CloudError::Unavailable(format!("{prefix}: {m}")),
            CloudError::Internal(m) => CloudError::Internal(format!("{prefix}: {m}")),
        }
    }
}

/// A source of node groups: the embedded simulated EKS, or EKS managed node groups on AWS.
///
/// Reads answer from memory. Mutations are called one at a time per node group (the provider serializes
/// them) with requests it has already checked against the protocol's rules, and must be visible to the
/// reads by the time they return.
#[async_trait]
pub trait NodeGroupBackend: Send + Sync + 'static {
    /// "sim" or "aws", for logs and metrics.
    fn name(&self) -> &'static str;

    /// Brings the in-memory view up to date with the cloud. Called at the start of every autoscaler loop.
    async fn refresh(&self) -> Result<(), CloudError>;

    /// Every node group, in a stable order.
    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>>;

    /// One node group by id.
    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>>;

    /// The id of the node group an instance belongs to.
    fn node_group_of(&self, instance_id: &str) -> Option<String>;

    /// The node group's target size.
    fn target_size(&self, id: &str) -> Result<i32, CloudError>;

    /// The node group's instances, placeholders included.
    fn instances(&self, id: &str) -> Result<Vec<Instance>, CloudError>;

    /// Sets a new target size. Above the current one, capacity is requested; below it, only capacity that
    /// was requested but never created is cancelled (the provider never asks for less than what exists).
    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError>;

    /// Raises the target size to `target`, all or nothing: with [`CloudError::Exhausted`] and nothing
    /// changed when the cloud cannot launch every added instance now. A backend that learns only later
    /// whether they all launch (AWS) keeps the increase for the group's provisioning time and, if they have
    /// not all launched by then, sets the target back and removes the instances launched for it; until
    /// then the group takes no other size change.
    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError>;

    /// Deletes these instances of the group (all known to be in it, none already deleting) and lowers
    /// the target size by one for each.
    async fn delete_instances(&self, id: &str, instance_ids: &[String]) -> Result<(), CloudError>;

    /// The cluster's Fargate profiles, as of the last refresh.
    fn fargate_profiles(&self) -> Vec<FargateProfile>;

    /// Fargate's prices in this backend's region.
    fn fargate_rates(&self) -> FargateRates {
        FargateRates::default()
    }

    /// How old the in-memory view of the cloud is, for backends that cache one.
    fn cache_age(&self) -> Option<Duration> {
        None
    }

    /// The capacity reservations group `id` launches into, with their counts now: the spec's, as loaded, for
    /// a backend that reads them on refresh (AWS); the simulated EKS counts its instances in them.
    fn reservations(&self, id: &str) -> Vec<crate::model::Reservation> {
        self.node_group(id)
            .map(|g| g.reservations.clone())
            .unwrap_or_default()
    }

    /// The instances the cloud says are leaving (Spot interruption warnings, rebalance recommendations,
    /// scheduled events, stopped instances), as of the last refresh, each of a node group it serves.
    fn leaving_instances(&self) -> Vec<crate::model::LeavingInstance> {
        Vec::new()
    }

    /// Hourly price of a node by its instance type label, for nodes not (or no longer) in a group.
    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64>;
}
