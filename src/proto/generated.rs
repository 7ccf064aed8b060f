//! Code generated from `proto/` by build.rs.

/// `clusterautoscaler.cloudprovider.v1.externalgrpc`: the union of every upstream wire generation.
/// Generated code is exempt from the house's length and parameter limits (its server traits' dispatch).
#[allow(clippy::too_many_lines, clippy::too_many_arguments)]
pub mod externalgrpc {
    tonic::include_proto!("clusterautoscaler.cloudprovider.v1.externalgrpc");
}

/// `ekscale.v1`: the extension service. Generated: exempt from the length and parameter limits.
#[allow(clippy::too_many_lines, clippy::too_many_arguments)]
pub mod ekscale {
    tonic::include_proto!("ekscale.v1");
}

/// The encoded `FileDescriptorSet` of both packages, for server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("descriptor");
