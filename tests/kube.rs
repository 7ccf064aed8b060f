//! The kube-rs cluster source against a fake API server on loopback, at the HTTP layer: lists and watches
//! fill the caches, a pod turning Unschedulable wakes the loop, taints are patched against the version read,
//! evictions get the API server's 201, 429 (a PDB) and 404.

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ekscale::autoscaler::cluster::{ClusterError, ClusterSource};
use ekscale::autoscaler::kube::Kube;
use ekscale::model::{Taint, TaintEffect};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::broadcast;

#[derive(Default)]
struct Objects {
    nodes: Vec<Value>,
    pods: Vec<Value>,
    pdbs: Vec<Value>,
    patches: Vec<(String, Value)>,
    evictions: Vec<(String, Value)>,
    /// Pods whose eviction a PDB refuses.
    refused: Vec<String>,
}

#[derive(Clone)]
struct Fake {
    objects: Arc<Mutex<Objects>>,
    /// Watch events: (resource, event).
    events: broadcast::Sender<(&'static str, Value)>,
}

fn node(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "resourceVersion": "7", "labels": {"kubernetes.io/hostname": name}},
           "spec": {"providerID": format!("aws:///us-east-1a/i-{name}"),
                    "taints": [{"key": "team", "value": "web", "effect": "NoSchedule"}]},
           "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "29"},
                      "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn pod(name: &str, node: Option<&str>) -> Value {
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
        if query.unwrap_or_default().contains("watch=true") {
            let receiver = self.events.subscribe();
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
        let objects = self.objects.lock().unwrap();
        let items = match resource {
            "nodes" => objects.nodes.clone(),
            "pods" => objects.pods.clone(),
            _ => objects.pdbs.clone(),
        };
        reply(
            StatusCode::OK,
            json!({"kind": kind, "apiVersion": "v1", "metadata": {"resourceVersion": "10"}, "items": items}),
        )
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

async fn serve(fake: Fake) -> std::net::SocketAddr {
    let router = Router::new()
        .route(
            "/api/v1/nodes",
            get(|State(f): State<Fake>, RawQuery(q): RawQuery| async move {
                f.list_or_watch("nodes", "NodeList", q)
            }),
        )
        .route(
            "/api/v1/pods",
            get(|State(f): State<Fake>, RawQuery(q): RawQuery| async move {
                f.list_or_watch("pods", "PodList", q)
            }),
        )
        .route(
            "/apis/policy/v1/poddisruptionbudgets",
            get(|State(f): State<Fake>, RawQuery(q): RawQuery| async move {
                f.list_or_watch("pdbs", "PodDisruptionBudgetList", q)
            }),
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
        .with_state(fake);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    addr
}

async fn source(objects: Objects) -> (Kube, Fake) {
    ekscale::tls::install_crypto_provider();
    let (events, _) = broadcast::channel(16);
    let fake = Fake {
        objects: Arc::new(Mutex::new(objects)),
        events,
    };
    let addr = serve(fake.clone()).await;
    let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
    let kube = tokio::time::timeout(Duration::from_secs(10), Kube::connect(config))
        .await
        .expect("the caches fill")
        .unwrap();
    (kube, fake)
}

#[tokio::test]
async fn lists_fill_the_view_and_watches_keep_it_current() {
    let objects = Objects {
        nodes: vec![node("a"), node("b")],
        pods: vec![pod("web-0", Some("a")), pod("web-1", None)],
        pdbs: vec![
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"selector": {"matchLabels": {"app": "web"}}},
                          "status": {"disruptionsAllowed": 1, "currentHealthy": 1, "desiredHealthy": 1,
                                     "expectedPods": 2}}),
        ],
        ..Objects::default()
    };
    let (kube, fake) = source(objects).await;
    let view = kube.view().await.unwrap();
    assert_eq!(view.nodes.len(), 2);
    assert_eq!(view.nodes[0].allocatable.cpu_millis, 2000);
    assert_eq!(view.pods.len(), 2);
    assert_eq!(view.pdbs[0].disruptions_allowed, 1);

    // web-1 turns Unschedulable: the watch updates the cache and wakes the loop (once the three watches are
    // open).
    for _ in 0..100 {
        if fake.events.receiver_count() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut web1 = pod("web-1", None);
    web1["metadata"]["resourceVersion"] = json!("11");
    web1["status"]["conditions"] =
        json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]);
    fake.events
        .send(("pods", json!({"type": "MODIFIED", "object": web1})))
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), kube.unschedulable_pod())
        .await
        .expect("an unschedulable pod wakes the loop");
    let view = kube.view().await.unwrap();
    let web1 = view.pods.iter().find(|p| p.name == "web-1").unwrap();
    assert!(web1.unschedulable);
    assert!(
        web1.json.is_some(),
        "pending pods keep their JSON for MatchPod"
    );
}

#[tokio::test]
async fn taints_are_patched_against_the_version_read_and_evictions_answer_as_the_api_does() {
    let objects = Objects {
        nodes: vec![node("a")],
        pods: vec![pod("web-0", Some("a")), pod("web-1", Some("a"))],
        refused: vec!["default/web-1".into()],
        ..Objects::default()
    };
    let (kube, fake) = source(objects).await;
    let taint = Taint {
        key: "ToBeDeletedByClusterAutoscaler".into(),
        value: "1700000000".into(),
        effect: TaintEffect::NoSchedule,
    };
    kube.taint("a", &taint).await.unwrap();
    kube.untaint("a", "ToBeDeletedByClusterAutoscaler")
        .await
        .unwrap();
    // Untainting again changes nothing and sends nothing.
    kube.untaint("a", "ToBeDeletedByClusterAutoscaler")
        .await
        .unwrap();
    let patches = fake.objects.lock().unwrap().patches.clone();
    assert_eq!(patches.len(), 2, "{patches:?}");
    assert_eq!(patches[0].1["metadata"]["resourceVersion"], "7");
    assert_eq!(
        patches[0].1["spec"]["taints"],
        json!([{"key": "team", "value": "web", "effect": "NoSchedule"},
               {"key": "ToBeDeletedByClusterAutoscaler", "value": "1700000000", "effect": "NoSchedule"}])
    );
    assert_eq!(
        patches[1].1["spec"]["taints"],
        json!([{"key": "team", "value": "web", "effect": "NoSchedule"}]),
        "the other taint is kept"
    );
    assert!(matches!(
        kube.taint("gone", &taint).await,
        Err(ClusterError::NoNode(_))
    ));

    kube.evict("default", "web-0", Duration::from_secs(30))
        .await
        .unwrap();
    let evictions = fake.objects.lock().unwrap().evictions.clone();
    assert_eq!(evictions[0].0, "default/web-0");
    assert_eq!(evictions[0].1["kind"], "Eviction");
    assert_eq!(evictions[0].1["deleteOptions"]["gracePeriodSeconds"], 30);
    match kube
        .evict("default", "web-1", Duration::from_secs(30))
        .await
    {
        Err(ClusterError::EvictionRefused { pod, why }) => {
            assert_eq!(pod, "default/web-1");
            assert!(why.contains("disruption budget"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        kube.evict("default", "nobody", Duration::from_secs(30))
            .await,
        Err(ClusterError::NoPod(_))
    ));
}
