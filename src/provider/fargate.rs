//! The `ekscale.v1.Fargate` extension service: what the externalgrpc protocol cannot say about Fargate.

use crate::cloud::NodeGroupBackend;
use crate::proto::ekscale::fargate_server::Fargate;
use crate::proto::ekscale::*;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct FargateService {
    backend: Arc<dyn NodeGroupBackend>,
}

impl FargateService {
    pub fn new(backend: Arc<dyn NodeGroupBackend>) -> Self {
        FargateService { backend }
    }
}

#[tonic::async_trait]
impl Fargate for FargateService {
    async fn list_profiles(
        &self,
        _: Request<ListProfilesRequest>,
    ) -> Result<Response<ListProfilesResponse>, Status> {
        let profiles = self
            .backend
            .fargate_profiles()
            .into_iter()
            .map(|p| Profile {
                name: p.name,
                status: p.status,
                selectors: p
                    .selectors
                    .into_iter()
                    .map(|s| Selector {
                        namespace: s.namespace,
                        labels: s.labels.into_iter().collect(),
                    })
                    .collect(),
                subnets: p.subnets,
            })
            .collect();
        Ok(Response::new(ListProfilesResponse { profiles }))
    }

    async fn match_pod(
        &self,
        request: Request<MatchPodRequest>,
    ) -> Result<Response<MatchPodResponse>, Status> {
        let request = request.get_ref();
        if request.pod_bytes.is_empty() == request.pod_json.is_empty() {
            return Err(Status::invalid_argument(
                "set exactly one of pod_bytes and pod_json",
            ));
        }
        Err(Status::unimplemented(
            "MatchPod: Fargate pod matching and sizing are not built yet",
        ))
    }
}
