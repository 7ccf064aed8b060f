//! What one loop asks the provider, and what it does when an extension fails: RPCs depend on the node groups,
//! never on the pending pods; pods that differ only in labels nothing selects on are planned as one group,
//! while a label some selector reads still keeps pods apart; a failing MatchPod or price leaves scale-up
//! running. The loop runs in process against an in-process provider on the simulated EKS, over loopback.

mod common;

use common::Server;
use common::cluster::{list, pending, running, with_spec};
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::scaleup::{Expander, Strategy};
use ekscale::autoscaler::status::Status;
use ekscale::autoscaler::{ClusterSource, ClusterView, Snapshot};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::clock::Clock;
use ekscale::cloud::NodeGroupBackend;
use ekscale::cloud::Scenario;
use ekscale::cloud::SimulatedEks;
use ekscale::proto::ekscale::fargate_server::{Fargate, FargateServer};
use ekscale::proto::ekscale::node_groups_server::NodeGroupsServer;
use ekscale::proto::ekscale::*;
use ekscale::proto::externalgrpc::cloud_provider_server::CloudProviderServer;
use ekscale::provider::ProviderMetrics;
use ekscale::provider::{CloudProviderService, FargateService, NodeGroupsService};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::SystemTime;

const SCENARIO: &str = "
cluster: rpcs
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.xlarge, zones: [us-east-1a, us-east-1b], minSize: 0, maxSize: 500, desiredSize: 0}
  - {name: large, instanceType: m5.4xlarge, zones: [us-east-1a], minSize: 0, maxSize: 100, desiredSize: 0}
fargateProfiles:
  - {name: serverless, selectors: [{namespace: serverless}]}
";

const METHODS: [&str; 11] = [
    "NodeGroups",
    "ListZones",
    "DescribeNodeGroups",
    "TemplateResourceSlices",
    "NodeGroupTargetSize",
    "NodeGroupNodes",
    "NodeGroupTemplateNodeInfo",
    "NodeGroupGetOptions",
    "MatchPod",
    "PricingNodePrice",
    "PricingPodPrice",
];

/// `count` pending pods, each its own ReplicaSet and `app` label, of three shapes.
fn distinct(count: usize) -> Vec<Value> {
    const SHAPES: [(&str, &str); 3] = [("250m", "512Mi"), ("1", "2Gi"), ("2", "4Gi")];
    (0..count)
        .map(|i| {
            let (cpu, memory) = SHAPES[i % 3];
            pending(
                "default",
                &format!("p-{i}"),
                &format!("app-{i}"),
                cpu,
                memory,
            )
        })
        .collect()
}

/// `count` pods the fargate-scheduler holds, each with its own label.
fn on_fargate(count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| {
            let mut pod = pending(
                "serverless",
                &format!("f-{i}"),
                &format!("fn-{i}"),
                "500m",
                "1Gi",
            );
            pod["spec"]["schedulerName"] = json!("fargate-scheduler");
            pod
        })
        .collect()
}

async fn view(items: Vec<Value>) -> Arc<ClusterView> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.json");
    std::fs::write(&path, list(items).to_string()).unwrap();
    Snapshot::read(&path).unwrap().view().await.unwrap()
}

fn client(addr: SocketAddr) -> ProviderClient {
    ProviderClient::new(&ProviderConfig::plaintext(addr.to_string())).unwrap()
}

fn price_expander() -> Settings {
    Settings {
        expander: Expander {
            chain: vec![Strategy::Price, Strategy::LeastWaste],
            priorities: None,
        },
        ..Settings::default()
    }
}

/// Requests per method that `loop_` costs.
async fn counted(
    server: &Server,
    loop_: impl std::future::Future<Output = Status>,
) -> (Vec<u64>, Status) {
    let before: Vec<u64> = METHODS.iter().map(|m| server.requests(m)).collect();
    let status = loop_.await;
    let after = METHODS.iter().map(|m| server.requests(m));
    (after.zip(before).map(|(a, b)| a - b).collect(), status)
}

