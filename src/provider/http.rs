//! The provider's plain-HTTP endpoints: `/metrics` and `/healthz`.

use super::metrics::ProviderMetrics;
use crate::cloud::NodeGroupBackend;
use crate::http::OPENMETRICS;
use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::get;
use std::sync::Arc;

#[derive(Clone)]
struct Provider {
    metrics: Arc<ProviderMetrics>,
    backend: Arc<dyn NodeGroupBackend>,
}

/// The provider's routes.
pub fn http_router(metrics: Arc<ProviderMetrics>, backend: Arc<dyn NodeGroupBackend>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state(Provider { metrics, backend })
}

async fn metrics_text(State(provider): State<Provider>) -> impl IntoResponse {
    (OPENMETRICS, provider.metrics.encode(&*provider.backend))
}
