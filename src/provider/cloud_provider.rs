//! The `CloudProvider` service: cluster-autoscaler's externalgrpc protocol over a [`NodeGroupBackend`].
//!
//! Every request is validated whole before anything changes, with a precise status code for each rule
//! of docs/externalgrpc.md §5. Size changes of one node group are serialized; reads answer from memory.

use super::metrics::ProviderMetrics;
use super::observe::observe;
use super::options;
use super::sizes::{self, GroupLocks, Increase, status};
use super::template_info;
use crate::cloud::{InstanceState, NodeGroupBackend, NodeGroupSpec, gpu_types};
use crate::cloud::{PriceError, SCHEDULER_NAME, assess, node_price_per_hour, pod_price_per_hour};
use crate::k8s;
use crate::proto::externalgrpc::cloud_provider_server::CloudProvider;
use crate::proto::externalgrpc::instance_status::InstanceState as WireState;
use crate::proto::externalgrpc::*;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct CloudProviderService {
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
    locks: Arc<GroupLocks>,
}

impl CloudProviderService {
    pub fn new(backend: Arc<dyn NodeGroupBackend>, metrics: Arc<ProviderMetrics>) -> Self {
        Self::with_locks(backend, metrics, Arc::default())
    }

    /// A service whose size changes are serialized with those of the other services holding `locks`.
    pub fn with_locks(
        backend: Arc<dyn NodeGroupBackend>,
        metrics: Arc<ProviderMetrics>,
        locks: Arc<GroupLocks>,
    ) -> Self {
        CloudProviderService {
            backend,
            metrics,
            locks,
        }
    }

    async fn observe<T>(
        &self,
        method: &'static str,
        rpc: impl Future<Output = Result<T, Status>>,
    ) -> Result<Response<T>, Status> {
        observe(&self.metrics, method, rpc).await
    }

    fn group(&self, id: &str) -> Result<Arc<NodeGroupSpec>, Status> {
        sizes::group(self.backend.as_ref(), id)
    }

    async fn decrease_target_size(&self, id: &str, delta: i32) -> Result<(), Status> {
        let group = self.group(id)?;
        if delta >= 0 {
            return Err(Status::invalid_argument(format!(
                "size decrease must be negative, got delta {delta}"
            )));
        }
        let _serialized = self.locks.lock(id).await;
        let target = self.backend.target_size(id).map_err(status)?;
        let existing = self
            .backend
            .instances(id)
            .map_err(status)?
            .iter()
            .filter(|i| !i.placeholder && i.state != InstanceState::Deleting)
            .count() as i64;
        let desired = i64::from(target) + i64::from(delta);
        if desired < existing {
            return Err(Status::failed_precondition(format!(
                "attempt to delete existing nodes targetSize:{target} delta:{delta} existingNodes:{existing}"
            )));
        }
        if desired < i64::from(group.min_size) {
            return Err(Status::failed_precondition(format!(
                "size decrease too large - desired:{desired} min:{}",
                group.min_size
            )));
        }
        self.backend
            .set_target_size(id, desired as i32)
            .await
            .map_err(status)?;
        tracing::info!(
            node_group = id,
            delta,
            from = target,
            to = desired,
            "decreased target size"
        );
        Ok(())
    }