fn of(counts: &[u64], method: &str) -> u64 {
    counts[METHODS.iter().position(|m| *m == method).unwrap()]
}

#[tokio::test]
async fn a_loops_rpcs_do_not_grow_with_pending_pods() {
    let server = Server::start_with(SCENARIO, None).await;
    let now = SystemTime::now();
    let small = view([distinct(12), on_fargate(3)].concat()).await;
    let large = view([distinct(600), on_fargate(90)].concat()).await;

    let mut once = RunOnce::new(client(server.addr), price_expander());
    let (first, status) = counted(&server, async { once.run(&small, now).await.unwrap() }).await;
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    assert_eq!(status.fargate.len(), 3);
    assert!(
        status
            .fargate
            .iter()
            .all(|f| f.profile == "serverless" && f.hourly_price > 0.0)
    );
    // One NodeGroups, one ListZones, one DescribeNodeGroups and one TemplateResourceSlices, whatever the
    // groups; one template per group, which carries its slices too (field 3) at no RPC more.
    for method in [
        "NodeGroups",
        "ListZones",
        "DescribeNodeGroups",
        "TemplateResourceSlices",
    ] {
        assert_eq!(of(&first, method), 1, "{method}");
    }
    assert_eq!(of(&first, "NodeGroupTemplateNodeInfo"), 2, "one per group");
    // One MatchPod for the one shape Fargate takes; three pod demands and the stabilizer priced.
    assert_eq!(of(&first, "MatchPod"), 1);
    assert_eq!(of(&first, "PricingPodPrice"), 4);
    assert_eq!(of(&first, "PricingNodePrice"), 2);

    let mut fresh = RunOnce::new(client(server.addr), price_expander());
    let (large_first, status) =
        counted(&server, async { fresh.run(&large, now).await.unwrap() }).await;
    assert_eq!(status.fargate.len(), 90);
    let placed: usize = status.scale_up.iter().map(|s| s.pods.len()).sum();
    assert_eq!(placed, 600, "every EC2 pod is planned for");
    assert_eq!(
        large_first, first,
        "50 times the pods, the same RPCs ({METHODS:?})"
    );

    // The next loop remembers what pods of these shapes cost and what MatchPod said.
    let (second, _) = counted(&server, async { fresh.run(&large, now).await.unwrap() }).await;
    for method in [
        "NodeGroups",
        "ListZones",
        "DescribeNodeGroups",
        "TemplateResourceSlices",
    ] {
        assert_eq!(of(&second, method), 1, "{method}: once every loop");
    }
    assert_eq!(of(&second, "NodeGroupTemplateNodeInfo"), 2, "one per group");
    assert_eq!(of(&second, "MatchPod"), 0);
    assert_eq!(of(&second, "PricingPodPrice"), 0);
    assert_eq!(
        of(&second, "PricingNodePrice"),
        2,
        "node prices are asked each loop"
    );
}

#[tokio::test]
async fn without_the_price_expander_nothing_is_priced_and_no_profile_means_no_match_pod() {
    let server = Server::start_with(SCENARIO, None).await;
    let pods = view(distinct(300)).await;
    let mut once = RunOnce::new(client(server.addr), Settings::default());
    let (counts, status) = counted(&server, async {
        once.run(&pods, SystemTime::now()).await.unwrap()
    })
    .await;
    assert!(status.fargate.is_empty());
    for method in ["MatchPod", "PricingNodePrice", "PricingPodPrice"] {
        assert_eq!(of(&counts, method), 0, "{method}");
    }
}

