//! The companion's provider client against a served provider: cluster-autoscaler's caching rules, counted
//! on the provider's side, the Fargate extension when it is there and when it is not, and deadlines.

mod common;

use common::{Server, pod};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::proto::externalgrpc::NodeGroupAutoscalingOptions;
use prost::Message;
use std::time::Duration;

fn client(server: &Server) -> ProviderClient {
    ProviderClient::new(&ProviderConfig::plaintext(server.addr.to_string())).unwrap()
}

#[tokio::test]
async fn node_groups_node_group_for_node_and_templates_are_asked_once_per_loop() {
    let server = Server::start().await;
    let client = client(&server);
    for _ in 0..2 {
        client.refresh().await.unwrap();
        let web = client.nodes("web").await.unwrap()[0].id.clone();
        for _ in 0..3 {
            assert_eq!(client.node_groups().await.unwrap().len(), 5);
            let group = client
                .node_group_for_node("node-1", &web)
                .await
                .unwrap()
                .unwrap();
            assert_eq!(group.id, "web");
            assert!(
                client
                    .node_group_for_node("fargate-ip-1", "")
                    .await
                    .unwrap()
                    .is_none()
            );
            let template = client.template("gpu").await.unwrap().unwrap();
            assert_eq!(
                template.metadata.as_ref().unwrap().labels["eks.amazonaws.com/nodegroup"],
                "gpu"
            );
        }
    }
    assert_eq!(server.requests("Refresh"), 2);
    assert_eq!(server.requests("NodeGroups"), 2, "once per loop");
    assert_eq!(
        server.requests("NodeGroupTemplateNodeInfo"),
        2,
        "once per group per loop"
    );
    // The managed node once per loop; the unmanaged one every time (it may become managed).
    assert_eq!(server.requests("NodeGroupForNode"), 2 + 6);
}

/// Each group's EKS status and image: asked once per loop, what the provider last read, an update's as it
/// starts and as it ends.
#[tokio::test]
async fn node_group_states_are_asked_once_per_loop() {
    use ekscale::model::{NODE_GROUP_IMAGE_LABEL, NodeGroupState, NodeGroupStatus};
    let server = Server::start().await;
    let client = client(&server);
    let state = |status, image: &str| NodeGroupState {
        status,
        image: Some(image.to_string()),
        capacity_rebalance: false,
        node_repair: None,
        capacity_type: Some(ekscale::model::CapacityType::OnDemand),
        reservations: Vec::new(),
    };
    client.refresh().await.unwrap();
    for _ in 0..3 {
        let states = client.node_group_states().await.unwrap().unwrap();
        assert_eq!(states.len(), 5);
        assert_eq!(
            states["web"],
            state(NodeGroupStatus::Active, "ami-eks-amd64-1")
        );
    }
    assert_eq!(server.requests("DescribeNodeGroups"), 1, "once per loop");

    server
        .sim()
        .start_update("web", "ami-0c1f2e3d4b5a69788", Duration::from_secs(60))
        .unwrap();
    client.refresh().await.unwrap();
    let states = client.node_group_states().await.unwrap().unwrap();
    let updating = state(NodeGroupStatus::Updating, "ami-0c1f2e3d4b5a69788");
    assert_eq!(states["web"], updating);
    // batch is a Spot group: its Auto Scaling group rebalances capacity, as a managed node group's does.
    let spot = NodeGroupState {
        capacity_rebalance: true,
        capacity_type: Some(ekscale::model::CapacityType::Spot),
        ..state(NodeGroupStatus::Active, "ami-eks-amd64-1")
    };
    assert_eq!(states["batch"], spot);
    // New nodes get the new image: the template the cluster registers them from says it.
    let template = client.template("web").await.unwrap().unwrap();
    let labels = &template.metadata.as_ref().unwrap().labels;
    assert_eq!(labels[NODE_GROUP_IMAGE_LABEL], "ami-0c1f2e3d4b5a69788");

    server.sim().clock().advance(Duration::from_secs(60));
    client.refresh().await.unwrap();
    let states = client.node_group_states().await.unwrap().unwrap();
    assert_eq!(
        states["web"],
        state(NodeGroupStatus::Active, "ami-0c1f2e3d4b5a69788")
    );
    assert_eq!(server.requests("DescribeNodeGroups"), 3);
}

