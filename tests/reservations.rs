//! Capacity reserved ahead on the simulated EKS, through the provider's gRPC services on a test clock: a
//! Capacity Block group launches only inside its block's window and only what the block holds (the rest
//! placeholders, as a stockout), EKS scales it to 0 forty minutes before the block ends and EC2 terminates
//! what is left ten minutes later; an ODCR group fills its reservations in order, then runs On-Demand; the
//! live counts on DescribeNodeGroups and in the metrics; Karpenter's capacity type in templates and on the
//! nodes the simulated cluster registers.

mod common;

use common::Server;
use common::simulated::simulated;
use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
use ekscale::proto::ekscale::{CapacityReservation, DescribeNodeGroupsRequest};
use ekscale::proto::externalgrpc::instance_status::InstanceState;
use ekscale::proto::externalgrpc::*;
use k8s_pb::api::core::v1::Node;
use prost::Message;
use std::time::Duration;

/// The clock's zero is 08:00; the block runs 09:00-19:00, so it takes new instances 09:00-18:20 and EC2
/// terminates its instances at 18:30. One of its three instances is held outside the group.
const SCENARIO: &str = r#"
cluster: reserved
region: us-east-1
start: "2026-12-01T08:00:00Z"
nodeGroups:
  - name: train
    instanceType: g4dn.xlarge
    capacityType: CAPACITY_BLOCK
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    provisioningDelay: 30s
    deletionDelay: 15m
    reservations:
      - {id: cr-0b10c0000000001, type: capacity-block, start: "2026-12-01T09:00:00Z",
         end: "2026-12-01T19:00:00Z", total: 3, available: 2}
  - name: web
    instanceType: m5.large
    zones: [us-east-1a]
    minSize: 0
    maxSize: 6
    desiredSize: 1
    reservations:
      - {id: cr-0dc1, type: odcr, total: 2}
      - {id: cr-0dc2, type: odcr, total: 1}
  - {name: plain, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 2, desiredSize: 0}
  - {name: spot, instanceType: m5.large, capacityType: SPOT, zones: [us-east-1a], minSize: 0, maxSize: 2,
     desiredSize: 0}
"#;

/// 2026-12-01T09:00:00Z and 19:00:00Z in Unix seconds.
const BLOCK_START: i64 = 1_796_115_600;
const BLOCK_END: i64 = BLOCK_START + 10 * 3600;

const MINUTE: Duration = Duration::from_secs(60);

type Client = cloud_provider_client::CloudProviderClient<tonic::transport::Channel>;

async fn increase(client: &mut Client, id: &str, delta: i32) -> Result<(), tonic::Status> {
    let request = NodeGroupIncreaseSizeRequest {
        id: id.into(),
        delta,
    };
    client.node_group_increase_size(request).await.map(drop)
}

async fn target(client: &mut Client, id: &str) -> i32 {
    let request = NodeGroupTargetSizeRequest { id: id.into() };
    let answer = client.node_group_target_size(request).await.unwrap();
    answer.into_inner().target_size
}

async fn nodes(client: &mut Client, id: &str) -> Vec<Instance> {
    let request = NodeGroupNodesRequest { id: id.into() };
    let answer = client.node_group_nodes(request).await.unwrap();
    answer.into_inner().instances
}

fn state(instance: &Instance) -> InstanceState {
    instance.status.as_ref().unwrap().instance_state()
}

/// Group `id`'s capacity type and reservations, as DescribeNodeGroups serves them.
async fn described(server: &Server, id: &str) -> (String, Vec<CapacityReservation>) {
    let mut client = NodeGroupsClient::new(server.channel().await);
    let answer = client
        .describe_node_groups(DescribeNodeGroupsRequest {})
        .await
        .unwrap()
        .into_inner();
    let group = (answer.node_groups.into_iter())
        .find(|g| g.id == id)
        .unwrap_or_else(|| panic!("no group {id}"));
    (group.capacity_type, group.reservations)
}

async fn available(server: &Server, id: &str) -> Vec<i32> {
    let (_, reservations) = described(server, id).await;
    reservations.iter().map(|r| r.available).collect()
}

