//! ProvisioningRequests on the live cluster: the requests (v1 where the API server serves it, else v1beta1)
//! (the custom resource watch, `watch.rs`) and the PodTemplates they name, cached by watches like the rest
//! of the view; and the status subresource, written in the version read. A cluster without the CRD (or without RBAC to read it) gets no request
//! watches at all.

use crate::autoscaler::cluster::{ClusterError, RequestStatus};
use crate::autoscaler::control::watch::{CustomWatch, reflect};
use crate::k8s::{ProvisioningRequest, RequestObjects, Template};
use k8s_openapi::api::core::v1::PodTemplate;
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use std::future::Future;

pub struct RequestWatches {
    requests: CustomWatch<ProvisioningRequest>,
    templates: Store<PodTemplate>,
}

impl RequestWatches {
    /// Starts the watches when the API server serves ProvisioningRequests; `spawn` runs each watch's task.
    /// PodTemplates are read from `templates` when another source already watches them.
    pub async fn start(
        client: &kube::Client,
        templates: Option<Store<PodTemplate>>,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<RequestWatches>, ClusterError> {
        let Some(requests) = CustomWatch::start(client, &mut spawn).await? else {
            return Ok(None);
        };
        let templates = match templates {
            Some(store) => store,
            None => {
                let (store, task) = reflect(Api::all(client.clone()), ());
                spawn(Box::pin(task));
                store
            }
        };
        let watches = RequestWatches {
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
        for read in self.requests.objects() {
            let request = &read.request;
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
            objects.requests.push(read);
        }
        objects
    }

    /// Writes `request`'s status subresource, in the version it was read as.
    pub async fn write_status(&self, request: RequestStatus<'_>) -> Result<(), ClusterError> {
        self.requests.write_status(request).await
    }
}
