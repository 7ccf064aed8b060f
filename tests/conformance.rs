//! Every RPC and every edge case of docs/externalgrpc.md §5 against a served provider, with clients of the
//! old (1.25-1.34.1), transitional (1.34.2, the generated union client) and new (1.35+) wire generations.
//! Test names carry the §5 case number.

mod common;

use common::wire::{self, call, new, old};
use common::{SCENARIO, Server, pod};
use ekscale::proto::externalgrpc::instance_status::InstanceState;
use ekscale::proto::externalgrpc::*;
use prost::Message;
use std::collections::HashMap;
use std::time::Duration;
use tonic::Code;
use tonic::transport::Channel;

async fn target(channel: &Channel, id: &str) -> i32 {
    let request = NodeGroupTargetSizeRequest { id: id.into() };
    let response: NodeGroupTargetSizeResponse =
        call(channel, "NodeGroupTargetSize", request).await.unwrap();
    response.target_size
}

async fn instances(channel: &Channel, id: &str) -> Vec<Instance> {
    let request = NodeGroupNodesRequest { id: id.into() };
    let response: NodeGroupNodesResponse = call(channel, "NodeGroupNodes", request).await.unwrap();
    response.instances
}

fn state(instance: &Instance) -> InstanceState {
    instance
        .status
        .as_ref()
        .map_or(InstanceState::Unspecified, |s| s.instance_state())
}

fn is_placeholder(instance: &Instance) -> bool {
    instance
        .status
        .as_ref()
        .is_some_and(|s| s.error_info.is_some())
}

/// Target size and instance ids of every group: what "no state change" compares.
async fn snapshot(channel: &Channel) -> Vec<(String, i32, Vec<String>, Vec<i32>)> {
    let mut out = Vec::new();
    for id in ["web", "batch", "tight", "gpu", "floor"] {
        let list = instances(channel, id).await;
        let ids = list.iter().map(|i| i.id.clone()).collect();
        let states = list.iter().map(|i| state(i) as i32).collect();
        out.push((id.to_string(), target(channel, id).await, ids, states));
    }
    out
}

async fn increase(channel: &Channel, id: &str, delta: i32) -> Result<(), tonic::Status> {
    let request = NodeGroupIncreaseSizeRequest {
        id: id.into(),
        delta,
    };
    call::<_, NodeGroupIncreaseSizeResponse>(channel, "NodeGroupIncreaseSize", request)
        .await
        .map(drop)
}

async fn decrease(channel: &Channel, id: &str, delta: i32) -> Result<(), tonic::Status> {
    let request = NodeGroupDecreaseTargetSizeRequest {
        id: id.into(),
        delta,
    };
    call::<_, NodeGroupDecreaseTargetSizeResponse>(channel, "NodeGroupDecreaseTargetSize", request)
        .await
        .map(drop)
}

fn node(provider_id: &str) -> ExternalGrpcNode {
    ExternalGrpcNode {
        provider_id: provider_id.into(),
        name: format!("node-{provider_id}"),
        ..Default::default()
    }
}

async fn delete(channel: &Channel, id: &str, provider_ids: &[&str]) -> Result<(), tonic::Status> {
    let request = NodeGroupDeleteNodesRequest {
        id: id.into(),
        nodes: provider_ids.iter().map(|p| node(p)).collect(),
    };
    call::<_, NodeGroupDeleteNodesResponse>(channel, "NodeGroupDeleteNodes", request)
        .await
        .map(drop)
}

