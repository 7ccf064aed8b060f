//! cluster-autoscaler 1.37's wire: field 3 of the template response, `resourceSliceBytes` (kubernetes/autoscaler
//! #10303), the ResourceSlices a group's new node publishes. The provider fills it with the bytes
//! `ekscale.v1.NodeGroups/TemplateResourceSlices` serves; a client generated from upstream's proto
//! (tests/data/upstream/externalgrpc.proto, compiled here with protox and read with prost-reflect, not through
//! our own schema) reads them as those slices; the clients of 1.25-1.34.1 and 1.35 still read the template as
//! before; and the companion scales a DRA group from zero over field 3 alone, from a provider that serves no
//! `ekscale.v1` at all.

mod common;

use common::wire::{call, new, old};
use common::{DRA_SCENARIO, Server};
use ekscale::autoscaler::{ClusterSource, ProviderClient, ProviderConfig, RunOnce, Settings};
use ekscale::clock::Clock;
use ekscale::cloud::{BUILT_IN_SCENARIO, NodeGroupBackend, Scenario, SimulatedEks};
use ekscale::k8s::{PodJson, claim_template, device_class, pod_from_api};
use ekscale::model::{ClaimSource, NodeScope, Pod};
use ekscale::proto::ekscale::TemplateResourceSlicesRequest;
use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
use ekscale::proto::ekscale::node_groups_server::NodeGroupsServer;
use ekscale::proto::externalgrpc::cloud_provider_server::CloudProviderServer;
use ekscale::proto::externalgrpc::{
    NodeGroupTemplateNodeInfoRequest, NodeGroupTemplateNodeInfoResponse,
};
use ekscale::provider::{CloudProviderService, NodeGroupsService, ProviderMetrics};
use ekscale::simulated_cluster::SimulatedCluster;
use k8s_pb::api::core::v1::Node;
use k8s_pb::api::resource::v1::ResourceSlice;
use prost::Message;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;
use tonic::{Request, Status};

/// A group without devices, a DRA group whose slices NVIDIA's driver derives (four A10Gs), and one whose two
/// slices are written out (`resourceSlices`, two pools of one driver).
const SCENARIO: &str = "
cluster: wire
region: us-east-1
nodeGroups:
  - {name: web, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 0}
  - name: gpu
    instanceType: g5.12xlarge
    zones: [us-east-1a]
    minSize: 0
    maxSize: 4
    desiredSize: 0
    draDrivers: [gpu.nvidia.com]
  - name: fpga
    instanceType: m5.large
    zones: [us-east-1a]
    minSize: 0
    maxSize: 2
    desiredSize: 0
    resourceSlices:
      - driver: fpga.example.com
        devices:
          - {name: fpga-0, attributes: {model: {string: u250}}, capacity: {memory: {value: 64Gi}}}
          - {name: fpga-1, attributes: {model: {string: u250}}, capacity: {memory: {value: 64Gi}}}
      - driver: fpga.example.com
        devices:
          - {name: fpga-2, attributes: {model: {string: u280}}, capacity: {memory: {value: 8Gi}}}
";

fn request(id: &str) -> NodeGroupTemplateNodeInfoRequest {
    NodeGroupTemplateNodeInfoRequest { id: id.into() }
}

/// What `TemplateResourceSlices` serves for `id`.
async fn served_slices(channel: &Channel, id: &str) -> Vec<Vec<u8>> {
    let request = TemplateResourceSlicesRequest {
        ids: vec![id.into()],
    };
    let answer = NodeGroupsClient::new(channel.clone())
        .template_resource_slices(request)
        .await
        .unwrap()
        .into_inner();
    let [group] = answer.node_groups.try_into().unwrap();
    assert_eq!(group.id, id);
    group.resource_slice_bytes
}

fn decode_slices(bytes: &[Vec<u8>]) -> Vec<ResourceSlice> {
    (bytes.iter())
        .map(|b| ResourceSlice::decode(b.as_slice()).unwrap())
        .collect()
}