/// A DRA group's template slices, as the provider derives them, through the client: every group's in one
/// RPC per loop, node-local to the group's template node.
#[tokio::test]
async fn template_slices_are_asked_once_per_loop_for_every_group() {
    use ekscale::model::{AttrValue, NodeScope, QualifiedName, Quantity};
    let scenario = common::SCENARIO.replace(
        "    instanceType: g4dn.xlarge\n",
        "    instanceType: g5.12xlarge\n    draDrivers: [gpu.nvidia.com]\n",
    );
    let server = Server::start_with(&scenario, None).await;
    let client = client(&server);
    for _ in 0..2 {
        client.refresh().await.unwrap();
        for _ in 0..2 {
            for group in client.node_groups().await.unwrap().iter() {
                let slices = client.template_slices(&group.id).await.unwrap();
                assert_eq!(slices.is_empty(), group.id != "gpu", "{}", group.id);
            }
        }
    }
    assert_eq!(
        server.requests("TemplateResourceSlices"),
        2,
        "once per loop"
    );

    let template = client.template("gpu").await.unwrap().unwrap();
    let node = template.metadata.as_ref().unwrap().name.clone().unwrap();
    let [slice] = client
        .template_slices("gpu")
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(slice.scope, NodeScope::Node(node.as_str().into()));
    assert_eq!(&*slice.pool.name, node);
    assert_eq!((slice.pool.generation, slice.pool.slice_count), (0, 1));
    assert_eq!(slice.devices.len(), 4);
    let nvidia = |id: &str| QualifiedName {
        domain: "gpu.nvidia.com".into(),
        id: id.into(),
    };
    let memory: Quantity = "23028Mi".parse().unwrap();
    for device in &slice.devices {
        let product = &device.attributes[&nvidia("productName")];
        assert_eq!(product, &AttrValue::Str("NVIDIA A10G".into()));
        assert_eq!(device.capacity[&nvidia("memory")], memory);
    }
    // A group the provider does not know has no template to carry slices.
    let unknown = client.template_slices("no-such-group").await.unwrap_err();
    assert_eq!(unknown.code(), Some(tonic::Code::NotFound), "{unknown}");
}

