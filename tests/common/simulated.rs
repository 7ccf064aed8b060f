//! The companion's loop over the cluster simulator: an in-process provider on a scenario, the simulated
//! cluster over it on the provider's clock, and pods as a ReplicaSet makes them.

use super::Server;
use ekscale::autoscaler::ProviderConfig;
use ekscale::model::{Controller, Pod, Resources};
use ekscale::simulated_cluster::{OnDisagreement, SimulatedCluster};
use std::sync::Arc;

/// An in-process provider on `scenario` and a simulated cluster over it, on the provider's clock.
pub async fn simulated(scenario: &str) -> (Server, ProviderConfig, Arc<SimulatedCluster>) {
    let server = Server::start_with(scenario, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    // A disagreement between the companion's predicates and the plain scheduler fails the test where it happens.
    let cluster = SimulatedCluster::new(&config, server.sim().clock().clone())
        .unwrap()
        .on_disagreement(OnDisagreement::Panic);
    (server, config, Arc::new(cluster))
}

/// `n` pending pods `app-0`.. of `cpu` millicores and `memory` bytes, labelled `app` and owned by a
/// ReplicaSet: evicted, they are made again elsewhere.
pub fn owned(app: &str, n: usize, cpu: u64, memory: u64) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let demand = Resources {
                cpu_millis: cpu,
                memory_bytes: memory,
                pods: 1,
                ..Default::default()
            };
            let mut pod = Pod::pending("default", &format!("{app}-{i}"), demand);
            pod.labels.insert("app".into(), app.into());
            pod.controller = Some(Arc::new(Controller {
                kind: "ReplicaSet".into(),
                name: app.into(),
                uid: format!("uid-{app}"),
            }));
            pod
        })
        .collect()
}
