//! The `ekscale.v1.NodeGroups` extension service: what the externalgrpc protocol cannot say about a node
//! group. Its zones let a companion plan new nodes where the Auto Scaling group will launch them; its atomic
//! increase gives a gang of pods all its nodes or none (cluster-autoscaler's `AtomicIncreaseSize`, which
//! externalgrpc has no call for); its status and image tell a companion when EKS is replacing its nodes; its
//! template ResourceSlices let a companion scale it from zero for pods that claim DRA devices.

use super::metrics::ProviderMetrics;
use super::observe::observe;
use super::sizes::{self, GroupLocks, Increase};
use super::template_info;
use crate::cloud::NodeGroupBackend;
use crate::proto::ekscale::node_groups_server::NodeGroups;
use crate::proto::ekscale::{
    AtomicIncreaseSizeRequest, AtomicIncreaseSizeResponse, DescribeNodeGroupsRequest,
    DescribeNodeGroupsResponse, ListLeavingInstancesRequest, ListLeavingInstancesResponse,
    ListZonesRequest, ListZonesResponse, NodeGroupDescription, NodeGroupResourceSlices,
    NodeGroupZones, TemplateResourceSlicesRequest, TemplateResourceSlicesResponse,
};
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct NodeGroupsService {
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
    locks: Arc<GroupLocks>,
}

impl NodeGroupsService {
    pub fn new(backend: Arc<dyn NodeGroupBackend>, metrics: Arc<ProviderMetrics>) -> Self {
        Self::with_locks(backend, metrics, Arc::default())
    }

    /// A service whose size changes are serialized with those of the other services holding `locks`.
    pub fn with_locks(
        backend: Arc<dyn NodeGroupBackend>,
        metrics: Arc<ProviderMetrics>,
        locks: Arc<GroupLocks>,
    ) -> Self {
        NodeGroupsService {
            backend,
            metrics,
            locks,
        }
    }
}

#[tonic::async_trait]
impl NodeGroups for NodeGroupsService {
    async fn list_zones(
        &self,
        _: Request<ListZonesRequest>,
    ) -> Result<Response<ListZonesResponse>, Status> {
        observe(&self.metrics, "ListZones", async {
            let node_groups = self
                .backend
                .node_groups()
                .iter()
                .map(|g| NodeGroupZones {
                    id: g.id.clone(),
                    zones: g.zones.clone(),
                })
                .collect();
            Ok(ListZonesResponse { node_groups })
        })
        .await
    }

    async fn describe_node_groups(
        &self,
        _: Request<DescribeNodeGroupsRequest>,
    ) -> Result<Response<DescribeNodeGroupsResponse>, Status> {
        observe(&self.metrics, "DescribeNodeGroups", async {
            let node_groups = self
                .backend
                .node_groups()
                .iter()
                .map(|g| NodeGroupDescription {
                    id: g.id.clone(),
                    status: g.status.to_string(),
                    image: g.image.clone().unwrap_or_default(),
                    capacity_rebalance: g.capacity_rebalance,
                    node_repair: g.node_repair.as_ref().map(Into::into),
                    capacity_type: g.capacity_type.to_string(),
                    reservations: (self.backend.reservations(&g.id).iter())
                        .map(Into::into)
                        .collect(),
                })
                .collect();
            Ok(DescribeNodeGroupsResponse { node_groups })
        })
        .await
    }

    async fn list_leaving_instances(
        &self,
        _: Request<ListLeavingInstancesRequest>,
    ) -> Result<Response<ListLeavingInstancesResponse>, Status> {
        observe(&self.metrics, "ListLeavingInstances", async {
            let backend = self.backend.as_ref();
            let mut leaving = backend.leaving_instances();
            leaving.retain(|i| backend.node_group_of(&i.id).as_ref() == Some(&i.node_group));
            leaving.sort_by(|a, b| (&a.node_group, &a.id).cmp(&(&b.node_group, &b.id)));
            let instances = leaving.iter().map(Into::into).collect();
            Ok(ListLeavingInstancesResponse { instances })
        })
        .await
    }

    async fn template_resource_slices(
        &self,
        request: Request<TemplateResourceSlicesRequest>,
    ) -> Result<Response<TemplateResourceSlicesResponse>, Status> {
        observe(&self.metrics, "TemplateResourceSlices", async {
            let ids = request.into_inner().ids;
            let groups = if ids.is_empty() {
                self.backend.node_groups()
            } else {
                (ids.iter())
                    .map(|id| sizes::group(self.backend.as_ref(), id))
                    .collect::<Result<_, _>>()?
            };
            let node_groups = (groups.iter())
                .map(|group| NodeGroupResourceSlices {
                    id: group.id.clone(),
                    resource_slice_bytes: template_info::resource_slice_bytes(group),
                })
                .collect();
            Ok(TemplateResourceSlicesResponse { node_groups })
        })
        .await
    }

    async fn atomic_increase_size(
        &self,
        request: Request<AtomicIncreaseSizeRequest>,
    ) -> Result<Response<AtomicIncreaseSizeResponse>, Status> {
        observe(&self.metrics, "AtomicIncreaseSize", async {
            let request = request.into_inner();
            let (backend, locks) = (self.backend.as_ref(), &self.locks);
            sizes::increase(backend, locks, &request.id, request.delta, Increase::Atomic).await?;
            Ok(AtomicIncreaseSizeResponse {})
        })
        .await
    }
}
