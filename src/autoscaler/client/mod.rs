//! The provider client: any externalgrpc provider, with cluster-autoscaler's caching rules
//! (docs/externalgrpc.md §1) so that the companion puts the same load on a provider as upstream does.
//!
//! Refresh drops every cache and comes first in each loop. Until the next Refresh, NodeGroups is asked
//! once, NodeGroupForNode once per node (answers for unmanaged nodes are not cached: a node can become
//! managed), each group's template (its Node, and its ResourceSlices where the provider fills field 3) once,
//! and the groups' zones, EKS states and leaving instances (`ekscale.v1.NodeGroups`) and the Fargate profiles
//! (`ekscale.v1.Fargate`) and every group's template ResourceSlices, where the provider serves them, once. Sizes and instances are never cached. Every call carries a
//! deadline, sent to the provider as `grpc-timeout` like cluster-autoscaler's.

mod config; // where the provider is and how to reach it
mod convert; // wire types to the model, at the client's edge
mod error; // why a call failed
mod provider; // the client: every RPC the companion makes, with cluster-autoscaler's caching rules
#[cfg(test)]
mod tests;

pub use config::ProviderConfig;
pub use convert::TemplateNodeInfo;
pub use error::ClientError;
pub use provider::{Profiles, ProviderClient, TemplateSlices};
