//! The client itself: every RPC the companion makes of a provider, each with a deadline, cached until the
//! next Refresh where cluster-autoscaler caches it.

use super::config::ProviderConfig;
use super::convert::{
    TemplateNodeInfo, decode_slices, decode_template, group_of, instance_of, match_of, optional,
    period, state_of,
};
use super::error::ClientError;
use crate::model::{
    FargateProfile, FargateSelector, GroupOptions, Instance, LeavingInstance, NodeGroup,
    NodeGroupState, PodMatch, ResourceSlice,
};
use crate::proto::ekscale::fargate_client::FargateClient;
use crate::proto::ekscale::node_groups_client::NodeGroupsClient;
use crate::proto::ekscale::{
    AtomicIncreaseSizeRequest, DescribeNodeGroupsRequest, ListLeavingInstancesRequest,
    ListProfilesRequest, ListZonesRequest, MatchPodRequest, TemplateResourceSlicesRequest,
};
use crate::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use crate::proto::externalgrpc::*;
use k8s_pb::api::core::v1::Node;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Request};

#[derive(Default)]
struct Caches {
    node_groups: Option<Arc<Vec<NodeGroup>>>,
    /// By node name + providerID, as cluster-autoscaler keys it.
    node_group_for_node: HashMap<String, NodeGroup>,
    templates: HashMap<String, Option<Arc<TemplateNodeInfo>>>,
    /// Each group's zones; `Some(None)` when the provider does not serve them.
    zones: Option<Option<GroupZones>>,
    /// Each group's EKS status and image; `Some(None)` when the provider does not serve them.
    states: Option<Option<States>>,
    /// The Fargate profiles; `Some(None)` when the provider does not serve them.
    profiles: Option<Option<Profiles>>,
    /// Every group's template slices as `ekscale.v1.NodeGroups/TemplateResourceSlices` says them; `Some(None)`
    /// when the provider does not serve it.
    slices: Option<Option<TemplateSlices>>,
    /// The leaving instances; `Some(None)` when the provider does not serve them.
    leaving: Option<Option<Arc<LeavingInstances>>>,
}

/// The cluster's Fargate profiles, as the provider last read them.
pub type Profiles = Arc<Vec<FargateProfile>>;

/// Each node group's Availability Zones, by group id.
pub type GroupZones = Arc<HashMap<String, Vec<String>>>;

/// Each node group's EKS status and image, by group id.
pub type States = Arc<HashMap<String, NodeGroupState>>;

/// The instances the provider says are leaving, and what it sent that could not be read (each in words: the
/// instance and why).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeavingInstances {
    pub instances: Vec<LeavingInstance>,
    pub refused: Vec<String>,
}

/// The ResourceSlices a new node of each node group publishes, by group id (groups without are left out).
pub type TemplateSlices = Arc<HashMap<String, Vec<ResourceSlice>>>;

/// A connection to one provider. Cheap to clone; clones share the caches.
#[derive(Clone)]
pub struct ProviderClient {
    cloud: CloudProviderClient<Channel>,
    fargate: FargateClient<Channel>,
    node_groups: NodeGroupsClient<Channel>,
    timeout: Duration,
    /// Where the channel connects, for [`ProviderClient::connected`].
    endpoint: Endpoint,
    caches: Arc<Mutex<Caches>>,
    /// Whether the provider serves `ekscale.v1.Fargate`; unknown until asked.
    fargate_served: Arc<Mutex<Option<bool>>>,
    /// Whether it was logged that the provider serves no template slices (logged once per client).
    no_slices_logged: Arc<std::sync::atomic::AtomicBool>,
}

/// Every service's stub over `channel`: one connection for all of them.
fn stubs(
    channel: Channel,
) -> (
    CloudProviderClient<Channel>,
    FargateClient<Channel>,
    NodeGroupsClient<Channel>,
) {
    (
        CloudProviderClient::new(channel.clone()),
        FargateClient::new(channel.clone()),
        NodeGroupsClient::new(channel),
    )
}

