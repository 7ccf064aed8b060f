//! The `ekscale.v1.Fargate` extension service: what the externalgrpc protocol cannot say about Fargate.

use super::metrics::ProviderMetrics;
use super::observe::observe;
use crate::cloud::NodeGroupBackend;
use crate::cloud::{PROFILE_LABEL, Selection, assess};
use crate::k8s;
use crate::proto::ekscale::fargate_server::Fargate;
use crate::proto::ekscale::*;
use std::sync::Arc;
use tonic::{Request, Response, Status};

pub struct FargateService {
    backend: Arc<dyn NodeGroupBackend>,
    metrics: Arc<ProviderMetrics>,
}

impl FargateService {
    pub fn new(backend: Arc<dyn NodeGroupBackend>, metrics: Arc<ProviderMetrics>) -> Self {
        FargateService { backend, metrics }
    }

    fn match_pod(&self, request: &MatchPodRequest) -> Result<MatchPodResponse, Status> {
        let pod = match (
            request.pod_bytes.is_empty(),
            request.pod_json.trim().is_empty(),
        ) {
            (false, true) => k8s::PodFacts::from_bytes(&request.pod_bytes),
            (true, false) => k8s::PodFacts::from_text(&request.pod_json),
            _ => {
                return Err(Status::invalid_argument(
                    "set exactly one of pod_bytes and pod_json",
                ));
            }
        }
        .map_err(|e| Status::invalid_argument(e.to_string()))?;
        let assessment = assess(
            &self.backend.fargate_profiles(),
            &pod,
            &self.backend.fargate_rates(),
        );
        let (profile, candidates, reason) = match assessment.selection {
            Selection::Profile(name) => (name, Vec::new(), String::new()),
            Selection::Candidates(names) => {
                let reason = format!(
                    "{} profiles match ({}): EKS picks one at random unless the label {PROFILE_LABEL} names one",
                    names.len(),
                    names.join(", ")
                );
                (String::new(), names, reason)
            }
            Selection::NoMatch(reason) => (String::new(), Vec::new(), reason),
        };
        Ok(MatchPodResponse {
            profile,
            candidates,
            capacity_provisioned: assessment
                .size
                .map(|s| s.capacity_provisioned())
                .unwrap_or_default(),
            vcpu: assessment.size.map_or(0.0, |s| s.vcpu),
            memory_gb: assessment.size.map_or(0.0, |s| s.memory_gb),
            hourly_price: assessment.hourly_price.unwrap_or(0.0),
            incompatibilities: assessment.incompatibilities,
            reason,
        })
    }
}

#[tonic::async_trait]
impl Fargate for FargateService {
    async fn list_profiles(
        &self,
        _: Request<ListProfilesRequest>,
    ) -> Result<Response<ListProfilesResponse>, Status> {
        observe(&self.metrics, "ListProfiles", async {
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
            Ok(ListProfilesResponse { profiles })
        })
        .await
    }

    async fn match_pod(
        &self,
        request: Request<MatchPodRequest>,
    ) -> Result<Response<MatchPodResponse>, Status> {
        observe(&self.metrics, "MatchPod", async {
            self.match_pod(request.get_ref())
        })
        .await
    }
}
