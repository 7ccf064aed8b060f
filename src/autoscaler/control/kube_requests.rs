//! ProvisioningRequests on the live cluster: the requests (v1 where the API server serves it, else v1beta1)
//! and the PodTemplates they name, cached by watches like the rest of the view; and the status subresource,
//! written in the version read. A cluster without the CRD (or without RBAC to read it) gets no request
//! watches at all.

use crate::autoscaler::cluster::{ClusterError, RequestStatus};
use crate::autoscaler::control::watch::{reflect, served, write_status};
use crate::k8s::autoscaling_group::GROUP;
use crate::k8s::provisioning_request::{KIND, PLURAL, VERSIONS};
use crate::k8s::{ProvisioningRequest, RequestObjects, Template, VersionedRequest};
use k8s_openapi::api::core::v1::PodTemplate;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::{ObjectRef, Store};
use std::future::Future;

pub struct RequestWatches {
    client: kube::Client,
    version: &'static str,
    requests: Store<DynamicObject>,
    templates: Store<PodTemplate>,
}

fn resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, version, KIND), PLURAL)
}

impl RequestWatches {
    /// Starts the watches when the API server serves ProvisioningRequests; `spawn` runs each watch's task.
    /// PodTemplates are read from `templates` when another source already watches them.
    pub async fn start(
        client: &kube::Client,
        templates: Option<Store<PodTemplate>>,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<RequestWatches>, ClusterError> {
        let Some(version) = served(client, KIND, resource, &VERSIONS).await? else {
            return Ok(None);
        };
        let resource = resource(version);
        let (requests, task) = reflect(Api::all_with(client.clone(), &resource), resource.clone());
        spawn(Box::pin(task));
        let templates = match templates {
            Some(store) => store,
            None => {
                let (store, task) = reflect(Api::all(client.clone()), ());
                spawn(Box::pin(task));
                store
            }
        };
        let watches = RequestWatches {
            client: client.clone(),
            version,
            requests,
            templates,
        };
        let ready = async {
            watches.requests.wait_until_ready().await?;
            watches.templates.wait_until_ready().await
        };
        ready.await.map_err(|e| {
            ClusterError::Kube(format!(
                "the ProvisioningRequest watches stopped before their first list: {e}"
            ))
        })?;
        Ok(Some(watches))
    }

    /// The requests, and only the PodTemplates they name.
    pub fn objects(&self) -> RequestObjects {
        let mut objects = RequestObjects::default();
        for object in self.requests.state() {
            let request = serde_json::to_value(object.as_ref())
                .and_then(serde_json::from_value::<ProvisioningRequest>);
            let request = match request {
                Ok(request) => request,
                Err(e) => {
                    tracing::warn!(error = %e, "ProvisioningRequest left out of the loop");
                    continue;
                }
            };
            let namespace = request.metadata.namespace.clone().unwrap_or_default();
            for set in &request.spec.pod_sets {
                let at = ObjectRef::new(&set.pod_template_ref.name).within(&namespace);
                let named =
                    |t: &Template| t.namespace == namespace && t.name == set.pod_template_ref.name;
                if !objects.templates.iter().any(named)
                    && let Some(template) = self.templates.get(&at)
                {
                    objects.templates.push(Template::from_api(&template));
                }
            }
            objects.requests.push(VersionedRequest {
                version: self.version,
                request,
            });
        }
        objects
    }

    /// Writes `request`'s status subresource, in the version it was read as.
    pub async fn write_status(&self, request: RequestStatus<'_>) -> Result<(), ClusterError> {
        write_status(&self.client, KIND, resource, request).await
    }
}
