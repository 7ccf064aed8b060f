//! §5 cases 33 and 34: while a size change is stuck in the cloud, every hot RPC still answers inside
//! cluster-autoscaler's 5 s deadline, and further changes to that group wait their turn, whichever service
//! asks for them (IncreaseSize, or `ekscale.v1.NodeGroups`' AtomicIncreaseSize).

mod common;

use async_trait::async_trait;
use common::{SCENARIO, Server};
use ekscale::clock::Clock;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::cloud::{CloudError, FargateProfile, Instance, NodeGroupBackend, NodeGroupSpec};
use ekscale::proto::ekscale::node_groups_client::NodeGroupsClient;
use ekscale::proto::ekscale::{AtomicIncreaseSizeRequest, DescribeNodeGroupsRequest};
use ekscale::proto::externalgrpc::*;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Notify, Semaphore};

/// The simulated EKS, except that size changes wait at a gate the test opens.
struct Gated {
    sim: Arc<SimulatedEks>,
    gate: Semaphore,
    entered: Notify,
    in_flight: AtomicUsize,
}

#[async_trait]
impl NodeGroupBackend for Gated {
    fn name(&self) -> &'static str {
        "gated"
    }
    async fn refresh(&self) -> Result<(), CloudError> {
        self.sim.refresh().await
    }
    fn node_groups(&self) -> Vec<Arc<NodeGroupSpec>> {
        self.sim.node_groups()
    }
    fn node_group(&self, id: &str) -> Option<Arc<NodeGroupSpec>> {
        self.sim.node_group(id)
    }
    fn node_group_of(&self, instance_id: &str) -> Option<String> {
        self.sim.node_group_of(instance_id)
    }
    fn target_size(&self, id: &str) -> Result<i32, CloudError> {
        self.sim.target_size(id)
    }
    fn instances(&self, id: &str) -> Result<Vec<Instance>, CloudError> {
        self.sim.instances(id)
    }
    async fn set_target_size(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.through_the_gate(self.sim.set_target_size(id, target))
            .await
    }
    async fn atomic_increase(&self, id: &str, target: i32) -> Result<(), CloudError> {
        self.through_the_gate(self.sim.atomic_increase(id, target))
            .await
    }
    async fn delete_instances(&self, id: &str, instance_ids: &[String]) -> Result<(), CloudError> {
        self.sim.delete_instances(id, instance_ids).await
    }
    fn fargate_profiles(&self) -> Vec<FargateProfile> {
        self.sim.fargate_profiles()
    }
    fn price_of_instance_type(&self, instance_type: &str) -> Option<f64> {
        self.sim.price_of_instance_type(instance_type)
    }
}

impl Gated {
    /// Runs a size change once the test lets one through, asserting that none overlaps another.
    async fn through_the_gate(
        &self,
        change: impl Future<Output = Result<(), CloudError>>,
    ) -> Result<(), CloudError> {
        assert_eq!(
            self.in_flight.fetch_add(1, Ordering::SeqCst),
            0,
            "size changes of a group overlap"
        );
        self.entered.notify_one();
        let _pass = self.gate.acquire().await.unwrap();
        let result = change.await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

fn with_deadline<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.set_timeout(Duration::from_secs(5));
    request
}

#[tokio::test]
async fn case_33_34_hot_rpcs_answer_while_a_size_change_is_in_flight() {
    let sim = Arc::new(SimulatedEks::new(
        Scenario::parse(SCENARIO).unwrap(),
        Clock::manual(),
    ));
    let gated = Arc::new(Gated {
        sim: sim.clone(),
        gate: Semaphore::new(0),
        entered: Notify::new(),
        in_flight: 0.into(),
    });
    let server = Server::serve(gated.clone(), Some(sim), None).await;

    let mut first = server.client().await;
    let stuck = tokio::spawn(async move {
        first
            .node_group_increase_size(NodeGroupIncreaseSizeRequest {
                id: "web".into(),
                delta: 1,
            })
            .await
    });
    gated.entered.notified().await;
    let mut second = NodeGroupsClient::new(server.channel().await);
    let queued = tokio::spawn(async move {
        second
            .atomic_increase_size(AtomicIncreaseSizeRequest {
                id: "web".into(),
                delta: 1,
            })
            .await
    });

    // Every read answers, under a 5 s deadline, while the change is held in the cloud.
    let mut client = server.client().await;
    client
        .refresh(with_deadline(RefreshRequest {}))
        .await
        .unwrap();
    client
        .node_groups(with_deadline(NodeGroupsRequest {}))
        .await
        .unwrap();
    let size = client
        .node_group_target_size(with_deadline(NodeGroupTargetSizeRequest {
            id: "web".into(),
        }))
        .await;
    assert_eq!(
        size.unwrap().into_inner().target_size,
        2,
        "not changed until the cloud accepts it"
    );
    let nodes = client
        .node_group_nodes(with_deadline(NodeGroupNodesRequest { id: "web".into() }))
        .await
        .unwrap();
    let instance = nodes.into_inner().instances[0].id.clone();
    let node = ExternalGrpcNode {
        provider_id: instance,
        ..Default::default()
    };
    let group = client
        .node_group_for_node(with_deadline(NodeGroupForNodeRequest { node: Some(node) }))
        .await;
    assert_eq!(group.unwrap().into_inner().node_group.unwrap().id, "web");
    let options = NodeGroupAutoscalingOptionsRequest {
        id: "web".into(),
        defaults: None,
    };
    client
        .node_group_get_options(with_deadline(options))
        .await
        .unwrap();
    let template = NodeGroupTemplateNodeInfoRequest { id: "web".into() };
    client
        .node_group_template_node_info(with_deadline(template))
        .await
        .unwrap();
    let mut extension = NodeGroupsClient::new(server.channel().await);
    let described = extension
        .describe_node_groups(with_deadline(DescribeNodeGroupsRequest {}))
        .await
        .unwrap()
        .into_inner()
        .node_groups;
    let web = described.iter().find(|g| g.id == "web").unwrap();
    assert_eq!(
        (web.status.as_str(), web.image.as_str()),
        ("ACTIVE", "ami-eks-amd64-1")
    );
    // Another group is not held up either.
    let other = NodeGroupIncreaseSizeRequest {
        id: "batch".into(),
        delta: 1,
    };
    tokio::time::timeout(Duration::from_secs(5), async {
        // `batch` goes through the same gate: let exactly that one through after web's change is queued.
        assert!(
            !stuck.is_finished() && !queued.is_finished(),
            "web's changes wait for the cloud"
        );
        gated.gate.add_permits(1);
        stuck.await.unwrap().unwrap();
        gated.entered.notified().await;
        gated.gate.add_permits(1);
        queued.await.unwrap().unwrap();
    })
    .await
    .expect("both changes finish once the cloud answers");
    assert_eq!(
        gated.sim.target_size("web").unwrap(),
        4,
        "both increases applied, one after the other"
    );
    gated.gate.add_permits(1);
    client
        .node_group_increase_size(with_deadline(other))
        .await
        .unwrap();
    assert_eq!(gated.sim.target_size("batch").unwrap(), 2);
}