/// Calls every per-group RPC with `id`, returning each one's status code.
async fn per_group_codes(channel: &Channel, id: &str) -> Vec<(&'static str, Code)> {
    let code = |r: Result<(), tonic::Status>| r.err().map_or(Code::Ok, |s| s.code());
    let id = id.to_string();
    vec![
        (
            "NodeGroupTargetSize",
            code(
                call::<_, NodeGroupTargetSizeResponse>(
                    channel,
                    "NodeGroupTargetSize",
                    NodeGroupTargetSizeRequest { id: id.clone() },
                )
                .await
                .map(drop),
            ),
        ),
        (
            "NodeGroupNodes",
            code(
                call::<_, NodeGroupNodesResponse>(
                    channel,
                    "NodeGroupNodes",
                    NodeGroupNodesRequest { id: id.clone() },
                )
                .await
                .map(drop),
            ),
        ),
        (
            "NodeGroupIncreaseSize",
            code(increase(channel, &id, 1).await),
        ),
        (
            "NodeGroupDeleteNodes",
            code(delete(channel, &id, &[]).await),
        ),
        (
            "NodeGroupDecreaseTargetSize",
            code(decrease(channel, &id, -1).await),
        ),
        (
            "NodeGroupTemplateNodeInfo",
            code(
                call::<_, NodeGroupTemplateNodeInfoResponse>(
                    channel,
                    "NodeGroupTemplateNodeInfo",
                    NodeGroupTemplateNodeInfoRequest { id: id.clone() },
                )
                .await
                .map(drop),
            ),
        ),
        (
            "NodeGroupGetOptions",
            code(
                call::<_, NodeGroupAutoscalingOptionsResponse>(
                    channel,
                    "NodeGroupGetOptions",
                    NodeGroupAutoscalingOptionsRequest {
                        id: id.clone(),
                        defaults: None,
                    },
                )
                .await
                .map(drop),
            ),
        ),
    ]
}

#[tokio::test]
async fn case_01_unknown_id_is_not_found_everywhere_and_changes_nothing() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let before = snapshot(&channel).await;
    for (method, code) in per_group_codes(&channel, "no-such-group").await {
        assert_eq!(code, Code::NotFound, "{method}");
    }
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_02_empty_id_is_invalid_argument_everywhere() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let before = snapshot(&channel).await;
    for (method, code) in per_group_codes(&channel, "").await {
        assert_eq!(code, Code::InvalidArgument, "{method}");
    }
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_03_increase_by_zero_or_less_is_invalid_argument() {
    let server = Server::start().await;
    let channel = server.channel().await;
    for delta in [0, -1, i32::MIN] {
        let status = increase(&channel, "web", delta).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("must be positive"),
            "{}",
            status.message()
        );
    }
    assert_eq!(target(&channel, "web").await, 2);
}

#[tokio::test]
async fn case_04_increase_past_max_fails_whole() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let before = snapshot(&channel).await;
    for delta in [4, i32::MAX] {
        let status = increase(&channel, "web", delta).await.unwrap_err();
        assert_eq!(status.code(), Code::FailedPrecondition);
        assert!(status.message().contains("max:5"), "{}", status.message());
    }
    assert_eq!(snapshot(&channel).await, before, "no partial increase");
}

#[tokio::test]
async fn case_05_06_increase_to_exactly_max_is_visible_at_once() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 3).await.unwrap();
    assert_eq!(target(&channel, "web").await, 5);
    let list = instances(&channel, "web").await;
    assert_eq!(list.len(), 5);
    assert_eq!(
        list.iter()
            .filter(|i| state(i) == InstanceState::InstanceCreating)
            .count(),
        3
    );
    server.sim().clock().advance(Duration::from_secs(30));
    assert!(
        instances(&channel, "web")
            .await
            .iter()
            .all(|i| state(i) == InstanceState::InstanceRunning)
    );
    let status = increase(&channel, "web", 1).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn case_07_decrease_by_zero_or_more_is_invalid_argument() {
    let server = Server::start().await;
    let channel = server.channel().await;
    for delta in [0, 1] {
        let status = decrease(&channel, "web", delta).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("must be negative"),
            "{}",
            status.message()
        );
    }
}

#[tokio::test]
async fn case_08_decrease_below_existing_instances_fails_and_changes_nothing() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let before = snapshot(&channel).await;
    let status = decrease(&channel, "web", -1).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("existingNodes:2"),
        "{}",
        status.message()
    );
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_09_decrease_cancels_only_capacity_not_yet_created() {
    let server = Server::start().await;
    let channel = server.channel().await;
    // `tight` has room for its 2 instances only: 2 more are requested but cannot be created.
    increase(&channel, "tight", 2).await.unwrap();
    let real_before: Vec<_> = instances(&channel, "tight")
        .await
        .into_iter()
        .filter(|i| !is_placeholder(i))
        .map(|i| i.id)
        .collect();
    assert_eq!(real_before.len(), 2);
    decrease(&channel, "tight", -2).await.unwrap();
    assert_eq!(target(&channel, "tight").await, 2);
    let after: Vec<_> = instances(&channel, "tight")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(after, real_before, "no instance deleted");
}

