//! A fake Kubernetes API server on loopback, at the HTTP layer, for the kube-rs source: lists, watches that
//! stream the events a test sends, node GETs and PATCHes, evictions answered 201, 429 (a PDB) or 404, and
//! CapacityBuffers, ProvisioningRequests and CapacityQuotas (cluster-scoped) in the versions a test serves
//! (404 in the others) with their status subresource, and Dynamic Resource Allocation's objects (`resource.k8s.io`) likewise.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::broadcast;

#[derive(Default)]
pub struct Objects {
    pub nodes: Vec<Value>,
    pub pods: Vec<Value>,
    pub pdbs: Vec<Value>,
    pub daemonsets: Vec<Value>,
    pub patches: Vec<(String, Value)>,
    pub evictions: Vec<(String, Value)>,
    /// Pods whose eviction a PDB refuses.
    pub refused: Vec<String>,
    /// The Lease, by name.
    pub leases: std::collections::BTreeMap<String, Value>,
    /// Every Lease call fails with 500 (an API server in trouble).
    pub lease_outage: bool,
    /// events.k8s.io/v1 Events created, and series patches (name, patch).
    pub events: Vec<Value>,
    pub event_patches: Vec<(String, Value)>,
    /// ConfigMaps by name, and how many times each was written.
    pub config_maps: std::collections::BTreeMap<String, Value>,
    /// The next this many pod lists answer no pods (an API server that lost them for a moment).
    pub empty_pod_lists: usize,
    /// The CapacityBuffer versions served (none: no CRD), the buffers, and the status patches written
    /// (version, namespace/name, patch).
    pub buffer_versions: Vec<&'static str>,
    pub capacity_buffers: Vec<Value>,
    pub status_writes: Vec<(String, String, Value)>,
    pub pod_templates: Vec<Value>,
    pub deployments: Vec<Value>,
    /// The ProvisioningRequest versions served (none: no CRD) and the requests; their status patches go to
    /// `status_writes` too.
    pub request_versions: Vec<&'static str>,
    pub provisioning_requests: Vec<Value>,
    /// The CapacityQuota versions served (none: no CRD) and the quotas; their status patches (merge
    /// patches, applied as the API server applies them) go to `status_writes` too, under the quota's name.
    pub quota_versions: Vec<&'static str>,
    pub capacity_quotas: Vec<Value>,
    /// The `resource.k8s.io` versions served (none: a cluster before DRA) and its objects.
    pub dra_versions: Vec<&'static str>,
    pub device_classes: Vec<Value>,
    pub resource_claims: Vec<Value>,
    pub resource_claim_templates: Vec<Value>,
    pub resource_slices: Vec<Value>,
}

#[derive(Clone)]
pub struct Fake {
    pub objects: Arc<Mutex<Objects>>,
    /// Watch events: (resource, event).
    pub events: broadcast::Sender<(&'static str, Value)>,
    /// Watches opened, by resource: a client opens its next watch only once it has applied its last list.
    pub watches: Arc<tokio::sync::watch::Sender<std::collections::BTreeMap<&'static str, usize>>>,
}

pub fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "resourceVersion": "7", "labels": {"kubernetes.io/hostname": name}},
           "spec": {"providerID": format!("aws:///us-east-1a/i-{name}"),
                    "taints": [{"key": "team", "value": "web", "effect": "NoSchedule"}]},
           "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

pub fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "default", "resourceVersion": "3", "labels": {"app": "web"},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                             "uid": "u", "controller": true}]},
           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]},
           "status": {"phase": "Pending"}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
        pod["status"]["phase"] = json!("Running");
    }
    pod
}