    async fn delete_nodes(&self, id: &str, nodes: &[ExternalGrpcNode]) -> Result<(), Status> {
        let group = self.group(id)?;
        // Check every node before deleting any.
        let mut wanted = Vec::with_capacity(nodes.len());
        let mut seen = HashSet::new();
        for node in nodes {
            let instance = &node.provider_id;
            check_provider_id(node)?;
            match self.backend.node_group_of(instance) {
                None => {
                    return Err(Status::not_found(format!(
                        "node {:?} ({instance}) doesn't belong to a known node group",
                        node.name
                    )));
                }
                Some(other) if other != id => {
                    return Err(Status::failed_precondition(format!(
                        "node {:?} ({instance}) belongs to node group {other:?}, not {id:?}",
                        node.name
                    )));
                }
                Some(_) => {}
            }
            if seen.insert(instance.as_str()) {
                wanted.push(instance.clone());
            }
        }
        let _serialized = self.locks.lock(id).await;
        let instances: HashMap<String, _> = self
            .backend
            .instances(id)
            .map_err(status)?
            .into_iter()
            .map(|i| (i.id.clone(), i))
            .collect();
        // One that left the group since it was checked (a refresh in between) is refused, not skipped: the
        // caller asked for a deletion that did not happen.
        if let Some(gone) = wanted.iter().find(|w| !instances.contains_key(*w)) {
            return Err(Status::not_found(format!(
                "instance {gone} is no longer in node group {id:?}; nothing was deleted"
            )));
        }
        // Instances already being deleted are skipped: no second decrement.
        wanted.retain(|w| instances[w].state != InstanceState::Deleting);
        let real = wanted.iter().filter(|w| !instances[*w].placeholder).count() as i64;
        let target = self.backend.target_size(id).map_err(status)?;
        // Placeholders are capacity that never existed: cancelling them is always allowed.
        if real > 0 && i64::from(target) - real < i64::from(group.min_size) {
            return Err(Status::failed_precondition(format!(
                "min size reached, nodes will not be deleted: targetSize:{target} deleting:{real} min:{}",
                group.min_size
            )));
        }
        if wanted.is_empty() {
            return Ok(());
        }
        self.backend
            .delete_instances(id, &wanted)
            .await
            .map_err(status)?;
        tracing::info!(node_group = id, instances = ?wanted, "deleted nodes");
        Ok(())
    }

    fn node_group_for_node(
        &self,
        node: Option<ExternalGrpcNode>,
    ) -> Result<NodeGroupForNodeResponse, Status> {
        let node = node.ok_or_else(|| Status::invalid_argument("node is required"))?;
        // Fargate nodes, control-plane nodes and anything else we do not manage: id "" and no error.
        let group = if is_fargate(&node) {
            None
        } else {
            self.backend
                .node_group_of(&node.provider_id)
                .and_then(|id| self.backend.node_group(&id))
        };
        Ok(NodeGroupForNodeResponse {
            node_group: Some(group.map_or_else(NodeGroup::default, |g| wire_group(&g))),
        })
    }

    fn node_price(
        &self,
        request: PricingNodePriceRequest,
    ) -> Result<PricingNodePriceResponse, Status> {
        let node = request
            .node
            .ok_or_else(|| Status::invalid_argument("node is required"))?;
        let seconds = period_seconds(
            request.start_timestamp.or(request.start_time),
            request.end_timestamp.or(request.end_time),
        )?;
        let per_hour =
            node_price_per_hour(&*self.backend, &node.name, &node.provider_id, &node.labels)
                .map_err(price_status)?;
        Ok(PricingNodePriceResponse {
            price: per_hour * seconds / 3600.0,
        })
    }

    fn pod_price(
        &self,
        request: PricingPodPriceRequest,
    ) -> Result<PricingPodPriceResponse, Status> {
        let bytes = if request.pod_bytes.is_empty() {
            &request.pod
        } else {
            &request.pod_bytes
        };
        if bytes.is_empty() {
            return Err(Status::invalid_argument(
                "pod is required (pod_bytes, or pod for older clients)",
            ));
        }
        let seconds = period_seconds(
            request.start_timestamp.or(request.start_time),
            request.end_timestamp.or(request.end_time),
        )?;
        let pod = k8s::PodFacts::from_bytes(bytes)
            .map_err(|e| Status::invalid_argument(e.to_string()))?;
        // A pod Fargate would run costs what Fargate bills for its rounded size.
        let rates = self.backend.fargate_rates();
        let assessment = assess(&self.backend.fargate_profiles(), &pod, &rates);
        let fargate_bound = assessment.taken() || pod.scheduler_name == SCHEDULER_NAME;
        if fargate_bound
            && assessment.incompatibilities.is_empty()
            && let Some(size) = assessment.size
        {
            return Ok(PricingPodPriceResponse {
                price: size.price_for(&rates, seconds),
            });
        }
        let per_hour = pod_price_per_hour(&*self.backend, &pod.demand).map_err(price_status)?;
        Ok(PricingPodPriceResponse {
            price: per_hour * seconds / 3600.0,
        })
    }

    fn template(&self, id: &str) -> Result<NodeGroupTemplateNodeInfoResponse, Status> {
        template_info::template_node_info(&*self.group(id)?)
    }
}

