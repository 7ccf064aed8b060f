//! The companion autoscaler. It reaches the cloud only through an externalgrpc provider, over gRPC.

pub mod client;