#[tokio::test]
async fn case_10_decrease_below_min_size_is_refused() {
    let server = Server::start().await;
    let channel = server.channel().await;
    // `floor` wants 2 (its minimum) but no capacity exists: nothing to protect, yet the minimum holds.
    let status = decrease(&channel, "floor", -1).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(status.message().contains("min:2"), "{}", status.message());
    assert_eq!(target(&channel, "floor").await, 2);
}

#[tokio::test]
async fn case_11_delete_at_min_size_deletes_nothing() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let ids: Vec<_> = instances(&channel, "web")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    let before = snapshot(&channel).await;
    let both: Vec<&str> = ids.iter().map(String::as_str).collect();
    let status = delete(&channel, "web", &both).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("min size reached"),
        "{}",
        status.message()
    );
    assert_eq!(snapshot(&channel).await, before);
    // One is fine (2 -> 1); then the group is at its minimum.
    delete(&channel, "web", &[&ids[0]]).await.unwrap();
    let status = delete(&channel, "web", &[&ids[1]]).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn case_12_node_in_no_group_deletes_nothing() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 2).await.unwrap();
    let good = instances(&channel, "web").await[0].id.clone();
    let before = snapshot(&channel).await;
    let status = delete(
        &channel,
        "web",
        &[&good, "aws:///us-east-1a/i-00000000000000000"],
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert!(
        status
            .message()
            .contains("doesn't belong to a known node group"),
        "{}",
        status.message()
    );
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_13_node_of_another_group_deletes_nothing() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 2).await.unwrap();
    let good = instances(&channel, "web").await[0].id.clone();
    let other = instances(&channel, "batch").await[0].id.clone();
    let before = snapshot(&channel).await;
    let status = delete(&channel, "web", &[&good, &other]).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message().contains("belongs to node group \"batch\""),
        "{}",
        status.message()
    );
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_14_empty_or_malformed_provider_id_is_invalid_argument() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 2).await.unwrap();
    let good = instances(&channel, "web").await[0].id.clone();
    let before = snapshot(&channel).await;
    for bad in [
        "",
        "i-0123456789abcdef0",
        "aws:///",
        "aws:///us-east-1a/",
        "aws://us-east-1a/i-1",
        "gce://p/z/n",
    ] {
        let status = delete(&channel, "web", &[&good, bad]).await.unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument, "{bad:?}");
        assert!(
            status
                .message()
                .contains("expected format aws:///<zone>/<instance-id>"),
            "{}",
            status.message()
        );
    }
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_15_deleting_an_instance_twice_decrements_once() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 2).await.unwrap();
    let victim = instances(&channel, "web").await[0].id.clone();
    delete(&channel, "web", &[&victim]).await.unwrap();
    assert_eq!(target(&channel, "web").await, 3);
    delete(&channel, "web", &[&victim]).await.unwrap();
    delete(&channel, "web", &[&victim, &victim]).await.unwrap();
    assert_eq!(target(&channel, "web").await, 3);
}

#[tokio::test]
async fn case_16_deleting_placeholders_cancels_capacity_even_at_min() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "tight", 2).await.unwrap();
    let placeholders: Vec<_> = instances(&channel, "tight")
        .await
        .into_iter()
        .filter(is_placeholder)
        .map(|i| i.id)
        .collect();
    assert_eq!(placeholders.len(), 2);
    delete(&channel, "tight", &[&placeholders[1]])
        .await
        .unwrap();
    assert_eq!(target(&channel, "tight").await, 3);
    assert_eq!(
        instances(&channel, "tight")
            .await
            .iter()
            .filter(|i| is_placeholder(i))
            .count(),
        1
    );
    // `floor` is at its minimum with nothing behind it: its placeholders can still be cancelled.
    let floor: Vec<_> = instances(&channel, "floor")
        .await
        .into_iter()
        .map(|i| i.id)
        .collect();
    assert_eq!(floor.len(), 2);
    delete(&channel, "floor", &[&floor[0]]).await.unwrap();
    assert_eq!(target(&channel, "floor").await, 1);
}