fn wire_group(group: &NodeGroupSpec) -> NodeGroup {
    NodeGroup {
        id: group.id.clone(),
        min_size: group.min_size,
        max_size: group.max_size,
        debug: group.debug.clone(),
    }
}

fn wire_instance(instance: crate::cloud::Instance) -> Instance {
    let state = match instance.state {
        InstanceState::Running => WireState::InstanceRunning,
        InstanceState::Creating => WireState::InstanceCreating,
        InstanceState::Deleting => WireState::InstanceDeleting,
    };
    Instance {
        id: instance.id,
        status: Some(InstanceStatus {
            instance_state: state as i32,
            error_info: instance.error.map(|e| InstanceErrorInfo {
                error_code: e.code,
                error_message: e.message,
                instance_error_class: e.class as i32,
            }),
        }),
    }
}

/// `aws:///<zone>/<instance>` is the only providerID an EKS node carries.
fn check_provider_id(node: &ExternalGrpcNode) -> Result<(), Status> {
    let id = &node.provider_id;
    let well_formed = id
        .strip_prefix("aws:///")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(zone, instance)| !zone.is_empty() && !instance.is_empty());
    if well_formed {
        Ok(())
    } else {
        Err(Status::invalid_argument(format!(
            "node {:?}: wrong providerID {id:?}: expected format aws:///<zone>/<instance-id>",
            node.name
        )))
    }
}

fn is_fargate(node: &ExternalGrpcNode) -> bool {
    node.labels
        .get(crate::model::FARGATE_COMPUTE_LABEL)
        .is_some_and(|v| v == "fargate")
        || node
            .provider_id
            .rsplit('/')
            .next()
            .is_some_and(|last| last.starts_with("fargate-"))
}

/// The length of a pricing period in seconds; both ends are required and must be in order.
fn period_seconds(
    start: Option<prost_types::Timestamp>,
    end: Option<prost_types::Timestamp>,
) -> Result<f64, Status> {
    let (Some(start), Some(end)) = (start, end) else {
        return Err(Status::invalid_argument("start and end time are required"));
    };
    let seconds = |t: prost_types::Timestamp| t.seconds as f64 + f64::from(t.nanos) / 1e9;
    let span = seconds(end) - seconds(start);
    if span < 0.0 {
        return Err(Status::invalid_argument("end time is before start time"));
    }
    Ok(span)
}

fn price_status(error: PriceError) -> Status {
    match error {
        PriceError::UnknownNode(_) => Status::not_found(error.to_string()),
        PriceError::NoPrice(_) => Status::unimplemented(error.to_string()),
        PriceError::NothingFits(_) => Status::failed_precondition(error.to_string()),
    }
}

#[tonic::async_trait]
impl CloudProvider for CloudProviderService {
    async fn node_groups(
        &self,
        _: Request<NodeGroupsRequest>,
    ) -> Result<Response<NodeGroupsResponse>, Status> {
        self.observe("NodeGroups", async {
            let node_groups = self
                .backend
                .node_groups()
                .iter()
                .map(|g| wire_group(g))
                .collect();
            Ok(NodeGroupsResponse { node_groups })
        })
        .await
    }

    async fn node_group_for_node(
        &self,
        request: Request<NodeGroupForNodeRequest>,
    ) -> Result<Response<NodeGroupForNodeResponse>, Status> {
        self.observe("NodeGroupForNode", async {
            self.node_group_for_node(request.into_inner().node)
        })
        .await
    }

    async fn pricing_node_price(
        &self,
        request: Request<PricingNodePriceRequest>,
    ) -> Result<Response<PricingNodePriceResponse>, Status> {
        self.observe("PricingNodePrice", async {
            self.node_price(request.into_inner())
        })
        .await
    }

    async fn pricing_pod_price(
        &self,
        request: Request<PricingPodPriceRequest>,
    ) -> Result<Response<PricingPodPriceResponse>, Status> {
        self.observe("PricingPodPrice", async {
            self.pod_price(request.into_inner())
        })
        .await
    }

    async fn gpu_label(
        &self,
        _: Request<GpuLabelRequest>,
    ) -> Result<Response<GpuLabelResponse>, Status> {
        self.observe("GPULabel", async {
            Ok(GpuLabelResponse {
                label: crate::model::GPU_LABEL.into(),
            })
        })
        .await
    }