fn name_of(node: &Node) -> String {
    node.metadata.as_ref().unwrap().name.clone().unwrap()
}

#[tokio::test]
async fn field_3_carries_what_template_resource_slices_serves_node_local_to_the_template_node() {
    let server = Server::start_with(SCENARIO, None).await;
    let channel = server.channel().await;
    for (id, count) in [("web", 0), ("gpu", 1), ("fpga", 2)] {
        let template: NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request(id))
                .await
                .unwrap();
        assert_eq!(template.resource_slice_bytes.len(), count, "{id}");
        assert_eq!(
            template.resource_slice_bytes,
            served_slices(&channel, id).await,
            "{id}: the same bytes in both services"
        );
        let node = name_of(&Node::decode(template.node_bytes.as_slice()).unwrap());
        let slices = decode_slices(&template.resource_slice_bytes);
        let pools: Vec<String> = (slices.iter())
            .map(|s| s.spec.as_ref().unwrap().pool.as_ref().unwrap())
            .map(|pool| pool.name.clone().unwrap())
            .collect();
        // One pool per driver is named after the node, as drivers name theirs; a second pool gets `-1`.
        let expected: Vec<String> = match id {
            "fpga" => vec![node.clone(), format!("{node}-1")],
            _ => vec![node.clone(); count],
        };
        assert_eq!(pools, expected, "{id}");
        for slice in &slices {
            assert_eq!(slice.spec.as_ref().unwrap().node_name, Some(node.clone()));
        }
    }
}

#[tokio::test]
async fn clients_of_1_30_and_1_35_read_the_template_as_before() {
    let server = Server::start_with(SCENARIO, None).await;
    let channel = server.channel().await;
    for id in ["gpu", "fpga"] {
        let union: NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request(id))
                .await
                .unwrap();
        let node = Node::decode(union.node_bytes.as_slice()).unwrap();
        // 1.25-1.34.1 read field 1 as an embedded Node, 1.35 and 1.36 field 2; neither knows field 3.
        let old: old::NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request(id))
                .await
                .unwrap();
        assert_eq!(old.node_info.as_ref(), Some(&node), "{id}: 1.30's view");
        let new: new::NodeGroupTemplateNodeInfoResponse =
            call(&channel, "NodeGroupTemplateNodeInfo", request(id))
                .await
                .unwrap();
        assert_eq!(new.node_bytes, union.node_bytes, "{id}: 1.35's view");
        assert!(!union.resource_slice_bytes.is_empty(), "{id}: field 3 sent");
    }
}

