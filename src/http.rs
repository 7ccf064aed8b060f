//! What both programs' plain-HTTP endpoints share: the server and the OpenMetrics content type. Each program's
//! routes live with it (`provider::http`, `autoscaler::http`).

use axum::Router;
use axum::http::header;
use std::future::Future;
use tokio::net::TcpListener;

pub const OPENMETRICS: [(header::HeaderName, &str); 1] = [(
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