    async fn get_available_gpu_types(
        &self,
        _: Request<GetAvailableGpuTypesRequest>,
    ) -> Result<Response<GetAvailableGpuTypesResponse>, Status> {
        self.observe("GetAvailableGPUTypes", async {
            let gpu_types = gpu_types()
                .into_iter()
                .map(|t| (t.to_string(), prost_types::Any::default()))
                .collect();
            Ok(GetAvailableGpuTypesResponse { gpu_types })
        })
        .await
    }

    async fn cleanup(
        &self,
        _: Request<CleanupRequest>,
    ) -> Result<Response<CleanupResponse>, Status> {
        self.observe("Cleanup", async { Ok(CleanupResponse {}) })
            .await
    }

    async fn refresh(
        &self,
        _: Request<RefreshRequest>,
    ) -> Result<Response<RefreshResponse>, Status> {
        self.observe("Refresh", async {
            self.backend.refresh().await.map_err(status)?;
            Ok(RefreshResponse {})
        })
        .await
    }

    async fn node_group_target_size(
        &self,
        request: Request<NodeGroupTargetSizeRequest>,
    ) -> Result<Response<NodeGroupTargetSizeResponse>, Status> {
        self.observe("NodeGroupTargetSize", async {
            let id = &request.get_ref().id;
            self.group(id)?;
            Ok(NodeGroupTargetSizeResponse {
                target_size: self.backend.target_size(id).map_err(status)?,
            })
        })
        .await
    }

    async fn node_group_increase_size(
        &self,
        request: Request<NodeGroupIncreaseSizeRequest>,
    ) -> Result<Response<NodeGroupIncreaseSizeResponse>, Status> {
        self.observe("NodeGroupIncreaseSize", async {
            let request = request.into_inner();
            let (backend, locks) = (self.backend.as_ref(), &self.locks);
            sizes::increase(backend, locks, &request.id, request.delta, Increase::Plain).await?;
            Ok(NodeGroupIncreaseSizeResponse {})
        })
        .await
    }

    async fn node_group_delete_nodes(
        &self,
        request: Request<NodeGroupDeleteNodesRequest>,
    ) -> Result<Response<NodeGroupDeleteNodesResponse>, Status> {
        self.observe("NodeGroupDeleteNodes", async {
            let request = request.into_inner();
            self.delete_nodes(&request.id, &request.nodes).await?;
            Ok(NodeGroupDeleteNodesResponse {})
        })
        .await
    }

    async fn node_group_decrease_target_size(
        &self,
        request: Request<NodeGroupDecreaseTargetSizeRequest>,
    ) -> Result<Response<NodeGroupDecreaseTargetSizeResponse>, Status> {
        self.observe("NodeGroupDecreaseTargetSize", async {
            let request = request.into_inner();
            self.decrease_target_size(&request.id, request.delta)
                .await?;
            Ok(NodeGroupDecreaseTargetSizeResponse {})
        })
        .await
    }

    async fn node_group_nodes(
        &self,
        request: Request<NodeGroupNodesRequest>,
    ) -> Result<Response<NodeGroupNodesResponse>, Status> {
        self.observe("NodeGroupNodes", async {
            let id = &request.get_ref().id;
            self.group(id)?;
            let instances = self
                .backend
                .instances(id)
                .map_err(status)?
                .into_iter()
                .map(wire_instance)
                .collect();
            Ok(NodeGroupNodesResponse { instances })
        })
        .await
    }

    async fn node_group_template_node_info(
        &self,
        request: Request<NodeGroupTemplateNodeInfoRequest>,
    ) -> Result<Response<NodeGroupTemplateNodeInfoResponse>, Status> {
        self.observe("NodeGroupTemplateNodeInfo", async {
            self.template(&request.get_ref().id)
        })
        .await
    }

    async fn node_group_get_options(
        &self,
        request: Request<NodeGroupAutoscalingOptionsRequest>,
    ) -> Result<Response<NodeGroupAutoscalingOptionsResponse>, Status> {
        self.observe("NodeGroupGetOptions", async {
            let request = request.get_ref();
            let group = self.group(&request.id)?;
            Ok(NodeGroupAutoscalingOptionsResponse {
                node_group_autoscaling_options: options::answer(
                    group.options.as_ref(),
                    request.defaults.as_ref(),
                ),
            })
        })
        .await
    }
}