impl ProviderClient {
    /// A client that connects on first use, as grpc-go's non-blocking Dial does: the companion starts even
    /// when the provider is down, and calls fail fast until it is up. Call it inside a Tokio runtime.
    pub fn new(config: &ProviderConfig) -> Result<ProviderClient, ClientError> {
        let (host, port) = config
            .address
            .rsplit_once(':')
            .filter(|(host, port)| {
                !host.is_empty() && port.parse::<u16>().is_ok() && !host.contains("://")
            })
            .ok_or_else(|| ClientError::Address(config.address.clone()))?;
        let tls = config.ca.is_some() || config.identity.is_some();
        let uri = format!("{}://{}:{port}", if tls { "https" } else { "http" }, host);
        let mut endpoint =
            Endpoint::from_shared(uri).map_err(|_| ClientError::Address(config.address.clone()))?;
        if tls {
            let read = |path: &PathBuf| {
                std::fs::read(path).map_err(|source| ClientError::Read {
                    path: path.clone(),
                    source,
                })
            };
            // The provider's certificate must carry the address's host, as grpc-go checks it.
            let mut tls_config = ClientTlsConfig::new()
                .domain_name(host.trim_start_matches('[').trim_end_matches(']'));
            if let Some(ca) = &config.ca {
                tls_config = tls_config.ca_certificate(Certificate::from_pem(read(ca)?));
            }
            if let Some((cert, key)) = &config.identity {
                tls_config = tls_config.identity(Identity::from_pem(read(cert)?, read(key)?));
            }
            endpoint = endpoint.tls_config(tls_config).map_err(ClientError::Tls)?;
        }
        let endpoint = endpoint.connect_timeout(config.timeout);
        let (cloud, fargate, node_groups) = stubs(endpoint.connect_lazy());
        Ok(ProviderClient {
            cloud,
            fargate,
            node_groups,
            timeout: config.timeout,
            endpoint,
            caches: Arc::default(),
            fargate_served: Arc::default(),
            no_slices_logged: Arc::default(),
        })
    }

    /// This client with its connection opened now, when the provider answers; otherwise this client as it
    /// is, whose first call will say why. `simulate` opens it while it reads the snapshot, so that its one
    /// loop does not also wait for the TCP and HTTP/2 handshakes, which the steady loops of `run` never do.
    pub async fn connected(self) -> ProviderClient {
        match self.endpoint.connect().await {
            Ok(channel) => {
                let (cloud, fargate, node_groups) = stubs(channel);
                ProviderClient {
                    cloud,
                    fargate,
                    node_groups,
                    ..self
                }
            }
            Err(_) => self,
        }
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        request.set_timeout(self.timeout);
        request
    }

    fn caches(&self) -> std::sync::MutexGuard<'_, Caches> {
        self.caches
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Drops every cache, then asks the provider to refresh. The first call of each loop.
    pub async fn refresh(&self) -> Result<(), ClientError> {
        *self.caches() = Caches::default();
        self.cloud
            .clone()
            .refresh(self.request(RefreshRequest {}))
            .await
            .map_err(|s| ClientError::rpc("Refresh", s))?;
        Ok(())
    }

    /// Every node group, asked once per loop.
    pub async fn node_groups(&self) -> Result<Arc<Vec<NodeGroup>>, ClientError> {
        if let Some(groups) = self.caches().node_groups.clone() {
            return Ok(groups);
        }
        let response = self
            .cloud
            .clone()
            .node_groups(self.request(NodeGroupsRequest {}))
            .await;
        let groups: Arc<Vec<NodeGroup>> = Arc::new(
            (response.map_err(|s| ClientError::rpc("NodeGroups", s))?)
                .into_inner()
                .node_groups
                .into_iter()
                .map(group_of)
                .collect(),
        );
        self.caches().node_groups = Some(groups.clone());
        Ok(groups)
    }

