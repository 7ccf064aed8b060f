//! The companion's plain-HTTP endpoints, at cluster-autoscaler's paths: `/metrics`, `/health-check` (500 when
//! the loop is stuck or failing), `/snapshotz` (the last loop's view and decisions as JSON).

use crate::autoscaler::control::last_loop::LastLoop;
use crate::autoscaler::control::metrics::AutoscalerMetrics;
use crate::http::OPENMETRICS;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::routing::get;
use std::sync::Arc;

#[derive(Clone)]
struct Companion {
    metrics: Arc<AutoscalerMetrics>,
    last: Arc<LastLoop>,
}

/// The companion's routes.
pub fn router(metrics: Arc<AutoscalerMetrics>, last: Arc<LastLoop>) -> Router {
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