#[tokio::test]
async fn case_17_delete_lowers_target_at_once_and_the_instance_goes() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 1).await.unwrap();
    let victim = instances(&channel, "web").await[0].id.clone();
    delete(&channel, "web", &[&victim]).await.unwrap();
    assert_eq!(target(&channel, "web").await, 2);
    let list = instances(&channel, "web").await;
    assert_eq!(
        state(list.iter().find(|i| i.id == victim).unwrap()),
        InstanceState::InstanceDeleting
    );
    server.sim().clock().advance(Duration::from_secs(10));
    assert!(
        instances(&channel, "web")
            .await
            .iter()
            .all(|i| i.id != victim)
    );
}

#[tokio::test]
async fn case_18_delete_of_no_nodes_is_a_no_op() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let before = snapshot(&channel).await;
    delete(&channel, "web", &[]).await.unwrap();
    assert_eq!(snapshot(&channel).await, before);
}

#[tokio::test]
async fn case_19_fake_nodes_are_matched_by_provider_id() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 1).await.unwrap();
    let id = instances(&channel, "web").await[2].id.clone();
    let fake = ExternalGrpcNode {
        provider_id: id.clone(),
        name: id.clone(),
        annotations: HashMap::from([(
            "k8s.io/cluster-autoscaler/fake-node-reason".into(),
            "unregistered".into(),
        )]),
        ..Default::default()
    };
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![fake],
    };
    call::<_, NodeGroupDeleteNodesResponse>(&channel, "NodeGroupDeleteNodes", request)
        .await
        .unwrap();
    assert_eq!(target(&channel, "web").await, 2);
}

async fn group_for(channel: &Channel, node: ExternalGrpcNode) -> NodeGroup {
    let request = NodeGroupForNodeRequest { node: Some(node) };
    let response: NodeGroupForNodeResponse =
        call(channel, "NodeGroupForNode", request).await.unwrap();
    response.node_group.unwrap_or_default()
}

#[tokio::test]
async fn case_20_unmanaged_nodes_get_an_empty_id_not_an_error() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let fargate_label = ExternalGrpcNode {
        name: "fargate-ip-10-0-1-2.ec2.internal".into(),
        labels: HashMap::from([("eks.amazonaws.com/compute-type".into(), "fargate".into())]),
        ..node("aws:///us-east-1a/0123abcd-4567/fargate-ip-10-0-1-2.ec2.internal")
    };
    for unmanaged in [
        node(""),
        node("aws:///us-east-1a/i-00000000000000000"),
        node("kind://docker/kind/control-plane"),
        node("not a provider id"),
        fargate_label,
    ] {
        assert_eq!(group_for(&channel, unmanaged).await.id, "");
    }
    let status = call::<_, NodeGroupForNodeResponse>(
        &channel,
        "NodeGroupForNode",
        NodeGroupForNodeRequest { node: None },
    )
    .await
    .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn case_21_node_group_for_node_equals_the_node_groups_entry() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let groups: NodeGroupsResponse = call(&channel, "NodeGroups", NodeGroupsRequest {})
        .await
        .unwrap();
    let ids: Vec<_> = groups.node_groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(ids, ["web", "batch", "tight", "gpu", "floor"]);
    for entry in &groups.node_groups {
        for instance in instances(&channel, &entry.id).await {
            assert_eq!(&group_for(&channel, node(&instance.id)).await, entry);
        }
    }
    let web = &groups.node_groups[0];
    assert_eq!((web.min_size, web.max_size), (1, 5));
    assert!(web.debug.contains("m5.large"));
}

#[tokio::test]
async fn case_22_instance_ids_are_provider_ids_and_states_are_set() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "web", 1).await.unwrap();
    let list = instances(&channel, "web").await;
    for instance in &list {
        let (zone, id) = instance
            .id
            .strip_prefix("aws:///")
            .unwrap()
            .split_once('/')
            .unwrap();
        assert!(zone == "us-east-1a" || zone == "us-east-1b", "{zone}");
        assert!(
            id.len() == 19
                && id.starts_with("i-")
                && id[2..].chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
    }
    let states: Vec<_> = list.iter().map(state).collect();
    assert_eq!(
        states,
        [
            InstanceState::InstanceRunning,
            InstanceState::InstanceRunning,
            InstanceState::InstanceCreating
        ]
    );
    delete(&channel, "web", &[&list[0].id]).await.unwrap();
    assert_eq!(
        state(&instances(&channel, "web").await[0]),
        InstanceState::InstanceDeleting
    );
}