#[tokio::test]
async fn a_capacity_block_group_launches_only_in_its_window_and_is_gone_before_the_block_ends() {
    let server = Server::start_with(SCENARIO, None).await;
    let mut client = server.client().await;
    let clock = server.sim().clock().clone();

    // 08:00: before the block.
    let refused = increase(&mut client, "train", 1).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    for named in [
        "cr-0b10c0000000001",
        "2026-12-01T09:00:00Z",
        "2026-12-01T18:20:00Z",
    ] {
        assert!(refused.message().contains(named), "{}", refused.message());
    }
    assert_eq!(target(&mut client, "train").await, 0, "nothing changed");
    assert!(nodes(&mut client, "train").await.is_empty());

    // 09:00: the window is open; the block holds two instances for the group, the third waits as a
    // stockout does.
    clock.advance(60 * MINUTE);
    increase(&mut client, "train", 3).await.unwrap();
    let instances = nodes(&mut client, "train").await;
    assert_eq!(instances.len(), 3);
    let placeholder = &instances[2];
    assert!(
        placeholder.id.contains("i-placeholder-"),
        "{}",
        placeholder.id
    );
    let error = (placeholder.status.as_ref().unwrap().error_info.as_ref()).unwrap();
    assert_eq!(error.instance_error_class, 1, "out of resources");
    assert!(
        error
            .error_message
            .contains("reservation cr-0b10c0000000001 is full"),
        "{}",
        error.error_message
    );
    let (capacity_type, reservations) = described(&server, "train").await;
    assert_eq!(capacity_type, "CAPACITY_BLOCK");
    assert_eq!(
        reservations,
        [CapacityReservation {
            id: "cr-0b10c0000000001".into(),
            r#type: "capacity-block".into(),
            start_unix_seconds: BLOCK_START,
            end_unix_seconds: BLOCK_END,
            total: 3,
            available: 0,
        }]
    );

    // 18:19:59 the group still runs; at 18:20 EKS scales it to 0 and its instances go through deletion
    // (they hold the block until gone), and no new instance may be asked for.
    clock.advance(9 * 60 * MINUTE + 19 * MINUTE + Duration::from_secs(59));
    assert_eq!(target(&mut client, "train").await, 3);
    clock.advance(Duration::from_secs(1));
    assert_eq!(target(&mut client, "train").await, 0);
    let instances = nodes(&mut client, "train").await;
    assert_eq!(
        instances.len(),
        2,
        "the placeholder cancelled with the target"
    );
    assert!(
        instances
            .iter()
            .all(|i| state(i) == InstanceState::InstanceDeleting)
    );
    assert_eq!(available(&server, "train").await, [0]);
    let refused = increase(&mut client, "train", 1).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused.message().contains("18:20:00Z"),
        "{}",
        refused.message()
    );

    // Their deletion takes 15 minutes, but at 18:30 EC2 terminates what is left.
    clock.advance(10 * MINUTE - Duration::from_secs(1));
    assert_eq!(nodes(&mut client, "train").await.len(), 2);
    clock.advance(Duration::from_secs(1));
    assert!(nodes(&mut client, "train").await.is_empty());
    assert_eq!(available(&server, "train").await, [2]);
}

#[tokio::test]
async fn an_odcr_group_fills_its_reservations_in_order_then_runs_on_demand() {
    let server = Server::start_with(SCENARIO, None).await;
    let mut client = server.client().await;
    let (capacity_type, _) = described(&server, "web").await;
    assert_eq!(capacity_type, "ON_DEMAND");
    assert_eq!(available(&server, "web").await, [1, 1], "its one instance");

    increase(&mut client, "web", 3).await.unwrap();
    let instances = nodes(&mut client, "web").await;
    assert_eq!(instances.len(), 4, "two in reservations, two On-Demand");
    assert!(instances.iter().all(|i| !i.id.contains("i-placeholder-")));
    assert_eq!(available(&server, "web").await, [0, 0]);

    let text = server.metrics.encode(server.sim());
    for line in [
        r#"ekscale_provider_reserved_instances{node_group="web",reservation="cr-0dc1",type="odcr",state="used"} 2"#,
        r#"ekscale_provider_reserved_instances{node_group="web",reservation="cr-0dc2",type="odcr",state="available"} 0"#,
        r#"ekscale_provider_reserved_instances{node_group="train",reservation="cr-0b10c0000000001",type="capacity-block",state="used"} 1"#,
        r#"ekscale_provider_reserved_instances{node_group="train",reservation="cr-0b10c0000000001",type="capacity-block",state="available"} 2"#,
    ] {
        assert!(text.contains(line), "{line} missing:\n{text}");
    }
    assert!(
        !text.contains(r#"reserved_instances{node_group="plain""#),
        "a group without reservations has none"
    );

    // Deleting an instance frees its place in the reservations, the first one last.
    let victim = instances[3].id.clone();
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![ExternalGrpcNode {
            provider_id: victim,
            ..Default::default()
        }],
    };
    client.node_group_delete_nodes(request).await.unwrap();
    server.sim().clock().advance(MINUTE);
    assert_eq!(
        available(&server, "web").await,
        [0, 0],
        "three still fill 2 + 1"
    );
    let victim = nodes(&mut client, "web").await[2].id.clone();
    let request = NodeGroupDeleteNodesRequest {
        id: "web".into(),
        nodes: vec![ExternalGrpcNode {
            provider_id: victim,
            ..Default::default()
        }],
    };
    client.node_group_delete_nodes(request).await.unwrap();
    server.sim().clock().advance(MINUTE);
    assert_eq!(available(&server, "web").await, [0, 1]);
}

