//! The `ekscale.v1.NodeGroups` extension service: what the externalgrpc protocol cannot say about a node
//! group. Its zones let a companion plan new nodes where the Auto Scaling group will launch them.

use crate::cloud::NodeGroupBackend;
use crate::proto::ekscale::node_groups_server::NodeGroups;
use crate::proto::ekscale::{ListZonesRequest, ListZonesResponse, NodeGroupZones};
use crate::provider::metrics::ProviderMetrics;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct NodeGroupsService {
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
}

impl NodeGroupsService {
    pub fn new(backend: Arc<dyn NodeGroupBackend>, metrics: Arc<ProviderMetrics>) -> Self {
        NodeGroupsService { backend, metrics }
    }
}

#[tonic::async_trait]
impl NodeGroups for NodeGroupsService {
    async fn list_zones(
        &self,
        _: Request<ListZonesRequest>,
    ) -> Result<Response<ListZonesResponse>, Status> {
        super::observe(&self.metrics, "ListZones", async {
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
}
