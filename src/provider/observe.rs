//! Every RPC of the provider's services counted, with its outcome and latency, and its refusals logged.

use super::metrics::ProviderMetrics;
use std::future::Future;

/// Runs one RPC, counting it and its outcome.
pub(super) async fn observe<T>(
    metrics: &ProviderMetrics,
    method: &'static str,
    rpc: impl Future<Output = Result<T, tonic::Status>>,
) -> Result<tonic::Response<T>, tonic::Status> {
    let start = std::time::Instant::now();
    let result = rpc.await;
    let code = result
        .as_ref()
        .map_or_else(tonic::Status::code, |_| tonic::Code::Ok);
    metrics.observe_request(method, code, start.elapsed());
    if let Err(status) = &result {
        tracing::debug!(method, code = ?status.code(), message = status.message(), "request refused");
    }
    result.map(tonic::Response::new)
}