#[tokio::test]
async fn case_23_24_unfulfillable_capacity_is_creating_with_an_error_and_never_unspecified() {
    let server = Server::start().await;
    let channel = server.channel().await;
    increase(&channel, "tight", 1).await.unwrap();
    let placeholder = instances(&channel, "tight")
        .await
        .into_iter()
        .find(is_placeholder)
        .unwrap();
    let status = placeholder.status.unwrap();
    assert_eq!(status.instance_state(), InstanceState::InstanceCreating);
    let error = status.error_info.unwrap();
    assert_eq!(error.error_code, "placeholder-cannot-be-fulfilled");
    assert_eq!(error.instance_error_class, 1, "OutOfResourcesErrorClass");
    assert!(
        placeholder
            .id
            .starts_with("aws:///us-east-1c/i-placeholder-tight-"),
        "{}",
        placeholder.id
    );
    // Case 24: cluster-autoscaler drops an errorInfo with state unspecified or an empty code; we send neither.
    for id in ["web", "batch", "tight", "gpu", "floor"] {
        for instance in instances(&channel, id).await {
            let status = instance.status.expect("every instance has a status");
            assert_ne!(status.instance_state(), InstanceState::Unspecified);
            assert!(status.error_info.is_none_or(|e| !e.error_code.is_empty()));
        }
    }
}

#[tokio::test]
async fn case_25_26_every_group_has_a_template_in_both_fields_for_every_generation() {
    let server = Server::start().await;
    let channel = server.channel().await;
    for id in ["web", "batch", "tight", "gpu", "floor"] {
        let request = || NodeGroupTemplateNodeInfoRequest { id: id.into() };
        let union: NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request())
                .await
                .unwrap();
        assert!(!union.node_bytes.is_empty());
        assert_eq!(union.node_info, union.node_bytes);
        let old: old::NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request())
                .await
                .unwrap();
        let new: new::NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request())
                .await
                .unwrap();
        let node = k8s_pb::api::core::v1::Node::decode(new.node_bytes.as_slice()).unwrap();
        assert_eq!(
            old.node_info.unwrap(),
            node,
            "old clients read field 1, new ones field 2"
        );
    }
}

#[tokio::test]
async fn case_28_no_overrides_leaves_options_unset_in_both_generations() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let request = old::NodeGroupAutoscalingOptionsRequest {
        id: "web".into(),
        defaults: Some(old::defaults()),
    };
    let answer: old::NodeGroupAutoscalingOptionsResponse =
        call(&channel, "NodeGroupGetOptions", request)
            .await
            .unwrap();
    assert_eq!(answer.node_group_autoscaling_options, None);
    let request = new::NodeGroupAutoscalingOptionsRequest {
        id: "web".into(),
        defaults: Some(new::defaults()),
    };
    let answer: new::NodeGroupAutoscalingOptionsResponse =
        call(&channel, "NodeGroupGetOptions", request)
            .await
            .unwrap();
    assert_eq!(answer.node_group_autoscaling_options, None);
}

