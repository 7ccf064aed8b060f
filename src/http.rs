//! The provider's plain-HTTP endpoints: `/metrics` for Prometheus and `/healthz` for probes.

use crate::cloud::NodeGroupBackend;
use crate::metrics::ProviderMetrics;
use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

#[derive(Clone)]
struct Provider {
    metrics: Arc<ProviderMetrics>,
    backend: Arc<dyn NodeGroupBackend>,
}

/// The provider's routes.
pub fn provider_router(
    metrics: Arc<ProviderMetrics>,
    backend: Arc<dyn NodeGroupBackend>,
) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(Provider { metrics, backend })
}

async fn metrics_text(State(provider): State<Provider>) -> impl IntoResponse {
    let text = provider.metrics.encode(&*provider.backend);
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        text,
    )
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await
}