impl Fake {
    /// A list, or a watch that streams this resource's events for as long as the client listens.
    fn list_or_watch(&self, resource: &'static str, kind: &str, query: Option<String>) -> Response {
        let query = query.unwrap_or_default();
        if query.contains("watch=true") {
            let receiver = self.events.subscribe();
            self.watches
                .send_modify(|opened| *opened.entry(resource).or_default() += 1);
            let stream = futures::stream::unfold(receiver, move |mut receiver| async move {
                loop {
                    match receiver.recv().await {
                        Ok((r, event)) if r == resource => {
                            let line = format!("{event}\n");
                            return Some((Ok::<_, std::io::Error>(line), receiver));
                        }
                        Ok(_) => continue,
                        Err(_) => return None,
                    }
                }
            });
            return Body::from_stream(stream).into_response();
        }
        // Pages as the API server serves them (`limit`, and `continue` where the last page ended).
        let param = |name: &str| {
            query
                .split('&')
                .find_map(|p| p.strip_prefix(name)?.strip_prefix('='))
                .and_then(|v| v.parse::<usize>().ok())
        };
        let from = param("continue").unwrap_or(0);
        let mut objects = self.objects.lock().unwrap();
        // ConfigMaps are watched by name (`fieldSelector=metadata.name=...`).
        let named = query
            .split('&')
            .find_map(|p| p.strip_prefix("fieldSelector=metadata.name%3D"));
        let maps: Vec<Value> = (objects.config_maps.iter())
            .filter(|(name, _)| named.is_none_or(|n| n == name.as_str()))
            .map(|(_, map)| map.clone())
            .collect();
        let all = match resource {
            "configmaps" => &maps,
            "nodes" => &objects.nodes,
            "pods" if objects.empty_pod_lists > 0 && from == 0 => {
                objects.empty_pod_lists -= 1;
                &Vec::new()
            }
            "pods" => &objects.pods,
            "daemonsets" => &objects.daemonsets,
            "pdbs" => &objects.pdbs,
            "capacitybuffers" => &objects.capacity_buffers,
            "provisioningrequests" => &objects.provisioning_requests,
            "capacityquotas" => &objects.capacity_quotas,
            "podtemplates" => &objects.pod_templates,
            "deviceclasses" => &objects.device_classes,
            "resourceclaims" => &objects.resource_claims,
            "resourceclaimtemplates" => &objects.resource_claim_templates,
            "resourceslices" => &objects.resource_slices,
            "deployments" => &objects.deployments,
            _ => &Vec::new(),
        };
        let to = param("limit").map_or(all.len(), |limit| (from + limit).min(all.len()));
        let items = all.get(from..to).unwrap_or_default();
        let mut metadata = json!({"resourceVersion": "10"});
        if to < all.len() {
            metadata["continue"] = json!(to.to_string());
        }
        reply(
            StatusCode::OK,
            json!({"kind": kind, "apiVersion": "v1", "metadata": metadata, "items": items}),
        )
    }

    /// A custom resource's status subresource patched: it takes the status and nothing else, and the watch
    /// sees the change.
    fn patch_status(
        &self,
        plural: &'static str,
        (version, ns, name): (String, String, String),
        body: &str,
    ) -> Response {
        let patch: Value = serde_json::from_str(body).unwrap();
        let mut objects = self.objects.lock().unwrap();
        let key = format!("{ns}/{name}");
        objects.status_writes.push((version, key, patch.clone()));
        let all = match plural {
            "capacitybuffers" => &mut objects.capacity_buffers,
            _ => &mut objects.provisioning_requests,
        };
        let Some(object) = all.iter_mut().find(|b| {
            b["metadata"]["name"] == name.as_str() && b["metadata"]["namespace"] == ns.as_str()
        }) else {
            return status(404, "NotFound", &format!("{plural} not found"));
        };
        object["status"] = patch["status"].clone();
        let version: u64 = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("1")
            .parse()
            .unwrap();
        object["metadata"]["resourceVersion"] = json!((version + 1).to_string());
        let object = object.clone();
        drop(objects);
        let _ = self.events.send((
            plural,
            json!({"type": "MODIFIED", "object": object.clone()}),
        ));
        reply(StatusCode::OK, object)
    }
}

impl Fake {
    /// A CapacityQuota's status subresource merge-patched (RFC 7386, as the API server applies a merge
    /// patch): only the status changes, the resourceVersion moves on, and the watch sees the change.
    fn patch_quota_status(&self, (version, name): (String, String), body: &str) -> Response {
        let patch: Value = serde_json::from_str(body).unwrap();
        let mut objects = self.objects.lock().unwrap();
        objects
            .status_writes
            .push((version, name.clone(), patch.clone()));
        let Some(object) =
            (objects.capacity_quotas.iter_mut()).find(|q| q["metadata"]["name"] == name.as_str())
        else {
            return status(404, "NotFound", "capacityquotas not found");
        };
        merge(&mut object["status"], &patch["status"]);
        let version: u64 = object["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("1")
            .parse()
            .unwrap();
        object["metadata"]["resourceVersion"] = json!((version + 1).to_string());
        let object = object.clone();
        drop(objects);
        let modified = json!({"type": "MODIFIED", "object": object.clone()});
        let _ = self.events.send(("capacityquotas", modified));
        reply(StatusCode::OK, object)
    }
}

/// RFC 7386: objects merged key by key, null removes, anything else replaces.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(entries) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = json!({});
    }
    let fields = target.as_object_mut().unwrap();
    for (key, value) in entries {
        if value.is_null() {
            fields.remove(key);
        } else {
            merge(fields.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason,
                      "message": message, "code": code});
    reply(StatusCode::from_u16(code).unwrap(), body)
}