/// The largest template we serve: a p5.48xlarge (eight H100s) whose nodes also publish a full slice of
/// another driver (128 devices, the API's limit, each with 32 attributes, its limit, of 64 characters).
/// Fields 1 and 2 both carry the Node; with the slices the response still fits grpc-go's 4 MiB.
#[tokio::test]
async fn the_template_response_stays_under_4_mib_with_compat_doubling() {
    let attributes: serde_json::Map<String, serde_json::Value> = (0..32)
        .map(|i| {
            (
                format!("attribute_{i:02}"),
                json!({"string": "x".repeat(64)}),
            )
        })
        .collect();
    let devices: Vec<serde_json::Value> = (0..128)
        .map(|i| json!({"name": format!("device-{i:03}"), "attributes": attributes}))
        .collect();
    let slice = json!({"driver": "big.example.com", "devices": devices});
    let scenario = format!(
        "cluster: big\nregion: us-east-1\nnodeGroups:\n  - name: p5\n    instanceType: p5.48xlarge\n    \
         zones: [us-east-1a]\n    minSize: 0\n    maxSize: 2\n    desiredSize: 0\n    \
         draDrivers: [gpu.nvidia.com]\n    resourceSlices: [{slice}]\n"
    );
    let server = Server::start_with(&scenario, None).await;
    // tonic's client, like grpc-go's, refuses a response over 4 MiB.
    let template = server
        .client()
        .await
        .node_group_template_node_info(request("p5"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(template.resource_slice_bytes.len(), 2);
    assert_eq!(template.node_info, template.node_bytes);
    let slices: usize = template.resource_slice_bytes.iter().map(Vec::len).sum();
    let size = template.encoded_len();
    assert!(size > 2 * template.node_bytes.len() + slices, "{size}");
    assert!(size < 4 << 20, "{size} bytes");
}

/// A codec for messages known only by their descriptors: what a client generated from a .proto it was never
/// compiled with sends and reads.
#[derive(Clone)]
struct DynamicCodec(MessageDescriptor);

struct DynamicEncoder;

struct DynamicDecoder(MessageDescriptor);

impl Codec for DynamicCodec {
    type Encode = DynamicMessage;
    type Decode = DynamicMessage;
    type Encoder = DynamicEncoder;
    type Decoder = DynamicDecoder;

    fn encoder(&mut self) -> DynamicEncoder {
        DynamicEncoder
    }

    fn decoder(&mut self) -> DynamicDecoder {
        DynamicDecoder(self.0.clone())
    }
}

impl Encoder for DynamicEncoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn encode(&mut self, item: DynamicMessage, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        item.encode(dst)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

impl Decoder for DynamicDecoder {
    type Item = DynamicMessage;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<DynamicMessage>, Status> {
        DynamicMessage::decode(self.0.clone(), src)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }
}

/// Upstream's schema, compiled from the .proto text as protoc would.
fn upstream() -> DescriptorPool {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/upstream");
    let files = protox::compile(["externalgrpc.proto"], [dir]).unwrap();
    DescriptorPool::from_file_descriptor_set(files).unwrap()
}

/// `NodeGroupTemplateNodeInfo` of `id` as upstream's schema reads it: the Node of `nodeBytes` and the slices
/// of `resourceSliceBytes`.
async fn upstream_template(
    pool: &DescriptorPool,
    channel: &Channel,
    id: &str,
) -> (Node, Vec<ResourceSlice>) {
    let service = pool
        .get_service_by_name("clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider")
        .unwrap();
    let method = (service.methods())
        .find(|m| m.name() == "NodeGroupTemplateNodeInfo")
        .unwrap();
    let mut request = DynamicMessage::new(method.input());
    request.set_field_by_name("id", Value::String(id.into()));
    let path = format!("/{}/{}", service.full_name(), method.name());
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.unwrap();
    let codec = DynamicCodec(method.output());
    let response = grpc
        .unary(
            Request::new(request),
            PathAndQuery::try_from(path).unwrap(),
            codec,
        )
        .await
        .unwrap()
        .into_inner();
    let bytes = |value: &Value| value.as_bytes().unwrap().to_vec();
    let node = bytes(&response.get_field_by_name("nodeBytes").unwrap());
    let slices = response.get_field_by_name("resourceSliceBytes").unwrap();
    let slices: Vec<Vec<u8>> = slices.as_list().unwrap().iter().map(bytes).collect();
    (
        Node::decode(node.as_slice()).unwrap(),
        decode_slices(&slices),
    )
}

#[tokio::test]
async fn a_client_of_upstreams_proto_reads_field_3_as_the_template_resource_slices() {
    let pool = upstream();
    let response = pool
        .get_message_by_name(
            "clusterautoscaler.cloudprovider.v1.externalgrpc.NodeGroupTemplateNodeInfoResponse",
        )
        .unwrap();
    let field = response.get_field(3).unwrap();
    assert_eq!(field.name(), "resourceSliceBytes");
    assert!(field.is_list() && field.kind() == prost_reflect::Kind::Bytes);

    // The built-in gpu group (NVIDIA's driver on a g4dn.xlarge: one T4), and a scenario's `resourceSlices`.
    let built_in = Server::start_with(BUILT_IN_SCENARIO, None).await;
    let written = Server::start_with(SCENARIO, None).await;
    for (server, id, count) in [(&built_in, "gpu", 1), (&written, "fpga", 2)] {
        let channel = server.channel().await;
        let (node, slices) = upstream_template(&pool, &channel, id).await;
        assert_eq!(slices.len(), count, "{id}");
        assert_eq!(
            slices,
            decode_slices(&served_slices(&channel, id).await),
            "{id}"
        );
        for slice in &slices {
            assert_eq!(slice.spec.as_ref().unwrap().node_name, Some(name_of(&node)));
        }
    }
}

/// The externalgrpc service over `cloud` on a loopback port, and `ekscale.v1.NodeGroups` over `extension`
/// when given: without it, a provider the companion did not write.
async fn serve(cloud: Arc<SimulatedEks>, extension: Option<Arc<SimulatedEks>>) -> ProviderConfig {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let metrics = Arc::new(ProviderMetrics::default());
    let cloud: Arc<dyn NodeGroupBackend> = cloud;
    let service = CloudProviderService::new(cloud, metrics.clone());
    let extension = extension.map(|sim| {
        let backend: Arc<dyn NodeGroupBackend> = sim;
        NodeGroupsServer::new(NodeGroupsService::new(backend, metrics))
    });
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CloudProviderServer::new(service))
            .add_optional_service(extension)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    ProviderConfig::plaintext(addr.to_string())
}

fn sim(scenario: &str) -> Arc<SimulatedEks> {
    Arc::new(SimulatedEks::new(
        Scenario::parse(scenario).unwrap(),
        Clock::manual(),
    ))
}

/// `n` pods of Job `job`, each claiming one device of class `class` through a claim template of that name.
fn claiming_pods(job: &str, n: usize, class: &str) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{job}-{i}"), "namespace": "ml",
                    "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                        "uid": format!("uid-{job}"), "controller": true}]},
                "spec": {
                    "containers": [{"name": "main", "image": job, "resources": {
                        "requests": {"cpu": "1", "memory": "4Gi"}, "claims": [{"name": "device"}]}}],
                    "resourceClaims": [{"name": "device", "resourceClaimTemplateName": class}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}});
            pod_from_api(&serde_json::from_value(pod).unwrap(), PodJson::Drop).unwrap()
        })
        .collect()
}

