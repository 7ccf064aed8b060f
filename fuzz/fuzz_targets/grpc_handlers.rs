//! The provider's gRPC handlers over the built-in simulated EKS, fed a sequence of calls decoded from the
//! input: `[method][length][message bytes]...`. Each message is decoded as that method's request (any
//! wire generation's fields) and handled; a handler may refuse it with a status but must never panic, and
//! later calls see whatever state earlier ones left.
#![no_main]

use ekscale::clock::Clock;
use ekscale::cloud::SimulatedEks;
use ekscale::cloud::{BUILT_IN_SCENARIO, Scenario};
use ekscale::proto::ekscale::fargate_server::Fargate;
use ekscale::proto::ekscale::node_groups_server::NodeGroups;
use ekscale::proto::externalgrpc::cloud_provider_server::CloudProvider;
use ekscale::provider::ProviderMetrics;
use ekscale::provider::{CloudProviderService, FargateService, GroupLocks, NodeGroupsService};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use std::sync::{Arc, LazyLock};
use tonic::Request;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
});

/// Decodes `bytes` as `$request` and calls `$method` with it; undecodable bytes are skipped, as tonic
/// would refuse them before any handler ran.
macro_rules! call {
    ($service:expr, $method:ident, $request:ty, $bytes:expr) => {
        if let Ok(request) = <$request>::decode($bytes) {
            let _ = $service.$method(Request::new(request)).await;
        }
    };
}

fuzz_target!(|data: &[u8]| {
    use ekscale::proto::ekscale::*;
    use ekscale::proto::externalgrpc::*;
    let backend = Arc::new(SimulatedEks::new(
        Scenario::parse(BUILT_IN_SCENARIO).unwrap(),
        Clock::manual(),
    ));
    let metrics = Arc::new(ProviderMetrics::default());
    // Size changes through either service are serialized as `serve` serializes them.
    let locks = Arc::new(GroupLocks::default());
    let cloud = CloudProviderService::with_locks(backend.clone(), metrics.clone(), locks.clone());
    let node_groups = NodeGroupsService::with_locks(backend.clone(), metrics.clone(), locks);
    let fargate = FargateService::new(backend.clone(), metrics);
    RUNTIME.block_on(async {
        let mut rest = data;
        while let [method, len, tail @ ..] = rest {
            let len = (*len as usize).min(tail.len());
            let (bytes, next) = tail.split_at(len);
            rest = next;
            match method % 22 {
                0 => call!(cloud, node_groups, NodeGroupsRequest, bytes),
                1 => call!(cloud, node_group_for_node, NodeGroupForNodeRequest, bytes),
                2 => call!(cloud, pricing_node_price, PricingNodePriceRequest, bytes),
                3 => call!(cloud, pricing_pod_price, PricingPodPriceRequest, bytes),
                4 => call!(cloud, gpu_label, GpuLabelRequest, bytes),
                5 => call!(
                    cloud,
                    get_available_gpu_types,
                    GetAvailableGpuTypesRequest,
                    bytes
                ),
                6 => call!(cloud, cleanup, CleanupRequest, bytes),
                7 => call!(cloud, refresh, RefreshRequest, bytes),
                8 => call!(
                    cloud,
                    node_group_target_size,
                    NodeGroupTargetSizeRequest,
                    bytes
                ),
                9 => call!(
                    cloud,
                    node_group_increase_size,
                    NodeGroupIncreaseSizeRequest,
                    bytes
                ),
                10 => call!(
                    cloud,
                    node_group_delete_nodes,
                    NodeGroupDeleteNodesRequest,
                    bytes
                ),
                11 => call!(
                    cloud,
                    node_group_decrease_target_size,
                    NodeGroupDecreaseTargetSizeRequest,
                    bytes
                ),
                12 => call!(cloud, node_group_nodes, NodeGroupNodesRequest, bytes),
                13 => call!(
                    cloud,
                    node_group_template_node_info,
                    NodeGroupTemplateNodeInfoRequest,
                    bytes
                ),
                14 => call!(
                    cloud,
                    node_group_get_options,
                    NodeGroupAutoscalingOptionsRequest,
                    bytes
                ),
                15 => call!(fargate, list_profiles, ListProfilesRequest, bytes),
                16 => call!(fargate, match_pod, MatchPodRequest, bytes),
                17 => backend
                    .clock()
                    .advance(std::time::Duration::from_secs(u64::from(len as u8))),
                18 => call!(node_groups, list_zones, ListZonesRequest, bytes),
                19 => call!(
                    node_groups,
                    atomic_increase_size,
                    AtomicIncreaseSizeRequest,
                    bytes
                ),
                20 => call!(
                    node_groups,
                    describe_node_groups,
                    DescribeNodeGroupsRequest,
                    bytes
                ),
                21 => call!(
                    node_groups,
                    template_resource_slices,
                    TemplateResourceSlicesRequest,
                    bytes
                ),
                _ => {}
            }
        }
    });
    // Whatever the calls, the bookkeeping holds.
    for group in ekscale::cloud::NodeGroupBackend::node_groups(&*backend) {
        let target = ekscale::cloud::NodeGroupBackend::target_size(&*backend, &group.id).unwrap();
        assert!(
            (group.min_size..=group.max_size).contains(&target),
            "{}: target {target} outside [{}, {}]",
            group.id,
            group.min_size,
            group.max_size
        );
    }
});
