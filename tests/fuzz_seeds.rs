//! The fuzz targets that read bytes (`node_bytes`, `grpc_handlers`) start from seeds kept in
//! `fuzz/seeds/<target>/`: what the provider really sends and a sequence of calls cluster-autoscaler really
//! makes. Checked here to still be what each target reads, so that fuzzing starts from valid inputs;
//! `EKSCALE_WRITE_FUZZ_SEEDS=1 cargo test --test fuzz_seeds` makes them again from the built-in simulated EKS.

mod common;

use common::Server;
use ekscale::cloud::BUILT_IN_SCENARIO;
use ekscale::proto::externalgrpc::*;
use prost::Message;
use std::path::PathBuf;

fn seed_path(target: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target)
        .join(name)
}

/// `bytes` as the seed `target/name`: written when asked to, else read and compared.
fn keep(target: &str, name: &str, bytes: &[u8]) -> Vec<u8> {
    let path = seed_path(target, name);
    if std::env::var_os("EKSCALE_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn the_template_node_seed_is_a_node_the_companion_reads() {
    let server = Server::start_with(BUILT_IN_SCENARIO, None).await;
    let mut client = server.client().await;
    let template = client
        .node_group_template_node_info(NodeGroupTemplateNodeInfoRequest { id: "gpu".into() })
        .await
        .unwrap()
        .into_inner();
    let seed = keep("node_bytes", "gpu-template.bin", &template.node_bytes);
    let node = k8s_pb::api::core::v1::Node::decode(seed.as_slice()).unwrap();
    let node = ekscale::k8s::node_from_pb(&node).unwrap();
    assert_eq!(
        node.labels
            .get("eks.amazonaws.com/nodegroup")
            .map(|v| v.as_str()),
        Some("gpu")
    );
}

/// The grpc_handlers target's framing: `[method][length][message]...`, methods numbered as it numbers them.
fn frame(calls: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (method, message) in calls {
        bytes.push(*method);
        bytes.push(u8::try_from(message.len()).unwrap());
        bytes.extend_from_slice(message);
    }
    bytes
}

#[test]
fn the_call_sequence_seed_is_a_scale_up_and_down() {
    let id = || "general".to_string();
    let calls = [
        (7, RefreshRequest {}.encode_to_vec()),
        (0, NodeGroupsRequest {}.encode_to_vec()),
        (8, NodeGroupTargetSizeRequest { id: id() }.encode_to_vec()),
        (
            9,
            NodeGroupIncreaseSizeRequest { delta: 2, id: id() }.encode_to_vec(),
        ),
        (12, NodeGroupNodesRequest { id: id() }.encode_to_vec()),
        (
            13,
            NodeGroupTemplateNodeInfoRequest { id: id() }.encode_to_vec(),
        ),
        (
            11,
            NodeGroupDecreaseTargetSizeRequest {
                delta: -1,
                id: id(),
            }
            .encode_to_vec(),
        ),
    ];
    let seed = keep("grpc_handlers", "scale-up-and-down.bin", &frame(&calls));
    // Read back as the target reads it: every frame whole and each message its method's request.
    let mut rest = seed.as_slice();
    let mut read = Vec::new();
    while let [method, len, tail @ ..] = rest {
        let (message, next) = tail.split_at(usize::from(*len));
        read.push((*method, message.to_vec()));
        rest = next;
    }
    assert_eq!(read, calls);
    let increase = NodeGroupIncreaseSizeRequest::decode(read[3].1.as_slice()).unwrap();
    assert_eq!((increase.id.as_str(), increase.delta), ("general", 2));
}