/// A simulated cluster over `config`, with a DeviceClass for each driver (named after it) and a claim
/// template of the same name asking one device of it.
fn cluster_with_classes(
    config: &ProviderConfig,
    clock: Clock,
    drivers: &[&str],
) -> SimulatedCluster {
    let cluster = SimulatedCluster::new(config, clock).unwrap();
    for driver in drivers {
        let expression = format!("device.driver == '{driver}'");
        let class = device_class(
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": expression}}]}}),
        )
        .unwrap();
        let template = claim_template(json!({"apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate", "metadata": {"name": driver, "namespace": "ml"},
            "spec": {"spec": {"devices": {"requests": [{"name": "device",
                "exactly": {"deviceClassName": driver}}]}}}}))
        .unwrap();
        cluster.create_device_classes([Arc::new(class)]);
        cluster.create_claim_templates([Arc::new(template)]);
    }
    cluster
}

fn acting() -> Settings {
    Settings {
        act: true,
        ..Settings::default()
    }
}

fn scale_ups(status: &ekscale::autoscaler::status::Status) -> Vec<(&str, u64)> {
    (status.scale_up.iter())
        .map(|s| (s.node_group.as_str(), s.delta))
        .collect()
}

#[tokio::test]
async fn the_companion_scales_a_dra_group_from_zero_over_field_3_alone() {
    let sim = sim(DRA_SCENARIO);
    let config = serve(sim.clone(), None).await;
    let client = ProviderClient::new(&config).unwrap();
    client.refresh().await.unwrap();
    assert!(
        client.extension_template_slices().await.unwrap().is_none(),
        "the provider serves no ekscale.v1"
    );
    let cluster = cluster_with_classes(&config, sim.clock().clone(), &["gpu.nvidia.com"]);
    cluster.create_pods(claiming_pods("render", 2, "gpu.nvidia.com"));

    let mut once = RunOnce::new(client, acting());
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(scale_ups(&status), [("gpu", 2)], "{status:#?}");

    // The nodes register and publish their T4s (the slices of field 3 again); the pods bind there, each with
    // its claim allocated on its node.
    for _ in 0..3 {
        sim.clock().advance(Duration::from_secs(31));
        let view = cluster.view().await.unwrap();
        once.run(&view, cluster.now()).await.unwrap();
    }
    let view = cluster.view().await.unwrap();
    for pod in view.pods.iter() {
        let node = pod.node_name.as_deref().expect("every render pod runs");
        let ClaimSource::Template {
            made: Some(made), ..
        } = &pod.claims()[0].source
        else {
            panic!("{:?}", pod.claims());
        };
        let claim = view.dra.claims.iter().find(|c| c.name == *made).unwrap();
        let allocation = claim.allocation.as_ref().expect("allocated");
        assert_eq!(&*allocation.devices[0].device.pool, node);
        assert!(
            (view.dra.slices.iter()).any(|s| s.scope == NodeScope::Node(node.into())),
            "{node} publishes its slice"
        );
    }
}

