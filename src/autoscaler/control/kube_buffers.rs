//! CapacityBuffers on the live cluster: the buffers (v1beta1 where the API server serves it, else v1alpha1;
//! the custom resource watch, `watch.rs`), the PodTemplates and the Deployments, StatefulSets, ReplicaSets and Jobs they may name, all cached by
//! watches like the rest of the view; and the status subresource, written in the version read.
//! A cluster without the CRD (or without RBAC to read it) gets no buffer watches at all.

use crate::autoscaler::cluster::{BufferStatus, ClusterError};
use crate::autoscaler::control::watch::{CustomWatch, reflect};
use crate::k8s as api;
use crate::k8s::{BufferObjects, CapacityBuffer, Scalable, Template};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplate;
use kube::api::Api;
use kube::runtime::reflector::{ObjectRef, Store};
use std::future::Future;

pub struct BufferWatches {
    buffers: CustomWatch<CapacityBuffer>,
    templates: Store<PodTemplate>,
    deployments: Store<Deployment>,
    stateful_sets: Store<StatefulSet>,
    replica_sets: Store<ReplicaSet>,
    jobs: Store<Job>,
}

impl BufferWatches {
    /// Starts the watches when the API server serves CapacityBuffers; `spawn` runs each watch's task.
    pub async fn start(
        client: &kube::Client,
        mut spawn: impl FnMut(std::pin::Pin<Box<dyn Future<Output = ()> + Send>>),
    ) -> Result<Option<BufferWatches>, ClusterError> {
        let Some(buffers) = CustomWatch::start(client, &mut spawn).await? else {
            return Ok(None);
        };
        let c = client.clone();
        let (templates, task) = reflect(Api::all(c.clone()), ());
        spawn(Box::pin(task));
        let (deployments, task) = reflect(Api::all(c.clone()), ());
        spawn(Box::pin(task));
        let (stateful_sets, task) = reflect(Api::all(c.clone()), ());
        spawn(Box::pin(task));
        let (replica_sets, task) = reflect(Api::all(c.clone()), ());
        spawn(Box::pin(task));
        let (jobs, task) = reflect(Api::all(c), ());
        spawn(Box::pin(task));
        let watches = BufferWatches {
            buffers,
            templates,
            deployments,
            stateful_sets,
            replica_sets,
            jobs,
        };
        let ready = async {
            watches.buffers.wait_until_ready().await?;
            watches.templates.wait_until_ready().await?;
            watches.deployments.wait_until_ready().await?;
            watches.stateful_sets.wait_until_ready().await?;
            watches.replica_sets.wait_until_ready().await?;
            watches.jobs.wait_until_ready().await
        };
        ready.await.map_err(|e| {
            ClusterError::Kube(format!(
                "the buffer watches stopped before their first list: {e}"
            ))
        })?;
        Ok(Some(watches))
    }

    /// The PodTemplates' store, for the other sources that read PodTemplates.
    pub fn templates(&self) -> Store<PodTemplate> {
        self.templates.clone()
    }

    /// The buffers, and only the templates and scalable objects they name (a cluster's Deployments are
    /// many; converting them all every loop would be work for nothing).
    pub fn objects(&self) -> BufferObjects {
        let mut objects = BufferObjects::default();
        for read in self.buffers.objects() {
            let buffer = &read.buffer;
            let namespace = buffer.metadata.namespace.clone().unwrap_or_default();
            if let Some(t) = &buffer.spec.pod_template_ref {
                let found = self
                    .templates
                    .get(&ObjectRef::new(&t.name).within(&namespace));
                objects
                    .templates
                    .extend(found.map(|t| Template::from_api(&t)));
            }
            if let Some(r) = &buffer.spec.scalable_ref {
                let scalable = self.scalable(&namespace, r);
                objects.scalables.extend(scalable);
            }
            objects.buffers.push(read);
        }
        objects
    }

    fn scalable(&self, namespace: &str, r: &api::ScalableRef) -> Option<Scalable> {
        fn at<K: kube::Resource<DynamicType = ()>>(namespace: &str, name: &str) -> ObjectRef<K> {
            ObjectRef::new(name).within(namespace)
        }
        let (ns, name) = (namespace, r.name.as_str());
        match (r.api_group.as_str(), r.kind.as_str()) {
            ("apps", "Deployment") => self
                .deployments
                .get(&at(ns, name))
                .map(|o| Scalable::deployment(&o)),
            ("apps", "StatefulSet") => {
                (self.stateful_sets.get(&at(ns, name))).map(|o| Scalable::stateful_set(&o))
            }
            ("apps", "ReplicaSet") => {
                (self.replica_sets.get(&at(ns, name))).map(|o| Scalable::replica_set(&o))
            }
            ("batch", "Job") => self.jobs.get(&at(ns, name)).map(|o| Scalable::job(&o)),
            _ => None,
        }
    }

    /// Writes `buffer`'s status subresource, in the version it was read as.
    pub async fn write_status(&self, buffer: BufferStatus<'_>) -> Result<(), ClusterError> {
        self.buffers.write_status(buffer).await
    }
}