#[tokio::test]
async fn case_29_overrides_set_every_field_for_old_and_new_readers() {
    let server = Server::start().await;
    let channel = server.channel().await;
    // Old client (1.25-1.34.1): reads 3/4/5 without a nil check, in nanoseconds.
    let request = old::NodeGroupAutoscalingOptionsRequest {
        id: "batch".into(),
        defaults: Some(old::defaults()),
    };
    let answer: old::NodeGroupAutoscalingOptionsResponse =
        call(&channel, "NodeGroupGetOptions", request)
            .await
            .unwrap();
    let options = answer
        .node_group_autoscaling_options
        .expect("overrides are returned");
    assert_eq!(options.scale_down_utilization_threshold, 0.3);
    assert_eq!(
        options.scale_down_gpu_utilization_threshold, 0.5,
        "echoed default"
    );
    assert_eq!(
        options.scale_down_unneeded_time.unwrap().duration,
        Some(300_000_000_000)
    );
    assert_eq!(
        options.scale_down_unready_time.unwrap().duration,
        Some(1_200_000_000_000)
    );
    assert_eq!(
        options.max_node_provision_time.unwrap().duration,
        Some(900_000_000_000)
    );
    assert!(options.zero_or_max_node_scaling);

    // New client (1.35+): reads 8/9/10 (and 11/12) only.
    let mut defaults = new::defaults();
    defaults.max_node_provision_duration = Some(prost_types::Duration {
        seconds: 1200,
        nanos: 0,
    });
    defaults.ignore_daemon_sets_utilization = true;
    let request = new::NodeGroupAutoscalingOptionsRequest {
        id: "batch".into(),
        defaults: Some(defaults),
    };
    let answer: new::NodeGroupAutoscalingOptionsResponse =
        call(&channel, "NodeGroupGetOptions", request)
            .await
            .unwrap();
    let options = answer.node_group_autoscaling_options.unwrap();
    let secs = |d: Option<prost_types::Duration>| d.unwrap().seconds;
    assert_eq!(secs(options.scale_down_unneeded_duration), 300);
    assert_eq!(secs(options.scale_down_unready_duration), 1200);
    assert_eq!(
        secs(options.max_node_provision_duration),
        1200,
        "echoed from the new fields"
    );
    assert_eq!(secs(options.max_node_startup_duration), 900);
    assert!(options.ignore_daemon_sets_utilization, "echoed default");

    // The union view: every field 1..12 is present at once.
    let request = NodeGroupAutoscalingOptionsRequest {
        id: "batch".into(),
        defaults: None,
    };
    let answer: NodeGroupAutoscalingOptionsResponse =
        call(&channel, "NodeGroupGetOptions", request)
            .await
            .unwrap();
    let o = answer.node_group_autoscaling_options.unwrap();
    assert!(o.scale_down_unneeded_time.is_some() && o.scale_down_unready_time.is_some());
    assert!(o.max_node_provision_time.is_some() && o.scale_down_unneeded_duration.is_some());
    assert!(o.scale_down_unready_duration.is_some() && o.max_node_provision_duration.is_some());
    assert!(o.max_node_startup_duration.is_some());
}

fn web_node_labels() -> HashMap<String, String> {
    HashMap::from([("node.kubernetes.io/instance-type".into(), "m5.large".into())])
}