/// A provider whose templates carry slices for one group (field 3) and whose `ekscale.v1` says other slices
/// for both: the template's win where it has them, the extension's fill in where it has none (an
/// ekscale-provider from before field 3), through the client and through a loop's scale-up.
#[tokio::test]
async fn field_3_wins_and_the_extension_fills_in_where_it_is_empty() {
    // One instance type: the groups' templates differ only in their slices.
    let group = |name: &str, extra: &str| {
        format!(
            "  - name: {name}\n    instanceType: g4dn.xlarge\n    zones: [us-east-1a]\n    minSize: 0\n    \
             maxSize: 4\n    desiredSize: 0\n{extra}"
        )
    };
    let fpga = "    resourceSlices: [{driver: fpga.example.com, devices: [{name: fpga-0, attributes: {model: {string: u250}}}]}]\n";
    let head = "cluster: mixed\nregion: us-east-1\nnodeGroups:\n";
    let cloud = sim(&format!(
        "{head}{}{}",
        group("gpu", "    draDrivers: [gpu.nvidia.com]\n"),
        group("fpga", "")
    ));
    let extension = sim(&format!(
        "{head}{}{}",
        group("gpu", fpga),
        group("fpga", fpga)
    ));
    let config = serve(cloud.clone(), Some(extension)).await;

    let client = ProviderClient::new(&config).unwrap();
    client.refresh().await.unwrap();
    let drivers = |slices: Vec<ekscale::model::ResourceSlice>| -> Vec<String> {
        slices.iter().map(|s| s.driver.to_string()).collect()
    };
    let gpu = drivers(client.template_slices("gpu").await.unwrap());
    assert_eq!(gpu, ["gpu.nvidia.com"], "field 3 wins");
    let fpga = drivers(client.template_slices("fpga").await.unwrap());
    assert_eq!(fpga, ["fpga.example.com"], "the extension fills in");

    let drivers = ["gpu.nvidia.com", "fpga.example.com"];
    let cluster = cluster_with_classes(&config, cloud.clock().clone(), &drivers);
    cluster.create_pods(claiming_pods("fpga", 1, "fpga.example.com"));
    cluster.create_pods(claiming_pods("render", 1, "gpu.nvidia.com"));
    let mut once = RunOnce::new(client, acting());
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let mut ups = scale_ups(&status);
    ups.sort_unstable();
    assert_eq!(ups, [("fpga", 1), ("gpu", 1)], "{status:#?}");
}
