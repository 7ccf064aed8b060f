//! The companion autoscaler. It reaches the cloud only through an externalgrpc provider, over gRPC.

pub mod backoff;
pub mod binpack;
pub mod client;
pub mod cluster;
pub mod equivalence;
pub mod expander;
pub mod free_tree;
pub mod predicates;
pub mod runonce;
pub mod scaleup;
pub mod status;
pub mod world;
