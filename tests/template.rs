//! The template Node of each group, decoded from the wire as cluster-autoscaler decodes it (k8s-pb v1.Node),
//! carries the quantities, labels, taints and Ready condition of the node EKS would register.

mod common;

use common::Server;
use ekscale::k8s::Quantity;
use ekscale::proto::externalgrpc::NodeGroupTemplateNodeInfoRequest;
use k8s_pb::api::core::v1::Node;
use prost::Message;
use std::collections::BTreeMap;

async fn template(server: &Server, id: &str) -> Node {
    let mut client = server.client().await;
    let request = NodeGroupTemplateNodeInfoRequest { id: id.into() };
    let response = client
        .node_group_template_node_info(request)
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        response.node_info, response.node_bytes,
        "the same Node for old and new clients"
    );
    Node::decode(response.node_bytes.as_slice()).unwrap()
}

fn quantities(
    map: &BTreeMap<String, k8s_pb::apimachinery::pkg::api::resource::Quantity>,
) -> Vec<(&str, &str)> {
    map.iter()
        .map(|(k, v)| (k.as_str(), v.string.as_deref().unwrap()))
        .collect()
}

fn taints(node: &Node) -> Vec<(String, String, String)> {
    let spec = node.spec.as_ref().unwrap();
    spec.taints
        .iter()
        .map(|t| {
            (
                t.key.clone().unwrap(),
                t.value.clone().unwrap_or_default(),
                t.effect.clone().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn m5_large_template_has_eks_capacity_and_allocatable() {
    let server = Server::start().await;
    let node = template(&server, "web").await;
    let status = node.status.as_ref().unwrap();
    assert_eq!(
        quantities(&status.capacity),
        [
            ("cpu", "2"),
            ("ephemeral-storage", "20Gi"),
            ("memory", "8Gi"),
            ("pods", "29")
        ]
    );
    assert_eq!(
        quantities(&status.allocatable),
        [
            ("cpu", "1930m"),
            ("ephemeral-storage", "17Gi"),
            ("memory", "7518Mi"),
            ("pods", "29")
        ]
    );
    let ready = status
        .conditions
        .iter()
        .find(|c| c.r#type.as_deref() == Some("Ready"))
        .unwrap();
    assert_eq!(ready.status.as_deref(), Some("True"));
    let labels = &node.metadata.as_ref().unwrap().labels;
    for (key, value) in [
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("node.kubernetes.io/instance-type", "m5.large"),
        ("topology.kubernetes.io/zone", "us-east-1a"),
        ("topology.kubernetes.io/region", "us-east-1"),
        ("eks.amazonaws.com/nodegroup", "web"),
        ("eks.amazonaws.com/capacityType", "ON_DEMAND"),
        ("team", "web"),
    ] {
        assert_eq!(labels.get(key).map(String::as_str), Some(value), "{key}");
    }
    assert!(taints(&node).is_empty());
}

#[tokio::test]
async fn tainted_spot_group_template() {
    let server = Server::start().await;
    let node = template(&server, "batch").await;
    let status = node.status.as_ref().unwrap();
    // c5.xlarge: 4 vCPU, 8 GiB, 4 ENIs x 15 IPs -> 58 pods; 80m CPU and 255+638+100 MiB reserved.
    assert_eq!(status.capacity["pods"].string.as_deref(), Some("58"));
    assert_eq!(status.allocatable["cpu"].string.as_deref(), Some("3920m"));
    assert_eq!(
        status.allocatable["memory"].string.as_deref(),
        Some("7199Mi")
    );
    let labels = &node.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["eks.amazonaws.com/capacityType"], "SPOT");
    assert_eq!(labels["workload"], "batch");
    assert_eq!(
        taints(&node),
        [("dedicated".into(), "batch".into(), "NoSchedule".into())]
    );
}

#[tokio::test]
async fn gpu_group_template_scales_from_zero() {
    let server = Server::start().await;
    let node = template(&server, "gpu").await;
    let status = node.status.as_ref().unwrap();
    assert_eq!(
        status.capacity["nvidia.com/gpu"].string.as_deref(),
        Some("1")
    );
    assert_eq!(
        status.allocatable["nvidia.com/gpu"].string.as_deref(),
        Some("1")
    );
    let labels = &node.metadata.as_ref().unwrap().labels;
    assert_eq!(labels["k8s.amazonaws.com/accelerator"], "nvidia-tesla-t4");
    assert_eq!(
        taints(&node),
        [("nvidia.com/gpu".into(), "true".into(), "NoSchedule".into())]
    );
}

/// §5 case 27: Go's decoder fails the whole Node on one bad quantity; every quantity we send parses.
#[tokio::test]
async fn every_quantity_of_every_template_is_valid() {
    let server = Server::start().await;
    for id in ["web", "batch", "tight", "gpu", "floor"] {
        let node = template(&server, id).await;
        let status = node.status.unwrap();
        for (name, quantity) in status.capacity.iter().chain(&status.allocatable) {
            let text = quantity.string.as_deref().unwrap();
            let parsed: Quantity = text.parse().unwrap_or_else(|e| panic!("{id} {name}: {e}"));
            assert!(parsed.millis() > 0, "{id} {name} = {text}");
        }
    }
}
