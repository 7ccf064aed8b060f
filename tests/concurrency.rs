//! §5 case 34: many parallel size changes on one group never break its bookkeeping.

mod common;

use common::{SCENARIO, Server};
use ekscale::proto::externalgrpc::*;
use std::collections::HashSet;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parallel_increases_and_deletes_keep_target_equal_to_instances() {
    let scenario = SCENARIO.replacen("maxSize: 5\n", "maxSize: 40\n", 1);
    let server = Server::start_with(&scenario, None).await;
    let client = server.client().await;

    let mut increases_refused = 0;
    for round in 0..5 {
        let before = client
            .clone()
            .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
            .await
            .unwrap()
            .into_inner()
            .target_size;
        // Each task says what it asked: an increase by delta, or the deletion of these instances.
        let mut tasks = Vec::new();
        // 20 increases of 1..=3 against a max of 40: some must be refused, none may overshoot.
        for i in 0..20 {
            let mut client = client.clone();
            tasks.push(tokio::spawn(async move {
                let request = NodeGroupIncreaseSizeRequest {
                    id: "web".into(),
                    delta: 1 + i % 3,
                };
                let delta = request.delta;
                let asked = (delta, Vec::new());
                (
                    asked,
                    client.node_group_increase_size(request).await.map(drop),
                )
            }));
        }
        // Meanwhile, delete instances that exist, several callers racing for the same ones.
        let mut lister = client.clone();
        let instances = lister
            .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
            .await
            .unwrap();
        let ids: Vec<String> = instances
            .into_inner()
            .instances
            .into_iter()
            .map(|i| i.id)
            .take(6)
            .collect();
        for chunk in ids.chunks(2).cycle().take(6) {
            let mut client = client.clone();
            let nodes = chunk
                .iter()
                .map(|id| ExternalGrpcNode {
                    provider_id: id.clone(),
                    ..Default::default()
                })
                .collect();
            tasks.push(tokio::spawn(async move {
                let request = NodeGroupDeleteNodesRequest {
                    id: "web".into(),
                    nodes,
                };
                let gone: Vec<String> = request
                    .nodes
                    .iter()
                    .map(|n| n.provider_id.clone())
                    .collect();
                let asked = (0, gone);
                (
                    asked,
                    client.node_group_delete_nodes(request).await.map(drop),
                )
            }));
        }
        let (mut increased, mut refused) = (0, 0);
        let mut deleted = HashSet::new();
        for task in tasks {
            let ((delta, gone), result) = task.await.unwrap();
            match result {
                Ok(()) => {
                    increased += delta;
                    deleted.extend(gone);
                }
                Err(status) => {
                    assert_eq!(
                        status.code(),
                        tonic::Code::FailedPrecondition,
                        "round {round}: {status:?}"
                    );
                    assert!(
                        gone.is_empty(),
                        "round {round}: a delete refused: {status:?}"
                    );
                    refused += 1;
                    increases_refused += 1;
                }
            }
        }
        let mut check = client.clone();
        let target = check
            .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
            .await
            .unwrap();
        let target = target.into_inner().target_size;
        let instances = check
            .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
            .await
            .unwrap();
        let instances = instances.into_inner().instances;
        let live = instances
            .iter()
            .filter(|i| {
                i.status.as_ref().unwrap().instance_state()
                    != instance_status::InstanceState::InstanceDeleting
            })
            .count();
        assert!(target <= 40, "round {round}: target {target} over max");
        assert!(target >= 1, "round {round}: target {target} under min");
        assert_eq!(live as i32, target, "round {round}: {refused} refused");
        // Each accepted increase counts once; each instance goes once, however many callers asked.
        assert_eq!(
            target,
            before + increased - deleted.len() as i32,
            "round {round}: the target moved by exactly what was accepted"
        );
        let unique: HashSet<_> = instances.iter().map(|i| &i.id).collect();
        assert_eq!(unique.len(), instances.len(), "instance ids are unique");
        server.sim().clock().advance(Duration::from_secs(60));
    }
    // 39 nodes asked for each round against a max of 40: increases past it were refused, whole.
    assert!(
        increases_refused >= 20,
        "{increases_refused} increases refused"
    );
}