#[tokio::test]
async fn case_30_35_pricing_in_every_generation() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let web = instances(&channel, "web").await[0].id.clone();
    let managed = ExternalGrpcNode {
        labels: web_node_labels(),
        ..node(&web)
    };
    let ts = |seconds| Some(prost_types::Timestamp { seconds, nanos: 0 });
    let time = |seconds| {
        Some(k8s_pb::apimachinery::pkg::apis::meta::v1::Time {
            seconds: Some(seconds),
            nanos: None,
        })
    };

    // Old: meta.v1.Time at 2/3. Two hours of an m5.large.
    let request = old::PricingNodePriceRequest {
        node: Some(managed.clone()),
        start_time: time(0),
        end_time: time(7200),
    };
    let price: PricingNodePriceResponse =
        call(&channel, "PricingNodePrice", request).await.unwrap();
    assert!((price.price - 0.192).abs() < 1e-9, "{}", price.price);
    // New: Timestamp at 4/5.
    let request = new::PricingNodePriceRequest {
        node: Some(managed.clone()),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let price: PricingNodePriceResponse =
        call(&channel, "PricingNodePrice", request).await.unwrap();
    assert!((price.price - 0.096).abs() < 1e-9, "{}", price.price);
    // Transitional (1.34.2 sends both): the new fields win.
    let request = PricingNodePriceRequest {
        node: Some(managed.clone()),
        start_time: ts(0),
        end_time: ts(7200),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let price: PricingNodePriceResponse =
        call(&channel, "PricingNodePrice", request).await.unwrap();
    assert!((price.price - 0.096).abs() < 1e-9, "{}", price.price);

    // Pods: old embeds the Pod at 1, new sends its bytes at 4, transitional sends both.
    let small = pod("default", &[], "965m", "1Gi");
    let request = old::PricingPodPriceRequest {
        pod: Some(small.clone()),
        start_time: time(0),
        end_time: time(3600),
    };
    let old_price: PricingPodPriceResponse =
        call(&channel, "PricingPodPrice", request).await.unwrap();
    let bytes = small.encode_to_vec();
    let request = new::PricingPodPriceRequest {
        pod_bytes: bytes.clone(),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
    };
    let new_price: PricingPodPriceResponse =
        call(&channel, "PricingPodPrice", request).await.unwrap();
    let request = PricingPodPriceRequest {
        pod: bytes.clone(),
        pod_bytes: bytes.clone(),
        start_timestamp: ts(0),
        end_timestamp: ts(3600),
        ..Default::default()
    };
    let both: PricingPodPriceResponse = call(&channel, "PricingPodPrice", request).await.unwrap();
    assert!(old_price.price > 0.0);
    assert_eq!(old_price.price, new_price.price);
    assert_eq!(both.price, new_price.price);

    // Missing times, pod, or node; unreadable pod; reversed period: INVALID_ARGUMENT.
    let code = |r: Result<PricingNodePriceResponse, tonic::Status>| r.unwrap_err().code();
    let no_times = new::PricingNodePriceRequest {
        node: Some(managed.clone()),
        ..Default::default()
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", no_times).await),
        Code::InvalidArgument
    );
    let one_time = new::PricingNodePriceRequest {
        node: Some(managed.clone()),
        start_timestamp: ts(0),
        ..Default::default()
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", one_time).await),
        Code::InvalidArgument
    );
    let reversed = new::PricingNodePriceRequest {
        node: Some(managed),
        start_timestamp: ts(10),
        end_timestamp: ts(0),
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", reversed).await),
        Code::InvalidArgument
    );
    let no_node = new::PricingNodePriceRequest {
        start_timestamp: ts(0),
        end_timestamp: ts(1),
        ..Default::default()
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", no_node).await),
        Code::InvalidArgument
    );
    let pod_code = |r: Result<PricingPodPriceResponse, tonic::Status>| r.unwrap_err().code();
    let no_pod = new::PricingPodPriceRequest {
        start_timestamp: ts(0),
        end_timestamp: ts(1),
        ..Default::default()
    };
    assert_eq!(
        pod_code(call(&channel, "PricingPodPrice", no_pod).await),
        Code::InvalidArgument
    );
    let garbage = new::PricingPodPriceRequest {
        pod_bytes: vec![0xff; 8],
        start_timestamp: ts(0),
        end_timestamp: ts(1),
    };
    assert_eq!(
        pod_code(call(&channel, "PricingPodPrice", garbage).await),
        Code::InvalidArgument
    );
    let bad_quantity = new::PricingPodPriceRequest {
        pod_bytes: pod("default", &[], "lots", "1Gi").encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(1),
    };
    let status = call::<_, PricingPodPriceResponse>(&channel, "PricingPodPrice", bad_quantity)
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("invalid quantity \"lots\""),
        "{}",
        status.message()
    );

    // A node nobody knows, a type without a price, a pod nothing fits.
    let stranger = new::PricingNodePriceRequest {
        node: Some(node("")),
        start_timestamp: ts(0),
        end_timestamp: ts(1),
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", stranger).await),
        Code::NotFound
    );
    let unpriced = ExternalGrpcNode {
        labels: HashMap::from([("node.kubernetes.io/instance-type".into(), "z9.mega".into())]),
        ..node("")
    };
    let request = new::PricingNodePriceRequest {
        node: Some(unpriced),
        start_timestamp: ts(0),
        end_timestamp: ts(1),
    };
    assert_eq!(
        code(call(&channel, "PricingNodePrice", request).await),
        Code::Unimplemented
    );
    let huge = new::PricingPodPriceRequest {
        pod_bytes: pod("default", &[], "200", "1Gi").encode_to_vec(),
        start_timestamp: ts(0),
        end_timestamp: ts(1),
    };
    assert_eq!(
        pod_code(call(&channel, "PricingPodPrice", huge).await),
        Code::FailedPrecondition
    );
}