fn reply(code: StatusCode, body: Value) -> Response {
    (
        code,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Serves `fake` on a loopback port.
pub async fn serve(fake: Fake) -> std::net::SocketAddr {
    // Lists and watches, one route per resource the source reflects.
    let mut router = Router::new();
    for (path, resource, kind) in [
        ("/api/v1/nodes", "nodes", "NodeList"),
        ("/api/v1/pods", "pods", "PodList"),
        ("/apis/apps/v1/daemonsets", "daemonsets", "DaemonSetList"),
        (
            "/apis/policy/v1/poddisruptionbudgets",
            "pdbs",
            "PodDisruptionBudgetList",
        ),
        ("/api/v1/podtemplates", "podtemplates", "PodTemplateList"),
        ("/apis/apps/v1/deployments", "deployments", "DeploymentList"),
        (
            "/apis/apps/v1/statefulsets",
            "statefulsets",
            "StatefulSetList",
        ),
        ("/apis/apps/v1/replicasets", "replicasets", "ReplicaSetList"),
        ("/apis/batch/v1/jobs", "jobs", "JobList"),
    ] {
        router = router.route(
            path,
            get(
                move |State(f): State<Fake>, RawQuery(q): RawQuery| async move {
                    f.list_or_watch(resource, kind, q)
                },
            ),
        );
    }
    for (resource, kind) in [
        ("deviceclasses", "DeviceClassList"),
        ("resourceclaims", "ResourceClaimList"),
        ("resourceclaimtemplates", "ResourceClaimTemplateList"),
        ("resourceslices", "ResourceSliceList"),
    ] {
        router =
            router.route(
                &format!("/apis/resource.k8s.io/{{version}}/{resource}"),
                get(
                    move |State(f): State<Fake>,
                          Path(version): Path<String>,
                          RawQuery(q): RawQuery| async move {
                        if !f
                            .objects
                            .lock()
                            .unwrap()
                            .dra_versions
                            .contains(&version.as_str())
                        {
                            return status(
                                404,
                                "NotFound",
                                "the server could not find the requested resource",
                            );
                        }
                        f.list_or_watch(resource, kind, q)
                    },
                ),
            );
    }
    let router = router
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/capacitybuffers",
            get(
                |State(f): State<Fake>, Path(version): Path<String>, RawQuery(q): RawQuery| async move {
                    if !f.objects.lock().unwrap().buffer_versions.contains(&version.as_str()) {
                        return status(404, "NotFound", "the server could not find the requested resource");
                    }
                    f.list_or_watch("capacitybuffers", "CapacityBufferList", q)
                },
            ),
        )
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/namespaces/{namespace}/capacitybuffers/{name}/status",
            axum::routing::patch(
                |State(f): State<Fake>, Path(at): Path<(String, String, String)>, body: String| async move {
                    f.patch_status("capacitybuffers", at, &body)
                },
            ),
        )
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/capacityquotas",
            get(
                |State(f): State<Fake>, Path(version): Path<String>, RawQuery(q): RawQuery| async move {
                    if !f.objects.lock().unwrap().quota_versions.contains(&version.as_str()) {
                        return status(404, "NotFound", "the server could not find the requested resource");
                    }
                    f.list_or_watch("capacityquotas", "CapacityQuotaList", q)
                },
            ),
        )
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/capacityquotas/{name}/status",
            axum::routing::patch(
                |State(f): State<Fake>, Path(at): Path<(String, String)>, body: String| async move {
                    f.patch_quota_status(at, &body)
                },
            ),
        )
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/provisioningrequests",
            get(
                |State(f): State<Fake>, Path(version): Path<String>, RawQuery(q): RawQuery| async move {
                    if !f.objects.lock().unwrap().request_versions.contains(&version.as_str()) {
                        return status(404, "NotFound", "the server could not find the requested resource");
                    }
                    f.list_or_watch("provisioningrequests", "ProvisioningRequestList", q)
                },
            ),
        )
        .route(
            "/apis/autoscaling.x-k8s.io/{version}/namespaces/{namespace}/provisioningrequests/{name}/status",
            axum::routing::patch(
                |State(f): State<Fake>, Path(at): Path<(String, String, String)>, body: String| async move {
                    f.patch_status("provisioningrequests", at, &body)
                },
            ),
        )
        .route(
            "/api/v1/nodes/{name}",
            get(|State(f): State<Fake>, Path(name): Path<String>| async move {
                let objects = f.objects.lock().unwrap();
                match objects.nodes.iter().find(|n| n["metadata"]["name"] == name) {
                    Some(node) => reply(StatusCode::OK, node.clone()),
                    None => status(404, "NotFound", "nodes not found"),
                }
            })
            .patch(
                |State(f): State<Fake>, Path(name): Path<String>, body: String| async move {
                    let patch: Value = serde_json::from_str(&body).unwrap();
                    let mut objects = f.objects.lock().unwrap();
                    objects.patches.push((name.clone(), patch.clone()));
                    let node = objects
                        .nodes
                        .iter_mut()
                        .find(|n| n["metadata"]["name"] == name)
                        .unwrap();
                    node["spec"]["taints"] = patch["spec"]["taints"].clone();
                    reply(StatusCode::OK, node.clone())
                },
            ),
        )
        .route(
            "/api/v1/namespaces/{namespace}/pods/{name}/eviction",
            post(
                |State(f): State<Fake>, Path((ns, name)): Path<(String, String)>, body: String| async move {
                    let mut objects = f.objects.lock().unwrap();
                    let key = format!("{ns}/{name}");
                    if objects.refused.contains(&key) {
                        return status(
                            429,
                            "TooManyRequests",
                            "Cannot evict pod as it would violate the pod's disruption budget.",
                        );
                    }
                    if !objects.pods.iter().any(|p| p["metadata"]["name"] == name) {
                        return status(404, "NotFound", "pods not found");
                    }
                    objects.evictions.push((key, serde_json::from_str(&body).unwrap()));
                    let ok = json!({"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201});
                    reply(StatusCode::CREATED, ok)
                },
            ),
        )
        .route(
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            post(|State(f): State<Fake>, body: String| async move {
                let lease: Value = serde_json::from_str(&body).unwrap();
                let mut objects = f.objects.lock().unwrap();
                if objects.lease_outage {
                    return status(500, "InternalError", "etcd is down");
                }
                let name = lease["metadata"]["name"].as_str().unwrap().to_string();
                if objects.leases.contains_key(&name) {
                    return status(409, "AlreadyExists", "leases already exists");
                }
                let mut lease = lease;
                lease["metadata"]["resourceVersion"] = json!("1");
                objects.leases.insert(name, lease.clone());
                reply(StatusCode::CREATED, lease)
            }),
        )
        .route(
            "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}",
            get(|State(f): State<Fake>, Path((_, name)): Path<(String, String)>| async move {
                let objects = f.objects.lock().unwrap();
                if objects.lease_outage {
                    return status(500, "InternalError", "etcd is down");
                }
                match objects.leases.get(&name) {
                    Some(lease) => reply(StatusCode::OK, lease.clone()),
                    None => status(404, "NotFound", "leases not found"),
                }
            })
            .put(
                |State(f): State<Fake>, Path((_, name)): Path<(String, String)>, body: String| async move {
                    let mut lease: Value = serde_json::from_str(&body).unwrap();
                    let mut objects = f.objects.lock().unwrap();
                    if objects.lease_outage {
                        return status(500, "InternalError", "etcd is down");
                    }
                    let Some(stored) = objects.leases.get(&name) else {
                        return status(404, "NotFound", "leases not found");
                    };
                    let version = stored["metadata"]["resourceVersion"].as_str().unwrap();
                    if lease["metadata"]["resourceVersion"] != version {
                        return status(409, "Conflict", "the object has been modified");
                    }
                    let next = version.parse::<u64>().unwrap() + 1;
                    lease["metadata"]["resourceVersion"] = json!(next.to_string());
                    objects.leases.insert(name, lease.clone());
                    reply(StatusCode::OK, lease)
                },
            ),
        )
        .route(
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            post(|State(f): State<Fake>, body: String| async move {
                let event: Value = serde_json::from_str(&body).unwrap();
                f.objects.lock().unwrap().events.push(event.clone());
                reply(StatusCode::CREATED, event)
            }),
        )
        .route(
            "/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}",
            axum::routing::patch(
                |State(f): State<Fake>, Path((_, name)): Path<(String, String)>, body: String| async move {
                    let patch: Value = serde_json::from_str(&body).unwrap();
                    f.objects.lock().unwrap().event_patches.push((name, patch.clone()));
                    reply(StatusCode::OK, patch)
                },
            ),
        )
        .route(
            "/api/v1/namespaces/{namespace}/configmaps",
            get(|State(f): State<Fake>, RawQuery(q): RawQuery| async move {
                f.list_or_watch("configmaps", "ConfigMapList", q)
            })
            .post(|State(f): State<Fake>, body: String| async move {
                let mut map: Value = serde_json::from_str(&body).unwrap();
                map["metadata"]["resourceVersion"] = json!("1");
                let name = map["metadata"]["name"].as_str().unwrap().to_string();
                f.objects.lock().unwrap().config_maps.insert(name, map.clone());
                reply(StatusCode::CREATED, map)
            }),
        )
        .route(
            "/api/v1/namespaces/{namespace}/configmaps/{name}",
            get(|State(f): State<Fake>, Path((_, name)): Path<(String, String)>| async move {
                match f.objects.lock().unwrap().config_maps.get(&name) {
                    Some(map) => reply(StatusCode::OK, map.clone()),
                    None => status(404, "NotFound", "configmaps not found"),
                }
            })
            .put(
                |State(f): State<Fake>, Path((_, name)): Path<(String, String)>, body: String| async move {
                    let mut map: Value = serde_json::from_str(&body).unwrap();
                    let mut objects = f.objects.lock().unwrap();
                    let stored = objects.config_maps.get(&name).unwrap();
                    let version = stored["metadata"]["resourceVersion"].as_str().unwrap().to_string();
                    if map["metadata"]["resourceVersion"] != version.as_str() {
                        return status(409, "Conflict", "the object has been modified");
                    }
                    map["metadata"]["resourceVersion"] = json!((version.parse::<u64>().unwrap() + 1).to_string());
                    objects.config_maps.insert(name, map.clone());
                    reply(StatusCode::OK, map)
                },
            ),
        )
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

impl Fake {
    pub fn new(objects: Objects) -> Fake {
        // Room for a rollout's worth of events sent at once (a lagging watch would end).
        let (events, _) = broadcast::channel(4096);
        Fake {
            objects: Arc::new(Mutex::new(objects)),
            events,
            watches: Arc::new(tokio::sync::watch::Sender::new(Default::default())),
        }
    }

    /// Ends the open watches of `resource` the way an API server does when their resourceVersion is too old
    /// (410 Gone), and waits until the client has listed again and watches anew: its cache then holds what
    /// that list answered.
    pub async fn expire_watches(&self, resource: &'static str) {
        let mut watches = self.watches.subscribe();
        let opened = watches.borrow().get(resource).copied().unwrap_or(0);
        let gone = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
            "status": "Failure", "reason": "Expired", "code": 410,
            "message": "too old resource version"}});
        self.events.send((resource, gone)).expect("a watch is open");
        let relisted = watches.wait_for(|w| w.get(resource).copied().unwrap_or(0) > opened);
        tokio::time::timeout(std::time::Duration::from_secs(10), relisted)
            .await
            .expect("the client lists and watches again")
            .unwrap();
    }

    /// Sends a watch event once the client's watches are open (`watches` of them).
    pub async fn send_when_watched(&self, watches: usize, resource: &'static str, event: Value) {
        for _ in 0..250 {
            if self.events.receiver_count() >= watches {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        self.events
            .send((resource, event))
            .expect("a watch is open");
    }
}

/// Serves `objects` and connects the kube-rs source to it, its caches filled.
pub async fn connect(objects: Objects) -> (ekscale::autoscaler::control::Kube, Fake) {
    ekscale::tls::install_crypto_provider();
    let fake = Fake::new(objects);
    let addr = serve(fake.clone()).await;
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let connecting = ekscale::autoscaler::control::Kube::connect(config, Default::default());
    let kube = tokio::time::timeout(std::time::Duration::from_secs(10), connecting)
        .await
        .expect("the caches fill")
        .unwrap();
    (kube, fake)
}

/// A kubeconfig pointing at `addr`.
pub fn kubeconfig(addr: std::net::SocketAddr) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: 'http://{addr}'}}}}]\n\
         users: [{{name: u, user: {{}}}}]\ncontexts: [{{name: c, context: {{cluster: fake, user: u}}}}]\n\
         current-context: c\n"
    )
}

/// A pod the scheduler marked Unschedulable.
pub fn unschedulable(name: &str, version: &str) -> Value {
    let mut pod = pod(name, None);
    pod["metadata"]["resourceVersion"] = json!(version);
    pod["status"]["conditions"] =
        json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]);
    pod
}

/// A kube client of the fake API server `fake`, served on a loopback port, without retries.
pub async fn client(fake: &Fake) -> kube::Client {
    let addr = serve(fake.clone()).await;
    let mut config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}
