//! The client against a provider that counts its calls: what is cached until the next Refresh.

use super::config::ProviderConfig;
use super::convert::*;
use super::provider::*;
use crate::model::{CapacityType, NodeGroupState, NodeGroupStatus};
use crate::proto::ekscale::NodeGroupDescription;
use crate::proto::externalgrpc::*;
use k8s_pb::api::core::v1::Node;
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use prost::Message;

fn node() -> Node {
    Node {
        metadata: Some(ObjectMeta {
            name: Some("template".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn templates_are_read_from_either_generations_field() {
    let bytes = node().encode_to_vec();
    let old = NodeGroupTemplateNodeInfoResponse {
        node_info: bytes.clone(),
        ..Default::default()
    };
    let new = NodeGroupTemplateNodeInfoResponse {
        node_bytes: bytes,
        ..Default::default()
    };
    let node_only = |response| {
        decode_template(response)
            .unwrap()
            .map(|t| (*t.node).clone())
    };
    assert_eq!(node_only(old), Some(node()));
    assert_eq!(node_only(new), Some(node()));
    assert_eq!(
        node_only(NodeGroupTemplateNodeInfoResponse::default()),
        None
    );
    let garbage = NodeGroupTemplateNodeInfoResponse {
        node_bytes: vec![0xff; 3],
        ..Default::default()
    };
    assert!(decode_template(garbage).is_err());
}

/// Field 3 (cluster-autoscaler 1.37): the template's ResourceSlices come with it; one that cannot be read
/// fails the template, naming the RPC.
#[test]
fn templates_carry_the_slices_of_field_3() {
    let slice = |name: &str| {
        crate::k8s::slice_from_spec(
            serde_json::json!({"driver": "gpu.nvidia.com",
                "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}}]}),
            name,
            "template",
            "template",
        )
        .unwrap()
    };
    let (a, b) = (slice("a"), slice("b"));
    let response = |resource_slice_bytes| NodeGroupTemplateNodeInfoResponse {
        node_bytes: node().encode_to_vec(),
        resource_slice_bytes,
        ..Default::default()
    };
    let bytes = [&a, &b]
        .map(crate::k8s::resource_slice_to_pb_bytes)
        .to_vec();
    let template = decode_template(response(bytes)).unwrap().unwrap();
    assert_eq!(template.resource_slices, [a, b]);
    let without = decode_template(response(Vec::new())).unwrap().unwrap();
    assert!(without.resource_slices.is_empty());
    let error = decode_template(response(vec![vec![0x0a, 0x00]])).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("NodeGroupTemplateNodeInfo: the provider sent a ResourceSlice"),
        "{error}"
    );
}

#[tokio::test]
async fn addresses_are_host_port_never_urls() {
    for good in [
        "127.0.0.1:8086",
        "ekscale-provider.kube-system.svc:8086",
        "[::1]:8086",
    ] {
        assert!(
            ProviderClient::new(&ProviderConfig::plaintext(good)).is_ok(),
            "{good}"
        );
    }
    for bad in [
        "http://127.0.0.1:8086",
        "127.0.0.1",
        ":8086",
        "host:port",
        "",
    ] {
        let error = ProviderClient::new(&ProviderConfig::plaintext(bad))
            .err()
            .expect(bad)
            .to_string();
        assert!(error.contains("expected host:port"), "{bad}: {error}");
    }
}

#[test]
fn a_groups_state_keeps_an_unknown_status_and_reads_no_image_from_an_empty_one() {
    let described = |status: &str, image: &str| NodeGroupDescription {
        id: "web".into(),
        status: status.into(),
        image: image.into(),
        capacity_rebalance: true,
        node_repair: None,
        capacity_type: "CAPACITY_BLOCK".into(),
        reservations: Vec::new(),
    };
    assert_eq!(
        state_of(described("UPDATING", "ami-0c1f2e3d4b5a69788")).unwrap(),
        (
            "web".to_string(),
            NodeGroupState {
                status: NodeGroupStatus::Updating,
                image: Some("ami-0c1f2e3d4b5a69788".into()),
                capacity_rebalance: true,
                node_repair: None,
                capacity_type: Some(CapacityType::CapacityBlock),
                reservations: Vec::new(),
            }
        )
    );
    let (_, state) = state_of(described("PAUSED", "")).unwrap();
    assert_eq!(state.status, NodeGroupStatus::Unknown("PAUSED".into()));
    assert_eq!(state.image, None);
}