#[tokio::test]
async fn labels_nothing_selects_collapse_but_a_selected_label_keeps_pods_apart() {
    let one_node = SCENARIO.replace(
        "maxSize: 500, desiredSize: 0",
        "maxSize: 500, desiredSize: 1",
    );
    let server = Server::start_with(&one_node, None).await;
    // One node of the general group, with room for both pending pods; on it a pod that refuses any pod
    // labelled app=db beside it.
    let nodes = common::cluster::nodes_of(server.addr, &["general"]).await;
    let name = nodes[0]["metadata"]["name"].as_str().unwrap().to_string();
    let guard = with_spec(
        running(&name, "guard", "guard", "100m", "128Mi"),
        json!({"nodeName": name, "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
    );
    let items = [
        nodes,
        vec![guard],
        vec![
            pending("default", "web", "web", "500m", "1Gi"),
            pending("default", "db", "db", "500m", "1Gi"),
        ],
    ]
    .concat();
    let view = view(items).await;
    let mut once = RunOnce::new(client(server.addr), Settings::default());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    let placed: Vec<&str> = status.placed.iter().map(|p| p.pod.as_str()).collect();
    assert_eq!(placed, ["default/web"], "{status:?}");
    let new: Vec<&str> = status.scale_up.iter().flat_map(|s| s.pods.iter()).collect();
    assert_eq!(
        new,
        ["default/db"],
        "the guard's anti-affinity reads app: db stays apart from web"
    );
}

#[tokio::test]
async fn a_price_that_cannot_be_given_skips_the_price_expander_not_the_loop() {
    let server = Server::start_with(SCENARIO, None).await;
    // 64 CPUs fit no group: the provider cannot price such a pod.
    let items = [
        distinct(9),
        vec![pending("default", "huge", "huge", "64", "1Gi")],
    ]
    .concat();
    let view = view(items).await;
    let mut once = RunOnce::new(client(server.addr), price_expander());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(
        status
            .errors
            .iter()
            .any(|e| e.contains("price expander is skipped")),
        "{:?}",
        status.errors
    );
    let planned: usize = status.scale_up.iter().map(|s| s.pods.len()).sum();
    assert_eq!(planned, 9);
}

/// A Fargate service whose ListProfiles works and whose MatchPod always fails.
struct BrokenMatch(FargateService);

#[tonic::async_trait]
impl Fargate for BrokenMatch {
    async fn list_profiles(
        &self,
        request: tonic::Request<ListProfilesRequest>,
    ) -> Result<tonic::Response<ListProfilesResponse>, tonic::Status> {
        self.0.list_profiles(request).await
    }

    async fn match_pod(
        &self,
        _: tonic::Request<MatchPodRequest>,
    ) -> Result<tonic::Response<MatchPodResponse>, tonic::Status> {
        Err(tonic::Status::internal("pricing table unavailable"))
    }
}

#[tokio::test]
async fn a_failing_match_pod_reports_fargate_pods_unpriced_and_scales_up_the_rest() {
    ekscale::tls::install_crypto_provider();
    let sim = Arc::new(SimulatedEks::new(
        Scenario::parse(SCENARIO).unwrap(),
        Clock::manual(),
    ));
    let metrics = Arc::new(ProviderMetrics::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = tonic::transport::Server::builder()
        .add_service(CloudProviderServer::new(CloudProviderService::new(
            sim.clone(),
            metrics.clone(),
        )))
        .add_service(FargateServer::new(BrokenMatch(FargateService::new(
            sim.clone(),
            metrics.clone(),
        ))))
        .add_service(NodeGroupsServer::new(NodeGroupsService::new(sim, metrics)));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = tokio::spawn(router.serve_with_incoming_shutdown(
        tonic::transport::server::TcpIncoming::from(listener),
        async {
            let _ = stopped.await;
        },
    ));

    let view = view([distinct(6), on_fargate(4)].concat()).await;
    let mut once = RunOnce::new(client(addr), Settings::default());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert_eq!(status.fargate.len(), 4);
    for pod in &status.fargate {
        assert_eq!(
            pod.profile, "serverless",
            "the profile is known without MatchPod"
        );
        assert_eq!(pod.hourly_price, 0.0);
        let note = pod.note.as_deref().unwrap_or_default();
        assert!(
            note.contains("unpriced") && note.contains("pricing table unavailable"),
            "{note}"
        );
    }
    assert!(
        status.errors.iter().any(|e| e.starts_with("Fargate:")),
        "{:?}",
        status.errors
    );
    let planned: usize = status.scale_up.iter().map(|s| s.pods.len()).sum();
    assert_eq!(planned, 6, "scale-up went on");
    stop.send(()).unwrap();
    served.await.unwrap().unwrap();
}

/// A zero-or-max group is grown to its max in one all-or-nothing increase (AtomicIncreaseSize, as upstream's
/// executor asks for it): when the cloud cannot launch all of it, nothing is asked of it and the group is
/// backed off; once it can, the whole group comes at once.
#[tokio::test]
async fn a_zero_or_max_group_is_grown_whole_or_not_at_all() {
    const GANG: &str = "
cluster: gangs
region: us-east-1
nodeGroups:
  - {name: train, instanceType: m5.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 0,
     availableCapacity: 3, options: {zeroOrMaxNodeScaling: true}}
";
    let server = Server::start_with(GANG, None).await;
    // Two pods of 3 CPUs: two nodes would do, the group goes to its max of four.
    let pods = view(vec![
        pending("default", "worker-0", "worker", "3", "4Gi"),
        pending("default", "worker-1", "worker", "3", "4Gi"),
    ])
    .await;
    let act = || Settings {
        act: true,
        ..Settings::default()
    };

    let mut once = RunOnce::new(client(server.addr), act());
    let status = once.run(&pods, SystemTime::now()).await.unwrap();
    assert_eq!(status.scale_up.len(), 1, "{:?}", status.scale_up);
    assert_eq!(status.scale_up[0].delta, 4);
    let error = status.scale_up[0].error.as_deref().unwrap_or_default();
    assert!(
        error.starts_with("AtomicIncreaseSize: ResourceExhausted")
            && error.contains("can launch 3 more instance(s) now"),
        "{error}"
    );
    assert_eq!(server.requests("AtomicIncreaseSize"), 1);
    assert_eq!(server.requests("NodeGroupIncreaseSize"), 0);
    assert_eq!(server.sim().target_size("train").unwrap(), 0);
    assert!(
        server.sim().instances("train").unwrap().is_empty(),
        "nothing half-built"
    );
    // Backed off: the next loop does not ask again.
    let status = once.run(&pods, SystemTime::now()).await.unwrap();
    assert!(
        status
            .scale_up
            .iter()
            .all(|s| s.node_group != "train" || s.error.is_some())
    );
    assert_eq!(server.requests("AtomicIncreaseSize"), 1);

    // Capacity frees: all four at once, none a placeholder.
    server
        .sim()
        .set_available_capacity("train", Some(8))
        .unwrap();
    let mut fresh = RunOnce::new(client(server.addr), act());
    let status = fresh.run(&pods, SystemTime::now()).await.unwrap();
    assert_eq!(status.scale_up[0].error, None);
    let instances = server.sim().instances("train").unwrap();
    assert_eq!(instances.len(), 4);
    assert!(instances.iter().all(|i| !i.placeholder));

    // The provider sets the increase back (as AWS does when not all of it launched in time): the group is
    // backed off as after a failed scale-up, not asked again at once.
    let ids: Vec<String> = instances.into_iter().map(|i| i.id).collect();
    server.sim().delete_instances("train", &ids).await.unwrap();
    let status = fresh.run(&pods, SystemTime::now()).await.unwrap();
    assert_eq!(server.requests("AtomicIncreaseSize"), 2, "not asked again");
    assert!(status.scale_up.is_empty(), "{:?}", status.scale_up);
    let train = status.node_groups.iter().find(|g| g.id == "train").unwrap();
    let why = train.skipped.as_deref().unwrap_or_default();
    assert!(
        why.contains("all-or-nothing increase to 4 was set back"),
        "{train:?}"
    );
}
