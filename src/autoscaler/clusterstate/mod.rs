//! Cluster state, as cluster-autoscaler's clusterstate keeps it: what the provider says of every node group
//! this loop, which group each node is in, what is registered and what is still coming, and the backoff of
//! groups whose scale-ups failed.

pub(crate) mod backoff; // node group backoff after failed scale-ups
pub(crate) mod state; // the groups as the provider says them, nodes matched to them, instances remembered