    /// Each node group's Availability Zones, asked once per loop; `None` when the provider does not serve
    /// `ekscale.v1.NodeGroups` (any other externalgrpc provider): then every new node is planned in its
    /// template's zone.
    pub async fn zones(&self) -> Result<Option<GroupZones>, ClientError> {
        if let Some(zones) = self.caches().zones.clone() {
            return Ok(zones);
        }
        let zones = match self
            .node_groups
            .clone()
            .list_zones(self.request(ListZonesRequest {}))
            .await
        {
            Ok(response) => Some(Arc::new(
                response
                    .into_inner()
                    .node_groups
                    .into_iter()
                    .map(|g| (g.id, g.zones))
                    .collect(),
            )),
            Err(status) => optional("ListZones", status)?,
        };
        self.caches().zones = Some(zones.clone());
        Ok(zones)
    }

    /// Each node group's EKS status and the image its new nodes get, asked once per loop; `None` when the
    /// provider does not serve `ekscale.v1.NodeGroups/DescribeNodeGroups` (any other externalgrpc provider,
    /// or an ekscale-provider from before it).
    pub async fn node_group_states(&self) -> Result<Option<States>, ClientError> {
        if let Some(states) = self.caches().states.clone() {
            return Ok(states);
        }
        let request = self.request(DescribeNodeGroupsRequest {});
        let states = match self.node_groups.clone().describe_node_groups(request).await {
            Ok(response) => Some(Arc::new(
                (response.into_inner().node_groups.into_iter())
                    .map(state_of)
                    .collect::<Result<_, _>>()?,
            )),
            Err(status) => optional("DescribeNodeGroups", status)?,
        };
        self.caches().states = Some(states.clone());
        Ok(states)
    }

    /// The instances the provider says are leaving (`ekscale.v1.NodeGroups/ListLeavingInstances`), asked once
    /// per loop; `None` when the provider does not serve it (any other externalgrpc provider, or an
    /// ekscale-provider from before it). An entry that cannot be read is left out and named in `refused`.
    pub async fn leaving_instances(&self) -> Result<Option<Arc<LeavingInstances>>, ClientError> {
        if let Some(leaving) = self.caches().leaving.clone() {
            return Ok(leaving);
        }
        let request = self.request(ListLeavingInstancesRequest {});
        let leaving = match self
            .node_groups
            .clone()
            .list_leaving_instances(request)
            .await
        {
            Ok(response) => {
                let mut leaving = LeavingInstances::default();
                for sent in response.into_inner().instances {
                    let id = sent.id.clone();
                    match LeavingInstance::try_from(sent) {
                        Ok(instance) => leaving.instances.push(instance),
                        Err(invalid) => leaving.refused.push(format!("{id}: {invalid}")),
                    }
                }
                Some(Arc::new(leaving))
            }
            Err(status) => optional("ListLeavingInstances", status)?,
        };
        self.caches().leaving = Some(leaving.clone());
        Ok(leaving)
    }

    /// The cluster's Fargate profiles, asked once per loop; `None` when the provider does not serve
    /// `ekscale.v1.Fargate`. The companion matches pods to them itself (`model::fargate`, the provider's own
    /// rules), so that no pod costs an RPC.
    pub async fn fargate_profiles(&self) -> Result<Option<Profiles>, ClientError> {
        if let Some(profiles) = self.caches().profiles.clone() {
            return Ok(profiles);
        }
        let request = self.request(ListProfilesRequest {});
        let profiles = match self.fargate.clone().list_profiles(request).await {
            Ok(response) => Some(Arc::new(
                response
                    .into_inner()
                    .profiles
                    .into_iter()
                    .map(|p| FargateProfile {
                        name: p.name,
                        status: p.status,
                        selectors: p
                            .selectors
                            .into_iter()
                            .map(|s| FargateSelector {
                                namespace: s.namespace,
                                labels: s.labels.into_iter().collect(),
                            })
                            .collect(),
                        subnets: p.subnets,
                    })
                    .collect(),
            )),
            Err(status) => optional("ListProfiles", status)?,
        };
        self.caches().profiles = Some(profiles.clone());
        Ok(profiles)
    }