async fn template_labels(client: &mut Client, id: &str) -> (String, String) {
    let request = NodeGroupTemplateNodeInfoRequest { id: id.into() };
    let answer = client.node_group_template_node_info(request).await.unwrap();
    let node = Node::decode(answer.into_inner().node_bytes.as_slice()).unwrap();
    let labels = node.metadata.unwrap().labels;
    (
        labels["karpenter.sh/capacity-type"].clone(),
        labels["eks.amazonaws.com/capacityType"].clone(),
    )
}

#[tokio::test]
async fn templates_and_registered_nodes_say_reserved_capacity() {
    let server = Server::start_with(SCENARIO, None).await;
    let mut client = server.client().await;
    let expected = [
        ("train", ("reserved", "CAPACITY_BLOCK")),
        ("web", ("reserved", "ON_DEMAND")),
        ("plain", ("on-demand", "ON_DEMAND")),
        ("spot", ("spot", "SPOT")),
    ];
    for (group, (karpenter, eks)) in expected {
        let labels = template_labels(&mut client, group).await;
        assert_eq!(
            (labels.0.as_str(), labels.1.as_str()),
            (karpenter, eks),
            "{group}"
        );
    }

    // The simulated cluster registers web's running instance as kubelet would, from the template.
    let (_server, _config, cluster) = simulated(SCENARIO).await;
    cluster.step().await.unwrap();
    let nodes = cluster.nodes();
    assert_eq!(nodes.len(), 1, "web's one instance");
    let labels = &nodes[0].labels;
    assert_eq!(
        labels.get("karpenter.sh/capacity-type").map(String::as_str),
        Some("reserved")
    );
    assert_eq!(
        labels
            .get("eks.amazonaws.com/nodegroup")
            .map(String::as_str),
        Some("web")
    );
}

#[test]
fn a_scenario_with_timed_reservations_needs_its_start() {
    let without_start = SCENARIO.replace("start: \"2026-12-01T08:00:00Z\"\n", "");
    let error = ekscale::cloud::Scenario::parse(&without_start).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("start") && message.contains("reservations"),
        "{message}"
    );
    // An ODCR with no window needs none.
    let untimed = "cluster: c\nregion: us-east-1\nnodeGroups:\n  - {name: web, instanceType: m5.large, \
                   zones: [us-east-1a], minSize: 0, maxSize: 2, desiredSize: 0, \
                   reservations: [{id: cr-0dc1, type: odcr, total: 2}]}\n";
    assert!(ekscale::cloud::Scenario::parse(untimed).is_ok());
}

/// AtomicIncreaseSize on a Capacity Block group: refused outside the window as IncreaseSize is; inside it, an
/// increase the block cannot hold whole is RESOURCE_EXHAUSTED naming the full block, and one it can is taken.
#[tokio::test]
async fn an_all_or_nothing_increase_fits_the_block_or_changes_nothing() {
    use ekscale::proto::ekscale::AtomicIncreaseSizeRequest;
    let server = Server::start_with(SCENARIO, None).await;
    let mut groups = NodeGroupsClient::new(server.channel().await);
    let mut client = server.client().await;
    let atomic = |delta| AtomicIncreaseSizeRequest {
        id: "train".into(),
        delta,
    };
    let refused = groups.atomic_increase_size(atomic(1)).await.unwrap_err();
    assert_eq!(refused.code(), tonic::Code::FailedPrecondition);
    assert!(
        refused.message().contains("2026-12-01T09:00:00Z"),
        "{}",
        refused.message()
    );

    server.sim().clock().advance(60 * MINUTE);
    let exhausted = groups.atomic_increase_size(atomic(3)).await.unwrap_err();
    assert_eq!(exhausted.code(), tonic::Code::ResourceExhausted);
    assert!(
        exhausted
            .message()
            .contains("reservation cr-0b10c0000000001 is full"),
        "{}",
        exhausted.message()
    );
    assert_eq!(target(&mut client, "train").await, 0, "nothing changed");
    groups.atomic_increase_size(atomic(2)).await.unwrap();
    assert_eq!(target(&mut client, "train").await, 2);
    assert_eq!(available(&server, "train").await, [0]);
}
