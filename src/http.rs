//! Plain-HTTP endpoints. The provider: `/metrics` and `/healthz`. The companion (cluster-autoscaler's paths):
//! `/metrics`, `/health-check` (500 when the loop is stuck or failing), `/snapshotz` (the last loop's view
//! and decisions as JSON).

use crate::autoscaler::last_loop::LastLoop;
use crate::cloud::NodeGroupBackend;
use crate::metrics::{AutoscalerMetrics, ProviderMetrics};
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
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
    (OPENMETRICS, provider.metrics.encode(&*provider.backend))
}

#[derive(Clone)]
struct Companion {
    metrics: Arc<AutoscalerMetrics>,
    last: Arc<LastLoop>,
}

/// The companion's routes.
pub fn autoscaler_router(metrics: Arc<AutoscalerMetrics>, last: Arc<LastLoop>) -> Router {
    Router::new()
        .route(
            "/metrics",
            get(|State(c): State<Companion>| async move { (OPENMETRICS, c.metrics.encode()) }),
        )
        .route(
            "/health-check",
            get(|State(c): State<Companion>| async move {
                match c.last.health(std::time::SystemTime::now()) {
                    Ok(()) => (StatusCode::OK, "OK".to_string()),
                    Err(why) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{why}\n")),
                }
            }),
        )
        .route(
            "/snapshotz",
            get(|State(c): State<Companion>| async move {
                (
                    [(header::CONTENT_TYPE, "application/json")],
                    c.last.snapshot().to_string(),
                )
            }),
        )
        .with_state(Companion { metrics, last })
}

const OPENMETRICS: [(header::HeaderName, &str); 1] = [(
    header::CONTENT_TYPE,
    "application/openmetrics-text; version=1.0.0; charset=utf-8",
)];

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