#[tokio::test]
async fn case_31_refresh_cleanup_and_gpu_rpcs_answer_ok() {
    let server = Server::start().await;
    let channel = server.channel().await;
    let _: RefreshResponse = call(&channel, "Refresh", RefreshRequest {}).await.unwrap();
    let _: CleanupResponse = call(&channel, "Cleanup", CleanupRequest {}).await.unwrap();
    let label: GpuLabelResponse = call(&channel, "GPULabel", GpuLabelRequest {})
        .await
        .unwrap();
    assert_eq!(label.label, "k8s.amazonaws.com/accelerator");
    let types: GetAvailableGpuTypesResponse = call(
        &channel,
        "GetAvailableGPUTypes",
        GetAvailableGpuTypesRequest {},
    )
    .await
    .unwrap();
    assert!(types.gpu_types.contains_key("nvidia-tesla-t4"));
}

#[tokio::test]
async fn case_32_a_5000_instance_group_stays_under_4_mib() {
    let scenario = SCENARIO.replacen(
        "maxSize: 5\n    desiredSize: 2",
        "maxSize: 5000\n    desiredSize: 5000",
        1,
    );
    let server = Server::start_with(&scenario, None).await;
    // tonic's client, like grpc-go's, refuses responses over 4 MiB by default.
    let mut client = server.client().await;
    let response = client
        .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(response.instances.len(), 5000);
    assert!(response.encoded_len() < 4 << 20);
    let template = client
        .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest { id: "gpu".into() })
        .await
        .unwrap()
        .into_inner();
    assert!(template.encoded_len() < 4 << 20);
}

#[tokio::test]
async fn every_rpc_is_served_to_the_generated_client() {
    let server = Server::start().await;
    let mut client = server.client().await;
    client.node_groups(NodeGroupsRequest {}).await.unwrap();
    client.refresh(RefreshRequest {}).await.unwrap();
    client.cleanup(CleanupRequest {}).await.unwrap();
    client.gpu_label(GpuLabelRequest {}).await.unwrap();
    client
        .get_available_gpu_types(GetAvailableGpuTypesRequest {})
        .await
        .unwrap();
    let ids: Vec<_> = client
        .node_group_nodes(NodeGroupNodesRequest { id: "web".into() })
        .await
        .unwrap()
        .into_inner()
        .instances;
    let for_node = NodeGroupForNodeRequest {
        node: Some(node(&ids[0].id)),
    };
    assert_eq!(
        client
            .node_group_for_node(for_node)
            .await
            .unwrap()
            .into_inner()
            .node_group
            .unwrap()
            .id,
        "web"
    );
    client
        .node_group_increase_size(NodeGroupIncreaseSizeRequest {
            id: "web".into(),
            delta: 2,
        })
        .await
        .unwrap();
    let size = client
        .node_group_target_size(NodeGroupTargetSizeRequest { id: "web".into() })
        .await
        .unwrap();
    assert_eq!(size.into_inner().target_size, 4);
    let delete = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![node(&ids[0].id)],
    };
    client.node_group_delete_nodes(delete).await.unwrap();
    // The group is at 3 with 3 live instances: nothing left to cancel.
    let decrease = NodeGroupDecreaseTargetSizeRequest {
        id: "web".into(),
        delta: -1,
    };
    assert_eq!(
        client
            .node_group_decrease_target_size(decrease)
            .await
            .unwrap_err()
            .code(),
        Code::FailedPrecondition
    );
    client
        .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest { id: "gpu".into() })
        .await
        .unwrap();
    let options = NodeGroupAutoscalingOptionsRequest {
        id: "batch".into(),
        defaults: None,
    };
    assert!(
        client
            .node_group_get_options(options)
            .await
            .unwrap()
            .into_inner()
            .node_group_autoscaling_options
            .is_some()
    );
    let price = PricingNodePriceRequest {
        node: Some(node(&ids[1].id)),
        start_timestamp: Some(prost_types::Timestamp {
            seconds: 0,
            nanos: 0,
        }),
        end_timestamp: Some(prost_types::Timestamp {
            seconds: 60,
            nanos: 0,
        }),
        ..Default::default()
    };
    assert!(
        client
            .pricing_node_price(price)
            .await
            .unwrap()
            .into_inner()
            .price
            > 0.0
    );
    let _ = wire::old::defaults();
}