    /// The node group of a node, or `None` when the provider does not manage it.
    pub async fn node_group_for_node(
        &self,
        name: &str,
        provider_id: &str,
    ) -> Result<Option<NodeGroup>, ClientError> {
        let key = format!("{name}{provider_id}");
        if let Some(group) = self.caches().node_group_for_node.get(&key) {
            return Ok(Some(group.clone()));
        }
        let node = ExternalGrpcNode {
            name: name.into(),
            provider_id: provider_id.into(),
            ..Default::default()
        };
        let response = self
            .cloud
            .clone()
            .node_group_for_node(self.request(NodeGroupForNodeRequest { node: Some(node) }))
            .await;
        let group = response
            .map_err(|s| ClientError::rpc("NodeGroupForNode", s))?
            .into_inner()
            .node_group;
        match group.filter(|g| !g.id.is_empty()).map(group_of) {
            Some(group) => {
                self.caches().node_group_for_node.insert(key, group.clone());
                Ok(Some(group))
            }
            None => Ok(None),
        }
    }

    /// The group's target size, asked every time.
    pub async fn target_size(&self, id: &str) -> Result<i32, ClientError> {
        let response = self
            .cloud
            .clone()
            .node_group_target_size(self.request(NodeGroupTargetSizeRequest { id: id.into() }))
            .await;
        Ok(response
            .map_err(|s| ClientError::rpc("NodeGroupTargetSize", s))?
            .into_inner()
            .target_size)
    }

    /// The group's instances, asked every time.
    pub async fn nodes(&self, id: &str) -> Result<Vec<Instance>, ClientError> {
        let response = self
            .cloud
            .clone()
            .node_group_nodes(self.request(NodeGroupNodesRequest { id: id.into() }))
            .await;
        Ok(
            (response.map_err(|s| ClientError::rpc("NodeGroupNodes", s))?)
                .into_inner()
                .instances
                .into_iter()
                .map(instance_of)
                .collect(),
        )
    }

    /// The group's template node, once per loop; `None` when the provider does not offer templates.
    pub async fn template(&self, id: &str) -> Result<Option<Arc<Node>>, ClientError> {
        Ok(self.template_node_info(id).await?.map(|t| t.node.clone()))
    }

    /// The group's template node and the ResourceSlices its new nodes publish (`resourceSliceBytes`, field 3,
    /// from any provider that fills it), once per loop; `None` when the provider does not offer templates.
    pub async fn template_node_info(
        &self,
        id: &str,
    ) -> Result<Option<Arc<TemplateNodeInfo>>, ClientError> {
        if let Some(template) = self.caches().templates.get(id) {
            return Ok(template.clone());
        }
        let request = self.request(NodeGroupTemplateNodeInfoRequest { id: id.into() });
        let template = match self
            .cloud
            .clone()
            .node_group_template_node_info(request)
            .await
        {
            Ok(response) => decode_template(response.into_inner())?.map(Arc::new),
            Err(status) => optional("NodeGroupTemplateNodeInfo", status)?,
        };
        self.caches()
            .templates
            .insert(id.to_string(), template.clone());
        Ok(template)
    }

    /// The ResourceSlices a new node of the group will publish (DRA devices, node-local to the group's
    /// template node), for scaling it from zero for pods that claim devices: those its template carries
    /// (field 3), and where it carries none, those `ekscale.v1.NodeGroups/TemplateResourceSlices` says. The
    /// template is asked once per group and the extension once for every group, per loop, so RPCs grow with
    /// loops, not groups. A provider that serves neither gives none.
    pub async fn template_slices(&self, id: &str) -> Result<Vec<ResourceSlice>, ClientError> {
        let template = self.template_node_info(id).await?;
        if let Some(own) = template.filter(|t| !t.resource_slices.is_empty()) {
            return Ok(own.resource_slices.clone());
        }
        let slices = self.extension_template_slices().await?;
        Ok((slices.and_then(|slices| slices.get(id).cloned())).unwrap_or_default())
    }

    /// Every group's template slices as [`ProviderClient::template_slices`] picks them, from the templates
    /// read this loop and the extension (asked once per loop, here if not yet); `None` when neither gives any.
    pub async fn all_template_slices(&self) -> Result<Option<TemplateSlices>, ClientError> {
        let extension = self.extension_template_slices().await?;
        let caches = self.caches();
        let own = (caches.templates.iter())
            .filter_map(|(id, t)| Some((id, t.as_ref()?)))
            .filter(|(_, t)| !t.resource_slices.is_empty())
            .map(|(id, t)| (id.clone(), t.resource_slices.clone()));
        let mut all: HashMap<String, Vec<ResourceSlice>> =
            extension.as_deref().cloned().unwrap_or_default();
        all.extend(own);
        Ok((extension.is_some() || !all.is_empty()).then(|| Arc::new(all)))
    }

