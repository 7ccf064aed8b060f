//! Size bookkeeping as a property: after any sequence of IncreaseSize, DecreaseTargetSize and DeleteNodes
//! calls (valid or not) through the real gRPC service on the simulated EKS, the target size equals the
//! instances that are not being deleted, stays within [min, max], and a refused call changes nothing.

mod common;
#[path = "common/saved_seeds.rs"]
mod saved_seeds;

use common::{SCENARIO, Server};
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::proto::externalgrpc::instance_status::InstanceState;
use ekscale::proto::externalgrpc::*;
use proptest::prelude::*;
use std::time::Duration;
use tonic::transport::Channel;

/// One call a client may make. Indices pick among the group's instances (beyond them: an unknown id).
#[derive(Clone, Debug)]
enum Call {
    Increase(i32),
    Decrease(i32),
    Delete(Vec<usize>),
    /// Another group's instance in the request: the whole call must be refused.
    DeleteForeign(usize),
    /// Time passes: instances finish starting or being deleted.
    Wait(u64),
    Refresh,
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        (-2i32..6).prop_map(Call::Increase),
        (-4i32..2).prop_map(Call::Decrease),
        prop::collection::vec(0usize..8, 0..4).prop_map(Call::Delete),
        (0usize..4).prop_map(Call::DeleteForeign),
        (1u64..60).prop_map(Call::Wait),
        Just(Call::Refresh),
    ]
}

/// What a group looks like from outside: its target and its instances with their states.
#[derive(Debug, PartialEq)]
struct Seen {
    target: i32,
    instances: Vec<(String, i32)>,
}

async fn seen(client: &mut CloudProviderClient<Channel>, id: &str) -> Seen {
    let target = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: id.into() })
        .await
        .unwrap()
        .into_inner()
        .target_size;
    let mut instances: Vec<(String, i32)> = client
        .node_group_nodes(NodeGroupNodesRequest { id: id.into() })
        .await
        .unwrap()
        .into_inner()
        .instances
        .into_iter()
        .map(|i| (i.id, i.status.map_or(0, |s| s.instance_state)))
        .collect();
    instances.sort();
    Seen { target, instances }
}

fn node(id: &str) -> ExternalGrpcNode {
    ExternalGrpcNode {
        provider_id: id.to_string(),
        ..Default::default()
    }
}

/// DeleteNodes of `nodes` from group web.
async fn delete(
    client: &mut CloudProviderClient<Channel>,
    nodes: Vec<ExternalGrpcNode>,
) -> Result<(), tonic::Status> {
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes,
    };
    client.node_group_delete_nodes(request).await.map(drop)
}

/// Runs `calls` on a fresh provider and checks the invariants after each.
async fn check(calls: Vec<Call>) -> Result<(), TestCaseError> {
    let server = Server::start().await;
    let mut client = server.client().await;
    let (min, max) = (1, 5);
    for (step, call) in calls.into_iter().enumerate() {
        let before = seen(&mut client, "web").await;
        let other = seen(&mut client, "batch").await;
        let live: Vec<&String> = before
            .instances
            .iter()
            .filter(|(_, state)| *state != InstanceState::InstanceDeleting as i32)
            .map(|(id, _)| id)
            .collect();
        let result = match &call {
            Call::Increase(delta) => client
                .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                    id: "web".into(),
                    delta: *delta,
                })
                .await
                .map(drop),
            Call::Decrease(delta) => client
                .node_group_decrease_target_size(NodeGroupDecreaseTargetSizeRequest {
                    id: "web".into(),
                    delta: *delta,
                })
                .await
                .map(drop),
            Call::Delete(picks) => {
                let nodes = picks
                    .iter()
                    .map(|&i| node(live.get(i).map_or("aws:///us-east-1a/i-0unknown", |id| id)))
                    .collect();
                delete(&mut client, nodes).await
            }
            Call::DeleteForeign(i) => {
                let mut nodes: Vec<ExternalGrpcNode> =
                    live.iter().take(1).map(|id| node(id)).collect();
                if let Some((id, _)) = other.instances.get(*i) {
                    nodes.push(node(id));
                }
                delete(&mut client, nodes).await
            }
            Call::Wait(seconds) => {
                server.sim().clock().advance(Duration::from_secs(*seconds));
                Ok(())
            }
            Call::Refresh => client.refresh(RefreshRequest {}).await.map(drop),
        };
        let after = seen(&mut client, "web").await;
        match result {
            Err(status) => {
                prop_assert!(
                    matches!(
                        status.code(),
                        tonic::Code::InvalidArgument
                            | tonic::Code::FailedPrecondition
                            | tonic::Code::NotFound
                    ),
                    "step {step} {call:?}: {status:?}"
                );
                prop_assert!(!status.message().is_empty());
                prop_assert_eq!(
                    &after,
                    &before,
                    "step {} {:?} was refused but changed the group",
                    step,
                    call
                );
            }
            Ok(()) => {
                if let Call::Increase(delta) = call {
                    prop_assert_eq!(after.target, before.target + delta, "step {}", step);
                }
            }
        }
        let live = after
            .instances
            .iter()
            .filter(|(_, state)| *state != InstanceState::InstanceDeleting as i32)
            .count();
        prop_assert_eq!(
            live as i32,
            after.target,
            "step {} {:?}: {:?}",
            step,
            call,
            after
        );
        prop_assert!(
            (min..=max).contains(&after.target),
            "step {step}: {after:?}"
        );
        prop_assert_eq!(
            seen(&mut client, "batch").await,
            other,
            "step {} touched another group",
            step
        );
    }
    Ok(())
}

/// Cases proptest saves for this file (none so far) replay into the strategy they came from.
#[test]
fn the_saved_cases_replay() {
    let replayed = saved_seeds::replay(file!(), &["calls"], (calls(),), &[]);
    assert_eq!(replayed, saved_seeds::count(file!()));
}

fn calls() -> impl Strategy<Value = Vec<Call>> {
    prop::collection::vec(call(), 1..24)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn target_equals_instances_and_refused_calls_change_nothing(
        calls in calls()
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(check(calls))?;
    }
}

#[test]
fn the_scenario_is_the_one_the_bounds_assume() {
    assert!(
        SCENARIO.contains("minSize: 1\n    maxSize: 5\n"),
        "{SCENARIO}"
    );
}
