//! Every service on one port: CloudProvider, Fargate and NodeGroups over one backend, with health and
//! reflection (v1 and v1alpha), in plaintext h2c or TLS (optionally mutual).

use super::cloud_provider::CloudProviderService;
use super::fargate::FargateService;
use super::metrics::ProviderMetrics;
use super::node_groups::NodeGroupsService;
use super::sizes::GroupLocks;
use super::tls::{Reloading, TlsError, TlsFiles};
use crate::cloud::NodeGroupBackend;
use crate::proto::ekscale::fargate_server::FargateServer;
use crate::proto::ekscale::node_groups_server::NodeGroupsServer;
use crate::proto::externalgrpc::cloud_provider_server::CloudProviderServer;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;

/// cluster-autoscaler may send large DeleteNodes and pod requests: accept up to 32 MiB (tonic's default is 4).
pub const MAX_DECODING_MESSAGE_SIZE: usize = 32 << 20;

/// Service names as clients and grpcurl see them.
pub const CLOUD_PROVIDER_SERVICE: &str =
    "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider";

pub const FARGATE_SERVICE: &str = "ekscale.v1.Fargate";

pub const NODE_GROUPS_SERVICE: &str = "ekscale.v1.NodeGroups";

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Tls(#[from] TlsError),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    #[error("reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// Serves every service on `listener` until `shutdown` completes, then drains in-flight requests.
pub async fn serve(
    listener: TcpListener,
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
    tls: Option<&TlsFiles>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    for service in [
        "",
        CLOUD_PROVIDER_SERVICE,
        FARGATE_SERVICE,
        NODE_GROUPS_SERVICE,
    ] {
        health
            .set_service_status(service, ServingStatus::Serving)
            .await;
    }
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };

    // Read before anything is served: bad TLS files stop the start with their name.
    let tls = tls.cloned().map(Reloading::load).transpose()?;
    // IncreaseSize and AtomicIncreaseSize of one group wait for each other.
    let locks = Arc::new(GroupLocks::default());
    let cloud_provider = CloudProviderServer::new(CloudProviderService::with_locks(
        backend.clone(),
        metrics.clone(),
        locks.clone(),
    ))
    .max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE);
    let fargate = FargateServer::new(FargateService::new(backend.clone(), metrics.clone()))
        .max_decoding_message_size(MAX_DECODING_MESSAGE_SIZE);
    let node_groups = NodeGroupsServer::new(NodeGroupsService::with_locks(
        backend,
        metrics.clone(),
        locks,
    ));
    let router = Server::builder()
        .add_service(cloud_provider)
        .add_service(fargate)
        .add_service(node_groups)
        .add_service(health_service)
        .add_service(reflection().build_v1()?)
        // grpcurl 1.8 speaks only v1alpha.
        .add_service(reflection().build_v1alpha()?);
    match tls {
        Some(tls) => {
            router
                .serve_with_incoming_shutdown(Arc::new(tls).incoming(listener, metrics), shutdown)
                .await?
        }
        // Without TCP_NODELAY, a response larger than one segment waits out the peer's delayed ACK (~40 ms).
        None => {
            router
                .serve_with_incoming_shutdown(
                    TcpIncoming::from(listener).with_nodelay(Some(true)),
                    shutdown,
                )
                .await?
        }
    }
    Ok(())
}
