//! The provider, in-process on the script's simulated EKS, on a loopback port.

use super::error::DemoError;
use super::script::Script;
use crate::clock::Clock;
use crate::cloud::SimulatedEks;
use crate::provider::ProviderMetrics;
use std::sync::Arc;
use std::time::SystemTime;

/// The provider, in-process on the script's simulated EKS, served on a loopback port until stopped.
pub(super) struct InProcessProvider {
    pub(super) backend: Arc<SimulatedEks>,
    pub(super) addr: std::net::SocketAddr,
    pub(super) stop: tokio::sync::oneshot::Sender<()>,
    pub(super) server: tokio::task::JoinHandle<Result<(), crate::provider::ServeError>>,
}

impl InProcessProvider {
    pub(super) async fn start(
        script: &Script,
        clock: Clock,
    ) -> Result<InProcessProvider, DemoError> {
        let epoch = (script.start.or(script.scenario.start)).unwrap_or_else(SystemTime::now);
        let scenario = script.scenario.clone();
        let backend = Arc::new(SimulatedEks::starting_at(scenario, clock, epoch));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| DemoError::Provider(e.to_string()))?;
        let addr = listener
            .local_addr()
            .map_err(|e| DemoError::Provider(e.to_string()))?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(crate::provider::serve(
            listener,
            backend.clone(),
            Arc::new(ProviderMetrics::default()),
            None,
            async {
                let _ = stopped.await;
            },
        ));
        Ok(InProcessProvider {
            backend,
            addr,
            stop,
            server,
        })
    }

    pub(super) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.server.await;
    }
}