/// Asked for groups by id, the provider answers for those, in order, and NotFound names an unknown one.
#[tokio::test]
async fn template_slices_of_an_unknown_group_are_not_found() {
    use ekscale::proto::ekscale::TemplateResourceSlicesRequest;
    use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
    let server = Server::start().await;
    let mut node_groups = NodeGroupsClient::new(server.channel().await);
    let ids = |ids: &[&str]| TemplateResourceSlicesRequest {
        ids: ids.iter().map(|id| id.to_string()).collect(),
    };
    let answer = node_groups
        .template_resource_slices(ids(&["gpu", "web"]))
        .await
        .unwrap()
        .into_inner();
    let answered: Vec<&str> = answer.node_groups.iter().map(|g| g.id.as_str()).collect();
    assert_eq!(answered, ["gpu", "web"]);
    let status = node_groups
        .template_resource_slices(ids(&["web", "h100"]))
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(status.message(), r#"node group "h100" not found"#);
}

#[tokio::test]
async fn sizes_and_instances_are_never_cached() {
    let server = Server::start().await;
    let client = client(&server);
    client.refresh().await.unwrap();
    assert_eq!(client.target_size("web").await.unwrap(), 2);
    client.increase_size("web", 1).await.unwrap();
    assert_eq!(client.target_size("web").await.unwrap(), 3);
    assert_eq!(client.nodes("web").await.unwrap().len(), 3);
    let victim = client.nodes("web").await.unwrap()[0].id.clone();
    client
        .delete_nodes("web", &[(victim.clone(), victim)])
        .await
        .unwrap();
    assert_eq!(client.target_size("web").await.unwrap(), 2);
    assert_eq!(server.requests("NodeGroupTargetSize"), 3);

    let refused = client.decrease_target_size("web", -1).await.unwrap_err();
    assert_eq!(refused.code(), Some(tonic::Code::FailedPrecondition));
    assert!(
        refused.to_string().contains("NodeGroupDecreaseTargetSize"),
        "{refused}"
    );

    let options = client
        .options("batch", NodeGroupAutoscalingOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(options.scale_down_utilization_threshold, 0.3);
    assert!(
        client
            .options("web", NodeGroupAutoscalingOptions::default())
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn fargate_is_asked_when_the_provider_serves_it() {
    let server = Server::start().await;
    let client = client(&server);
    let fargate_pod = pod("serverless", &[("compute", "fargate")], "1", "8Gi").encode_to_vec();
    let answer = client.match_pod(fargate_pod).await.unwrap().unwrap();
    assert_eq!(
        (
            answer.profile.as_str(),
            answer.capacity_provisioned.as_str()
        ),
        ("serverless", "2vCPU 9GB")
    );
}

/// Any externalgrpc provider: one without the Fargate extension is asked once, then not again; one without
/// the NodeGroups extension has no zones or states to give.
#[tokio::test]
async fn a_provider_without_the_fargate_extension_is_asked_once() {
    use ekscale::cloud::NodeGroupBackend;
    use ekscale::proto::externalgrpc::cloud_provider_server::CloudProviderServer;
    use ekscale::provider::CloudProviderService;
    use std::sync::Arc;

    let sim = Server::start().await;
    let backend: Arc<dyn NodeGroupBackend> = Arc::new(ekscale::cloud::SimulatedEks::new(
        ekscale::cloud::Scenario::built_in(),
        ekscale::clock::Clock::manual(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = CloudProviderService::new(backend, sim.metrics.clone());
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(CloudProviderServer::new(service))
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
    );
    let client = ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
    let bytes = pod("serverless", &[], "1", "1Gi").encode_to_vec();
    assert!(client.match_pod(bytes.clone()).await.unwrap().is_none());
    assert!(client.match_pod(bytes).await.unwrap().is_none());
    // Nor does it serve `ekscale.v1.NodeGroups`: no zones, no states, and no error for it.
    assert!(client.zones().await.unwrap().is_none());
    assert!(client.node_group_states().await.unwrap().is_none());
    // Nor template slices through the extension: none, asked once a loop. The gpu group's nodes run NVIDIA's
    // DRA driver, and its template carries their slice (field 3) all the same.
    assert!(client.extension_template_slices().await.unwrap().is_none());
    assert!(client.all_template_slices().await.unwrap().is_none());
    let [slice] = client
        .template_slices("gpu")
        .await
        .unwrap()
        .try_into()
        .unwrap();
    assert_eq!(&*slice.driver, "gpu.nvidia.com");
    let all = client.all_template_slices().await.unwrap().unwrap();
    assert_eq!(all.keys().collect::<Vec<_>>(), ["gpu"]);
    assert_eq!(
        client.node_groups().await.unwrap().len(),
        4,
        "CloudProvider itself works"
    );
}

#[tokio::test]
async fn a_provider_that_is_down_fails_fast_and_the_client_recovers() {
    // Reserve a port, then free it: nothing listens there yet.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = ProviderConfig {
        timeout: Duration::from_secs(2),
        ..ProviderConfig::plaintext(addr.to_string())
    };
    let client = ProviderClient::new(&config).unwrap();
    let error = client.refresh().await.unwrap_err();
    assert_eq!(error.code(), Some(tonic::Code::Unavailable), "{error}");

    // The provider comes up on that address: the same client works, without reconnecting by hand.
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let backend: std::sync::Arc<dyn ekscale::cloud::NodeGroupBackend> =
        std::sync::Arc::new(ekscale::cloud::SimulatedEks::new(
            ekscale::cloud::Scenario::built_in(),
            ekscale::clock::Clock::manual(),
        ));
    let metrics = std::sync::Arc::new(ekscale::provider::ProviderMetrics::default());
    tokio::spawn(ekscale::provider::serve(
        listener,
        backend,
        metrics,
        None,
        std::future::pending(),
    ));
    client.refresh().await.unwrap();
    assert_eq!(client.node_groups().await.unwrap().len(), 4);
}

#[tokio::test]
async fn connected_opens_the_connection_before_any_call_and_a_provider_that_is_down_is_left_to_the_first()
 {
    // A listener that only accepts: the connection is made without any call.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ProviderConfig::plaintext(listener.local_addr().unwrap().to_string());
    let connecting = tokio::spawn(ProviderClient::new(&config).unwrap().connected());
    let accepted = tokio::time::timeout(Duration::from_secs(10), listener.accept()).await;
    assert!(accepted.expect("connected before any call").is_ok());
    connecting.abort();

    // Nothing listens: the client is the lazy one, and its first call says why.
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap();
    let error = client.connected().await.refresh().await.unwrap_err();
    assert_eq!(error.code(), Some(tonic::Code::Unavailable), "{error}");
}