    /// Every group's template slices as `ekscale.v1.NodeGroups/TemplateResourceSlices` says them, asked once
    /// per loop; `None` when the provider does not serve it (another externalgrpc provider, or an
    /// ekscale-provider from before it), which is logged once.
    pub async fn extension_template_slices(&self) -> Result<Option<TemplateSlices>, ClientError> {
        if let Some(slices) = self.caches().slices.clone() {
            return Ok(slices);
        }
        const METHOD: &str = "TemplateResourceSlices";
        let request = self.request(TemplateResourceSlicesRequest { ids: Vec::new() });
        let slices = match self
            .node_groups
            .clone()
            .template_resource_slices(request)
            .await
        {
            Ok(response) => Some(Arc::new(
                (response.into_inner().node_groups.into_iter())
                    .filter(|group| !group.resource_slice_bytes.is_empty())
                    .map(|group| {
                        Ok((
                            group.id,
                            decode_slices(METHOD, &group.resource_slice_bytes)?,
                        ))
                    })
                    .collect::<Result<_, ClientError>>()?,
            )),
            Err(status) => {
                let slices = optional(METHOD, status)?;
                if !self
                    .no_slices_logged
                    .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    tracing::info!(
                        "the provider does not serve ekscale.v1 {METHOD}: a node group at zero nodes offers \
                         DRA devices only where its template carries them (resourceSliceBytes)"
                    );
                }
                slices
            }
        };
        self.caches().slices = Some(slices.clone());
        Ok(slices)
    }

    /// The group's options: what GetOptions says over `defaults`, which are sent, or `defaults` when the
    /// provider leaves the group to them.
    pub async fn group_options(
        &self,
        id: &str,
        defaults: GroupOptions,
    ) -> Result<GroupOptions, ClientError> {
        let sent = self.options(id, defaults.to_wire()).await?;
        Ok(sent.map_or(defaults, |o| GroupOptions::read(&o, defaults)))
    }

    /// The group's options given `defaults`, as the wire carries them; `None` means "use the defaults".
    pub async fn options(
        &self,
        id: &str,
        defaults: NodeGroupAutoscalingOptions,
    ) -> Result<Option<NodeGroupAutoscalingOptions>, ClientError> {
        let request = self.request(NodeGroupAutoscalingOptionsRequest {
            id: id.into(),
            defaults: Some(defaults),
        });
        match self.cloud.clone().node_group_get_options(request).await {
            Ok(response) => Ok(response.into_inner().node_group_autoscaling_options),
            Err(status) => optional("NodeGroupGetOptions", status),
        }
    }

    /// What a node named `name` with `labels` (a group's template) costs over `hours` from now; `None` when
    /// the provider does not price nodes.
    pub async fn node_price(
        &self,
        name: &str,
        labels: &crate::model::Labels,
        hours: f64,
    ) -> Result<Option<f64>, ClientError> {
        let node = ExternalGrpcNode {
            name: name.into(),
            labels: labels.clone().into_iter().collect(),
            ..Default::default()
        };
        let (start, end) = period(hours);
        let request = self.request(PricingNodePriceRequest {
            node: Some(node),
            start_time: Some(start),
            end_time: Some(end),
            start_timestamp: Some(start),
            end_timestamp: Some(end),
        });
        match self.cloud.clone().pricing_node_price(request).await {
            Ok(response) => Ok(Some(response.into_inner().price)),
            Err(status) => optional("PricingNodePrice", status),
        }
    }

    /// What a pod (`Pod.Marshal()` bytes) costs over `hours` from now; `None` when the provider does not
    /// price pods.
    pub async fn pod_price(
        &self,
        pod_bytes: Vec<u8>,
        hours: f64,
    ) -> Result<Option<f64>, ClientError> {
        let (start, end) = period(hours);
        let request = self.request(PricingPodPriceRequest {
            pod: pod_bytes.clone(),
            pod_bytes,
            start_time: Some(start),
            end_time: Some(end),
            start_timestamp: Some(start),
            end_timestamp: Some(end),
        });
        match self.cloud.clone().pricing_pod_price(request).await {
            Ok(response) => Ok(Some(response.into_inner().price)),
            Err(status) => optional("PricingPodPrice", status),
        }
    }

    pub async fn increase_size(&self, id: &str, delta: i32) -> Result<(), ClientError> {
        let request = self.request(NodeGroupIncreaseSizeRequest {
            id: id.into(),
            delta,
        });
        self.cloud
            .clone()
            .node_group_increase_size(request)
            .await
            .map_err(|s| ClientError::rpc("NodeGroupIncreaseSize", s))?;
        Ok(())
    }

    /// Increases the group's size by `delta`, all or nothing, where the provider serves
    /// `ekscale.v1.NodeGroups/AtomicIncreaseSize`; elsewhere (Unimplemented) a plain increase, as
    /// cluster-autoscaler's executor falls back when a provider has no `AtomicIncreaseSize`.
    pub async fn atomic_increase_size(&self, id: &str, delta: i32) -> Result<(), ClientError> {
        let request = self.request(AtomicIncreaseSizeRequest {
            id: id.into(),
            delta,
        });
        match self.node_groups.clone().atomic_increase_size(request).await {
            Ok(_) => Ok(()),
            Err(status) if status.code() == Code::Unimplemented => {
                self.increase_size(id, delta).await
            }
            Err(status) => Err(ClientError::rpc("AtomicIncreaseSize", status)),
        }
    }

    /// Deletes nodes (by name and providerID) of one group.
    pub async fn delete_nodes(
        &self,
        id: &str,
        nodes: &[(String, String)],
    ) -> Result<(), ClientError> {
        let nodes = nodes
            .iter()
            .map(|(name, provider_id)| ExternalGrpcNode {
                name: name.clone(),
                provider_id: provider_id.clone(),
                ..Default::default()
            })
            .collect();
        let request = self.request(NodeGroupDeleteNodesRequest {
            id: id.into(),
            nodes,
        });
        self.cloud
            .clone()
            .node_group_delete_nodes(request)
            .await
            .map_err(|s| ClientError::rpc("NodeGroupDeleteNodes", s))?;
        Ok(())
    }

    pub async fn decrease_target_size(&self, id: &str, delta: i32) -> Result<(), ClientError> {
        let request = self.request(NodeGroupDecreaseTargetSizeRequest {
            id: id.into(),
            delta,
        });
        self.cloud
            .clone()
            .node_group_decrease_target_size(request)
            .await
            .map_err(|s| ClientError::rpc("NodeGroupDecreaseTargetSize", s))?;
        Ok(())
    }

    /// What `ekscale.v1.Fargate` says of a pod (as `Pod.Marshal()` bytes); `None` when the provider does not
    /// serve that extension, which is asked once.
    pub async fn match_pod(&self, pod_bytes: Vec<u8>) -> Result<Option<PodMatch>, ClientError> {
        self.ask_fargate(MatchPodRequest {
            pod_bytes,
            pod_json: String::new(),
        })
        .await
    }

    /// The same for a pod as kubectl prints it (JSON), which keeps every field the pod has.
    pub async fn match_pod_json(&self, pod_json: String) -> Result<Option<PodMatch>, ClientError> {
        self.ask_fargate(MatchPodRequest {
            pod_bytes: Vec::new(),
            pod_json,
        })
        .await
    }

    async fn ask_fargate(&self, request: MatchPodRequest) -> Result<Option<PodMatch>, ClientError> {
        if *self
            .fargate_served
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            == Some(false)
        {
            return Ok(None);
        }
        let request = self.request(request);
        let answer = match self.fargate.clone().match_pod(request).await {
            Ok(response) => Some(match_of(response.into_inner())),
            Err(status) => optional("MatchPod", status)?,
        };
        *self
            .fargate_served
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(answer.is_some());
        Ok(answer)
    }
}
