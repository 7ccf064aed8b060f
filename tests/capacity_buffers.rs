//! CapacityBuffers (autoscaling.x-k8s.io), as cluster-autoscaler 1.34 and Karpenter read them: over a fake
//! API server at the HTTP layer, every valid and invalid spec gets the status a user of upstream would read,
//! written once to the status subresource in the version served; chunks follow a Deployment's replicas; real
//! pods take a buffer's room before a node is asked for, and nothing is evicted for a chunk. Over a snapshot,
//! `simulate` decides for a buffer exactly as for the equivalent `--headroom-config` policy.

mod common;

use common::cluster::{list, nodes_of, scale_ups, simulate_json};
use common::kube_api::{self, Fake, Objects, node};
use common::{Binary, Server};
use ekscale::autoscaler::ClusterSource;
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::control::Kube;
use ekscale::autoscaler::headroom::ReadyReplicas;
use ekscale::autoscaler::status::{CapacityBufferStatus, Status};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SCENARIO: &str = "
cluster: buffers
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}
";

fn buffer(version: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("autoscaling.x-k8s.io/{version}"), "kind": "CapacityBuffer",
           "metadata": {"name": name, "namespace": "default", "generation": 1, "resourceVersion": "1",
                        "uid": format!("uid-{name}")},
           "spec": spec})
}

fn deployment(replicas: u32, version: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default", "resourceVersion": version},
           "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "web",
                                          "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}}})
}

fn template() -> Value {
    json!({"apiVersion": "v1", "kind": "PodTemplate",
           "metadata": {"name": "chunk", "namespace": "default", "generation": 4, "resourceVersion": "1"},
           "template": {"spec": {"containers": [{"name": "c",
                        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}})
}

/// The provider's one general instance as the API server's one node (2 CPU, 8Gi, no taints).
async fn cluster(objects: Objects) -> (Server, ProviderClient, Arc<Kube>, Fake) {
    let provider = Server::start_with(SCENARIO, None).await;
    let client =
        ProviderClient::new(&ProviderConfig::plaintext(provider.addr.to_string())).unwrap();
    let instance = client.nodes("general").await.unwrap().remove(0);
    let mut n = node("node-0");
    n["spec"]["providerID"] = json!(instance.id);
    n["spec"]["taints"] = json!([]);
    n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = json!("general");
    let (kube, fake) = kube_api::connect(Objects {
        nodes: vec![n],
        ..objects
    })
    .await;
    (provider, client, Arc::new(kube), fake)
}

fn acting() -> Settings {
    Settings {
        act: true,
        ..Settings::default()
    }
}

fn of<'a>(status: &'a Status, name: &str) -> &'a CapacityBufferStatus {
    (status.capacity_buffers.iter().find(|b| b.name == name))
        .unwrap_or_else(|| panic!("no buffer {name}: {:?}", status.capacity_buffers))
}

/// `type status reason` of each condition.
fn conditions(b: &CapacityBufferStatus) -> Vec<String> {
    (b.conditions.iter())
        .map(|c| format!("{} {} {}", c.kind, c.status, c.reason))
        .collect()
}

#[tokio::test]
async fn every_spec_gets_upstreams_status_written_once_in_the_version_served() {
    let web = json!({"apiGroup": "apps", "kind": "Deployment", "name": "web"});
    let chunk = json!({"name": "chunk"});
    let buffers = vec![
        buffer(
            "v1beta1",
            "web-burst",
            json!({"scalableRef": web, "percentage": 50}),
        ),
        buffer(
            "v1beta1",
            "spare",
            json!({"podTemplateRef": chunk, "replicas": 1}),
        ),
        buffer(
            "v1beta1",
            "both",
            json!({"podTemplateRef": chunk, "scalableRef": web, "replicas": 1}),
        ),
        buffer("v1beta1", "neither", json!({"replicas": 1})),
        buffer(
            "v1beta1",
            "no-template",
            json!({"podTemplateRef": {"name": "gone"}, "replicas": 1}),
        ),
        buffer(
            "v1beta1",
            "share-of-nothing",
            json!({"podTemplateRef": chunk, "percentage": 10}),
        ),
        buffer(
            "v1beta1",
            "standby",
            json!({"podTemplateRef": chunk, "replicas": 1,
                                            "provisioningStrategy": "example.com/standby"}),
        ),
        buffer(
            "v1beta1",
            "tight",
            json!({"podTemplateRef": chunk, "replicas": 2, "limits": {"cpu": "500m"}}),
        ),
    ];
    let (_provider, client, kube, fake) = cluster(Objects {
        buffer_versions: vec!["v1beta1", "v1alpha1"],
        capacity_buffers: buffers,
        pod_templates: vec![template()],
        deployments: vec![deployment(2, "1")],
        ..Objects::default()
    })
    .await;
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);

    // 50% of web's 2 replicas: one 500m chunk; one 1-CPU chunk of the PodTemplate. Both fit on node-0.
    let burst = of(&status, "web-burst");
    assert_eq!(
        (burst.desired_chunks, burst.in_free_room, burst.unmet),
        (1, 1, 0)
    );
    let shape = burst.chunk.as_ref().unwrap();
    assert_eq!((shape.cpu.as_str(), shape.memory.as_str()), ("500m", "1Gi"));
    assert_eq!(
        conditions(burst),
        [
            "ReadyForProvisioning True AttributesSetSuccessfully",
            "Provisioning True FakePodsInjected"
        ]
    );
    assert_eq!(of(&status, "spare").in_free_room, 1);
    assert!(status.scale_up.is_empty(), "{:?}", status.scale_up);
    for (name, expected) in [
        ("both", "not both"),
        ("neither", "give podTemplateRef or scalableRef"),
        ("no-template", "PodTemplate default/gone not found"),
        ("share-of-nothing", "needs scalableRef"),
    ] {
        let b = of(&status, name);
        assert_eq!(
            conditions(b),
            [
                "ReadyForProvisioning False error",
                "Provisioning False NotReadyForProvisioning"
            ],
            "{name}"
        );
        assert!(
            b.conditions[0].message.contains(expected),
            "{name}: {:?}",
            b.conditions
        );
        assert_eq!(b.desired_chunks, 0);
    }
    assert_eq!(
        conditions(of(&status, "standby")),
        ["Provisioning False UnsupportedProvisioningStrategy"]
    );
    assert_eq!(
        conditions(of(&status, "tight")),
        [
            "ReadyForProvisioning True AttributesSetSuccessfully",
            "Provisioning False BufferIsEmpty"
        ]
    );

    // Written once each, to the status subresource of v1beta1, the version preferred.
    let writes = fake.objects.lock().unwrap().status_writes.clone();
    assert_eq!(writes.len(), 8, "{writes:#?}");
    assert!(writes.iter().all(|(version, _, _)| version == "v1beta1"));
    let spare = &writes.iter().find(|w| w.1 == "default/spare").unwrap().2["status"];
    assert_eq!(spare["podTemplateRef"], json!({"name": "chunk"}));
    assert_eq!(spare["podTemplateGeneration"], 4);
    assert_eq!(spare["replicas"], 1);
    assert_eq!(
        spare["provisioningStrategy"],
        "buffer.x-k8s.io/active-capacity"
    );
    assert_eq!(spare["conditions"][0]["observedGeneration"], 1);
    let tight = &writes.iter().find(|w| w.1 == "default/tight").unwrap().2["status"];
    assert_eq!(tight["replicas"], 0);
    // readyReplicas, as cluster-autoscaler 1.37 writes it: the chunks on nodes the cluster has, for every
    // buffer the loop took (an empty one's is 0); none for another strategy's or one never ready.
    let ready = |name: &str| {
        let write = writes.iter().find(|w| w.1 == format!("default/{name}"));
        write.unwrap().2["status"].get("readyReplicas").cloned()
    };
    assert_eq!(
        [
            "web-burst",
            "spare",
            "tight",
            "standby",
            "both",
            "no-template"
        ]
        .map(ready),
        [
            Some(json!(1)),
            Some(json!(1)),
            Some(json!(0)),
            None,
            None,
            None
        ]
    );

    // The cache takes the statuses written (a relist of what the API server holds now); the next loop
    // finds nothing changed and writes nothing.
    fake.expire_watches("capacitybuffers").await;
    let view = kube.view().await.unwrap();
    assert!(
        view.buffers
            .buffers
            .iter()
            .all(|b| b.buffer.status.is_some())
    );
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    assert_eq!(fake.objects.lock().unwrap().status_writes.len(), 8);
}

#[tokio::test]
async fn chunks_follow_the_deployment_and_real_pods_take_their_room_first() {
    let web = json!({"apiGroup": "apps", "kind": "Deployment", "name": "web"});
    let (_provider, client, kube, fake) = cluster(Objects {
        // Only v1alpha1 is served: buffers are read, and their status written, as v1alpha1.
        buffer_versions: vec!["v1alpha1"],
        capacity_buffers: vec![buffer(
            "v1alpha1",
            "web-burst",
            json!({"scalableRef": web, "percentage": 50}),
        )],
        deployments: vec![deployment(2, "1")],
        ..Objects::default()
    })
    .await;
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert_eq!(of(&status, "web-burst").in_free_room, 1);

    // The HPA scales web to 6: three 500m chunks, which still fit on node-0's 2 CPUs.
    fake.objects.lock().unwrap().deployments = vec![deployment(6, "2")];
    fake.expire_watches("deployments").await;
    let view = kube.view().await.unwrap();
    assert_eq!(view.buffers.scalables[0].replicas, 6);
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    let burst = of(&status, "web-burst");
    assert_eq!(
        (burst.desired_chunks, burst.in_free_room, burst.in_scale_up),
        (3, 3, 0)
    );
    let writes = fake.objects.lock().unwrap().status_writes.clone();
    assert_eq!(writes.last().unwrap().2["status"]["replicas"], 3);
    assert!(writes.iter().all(|(version, _, _)| version == "v1alpha1"));

    // A real pod that needs the buffer's room arrives: it is placed there, and the chunks it displaces are
    // what a new node is asked for. Nothing is evicted for a chunk.
    let mut pod = kube_api::unschedulable("api-0", "20");
    pod["spec"]["containers"][0]["resources"]["requests"] =
        json!({"cpu": "1500m", "memory": "1Gi"});
    pod["metadata"]["labels"] = json!({"app": "api"});
    let added = json!({"type": "ADDED", "object": pod});
    fake.events.send(("pods", added)).unwrap();
    // The source says when an unschedulable pod is in its cache: that is the loop's own trigger.
    tokio::time::timeout(Duration::from_secs(10), kube.unschedulable_pod())
        .await
        .expect("the pod reaches the cache");
    let view = kube.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    let placed: Vec<&str> = status.placed.iter().map(|p| p.pod.as_str()).collect();
    assert!(placed.contains(&"default/api-0"), "{placed:?}");
    assert_eq!(status.scale_up.len(), 1, "{:?}", status.scale_up);
    let for_whom: Vec<String> = status.scale_up[0].pods.iter().map(str::to_string).collect();
    assert!(
        for_whom
            .iter()
            .all(|p| p.starts_with("default/capacity-buffer-web-burst-")),
        "{for_whom:?}"
    );
    // 500m is left beside api-0: one chunk stays there, two go to the new node.
    let burst = of(&status, "web-burst");
    assert_eq!((burst.in_free_room, burst.in_scale_up), (1, 2), "{burst:?}");
    assert!(fake.objects.lock().unwrap().evictions.is_empty());
}

/// A cluster without the CRD: no buffer watches, no buffers, nothing written.
#[tokio::test]
async fn a_cluster_without_the_crd_has_no_buffers() {
    let (_provider, client, kube, fake) = cluster(Objects::default()).await;
    let view = kube.view().await.unwrap();
    assert!(view.buffers.buffers.is_empty());
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.capacity_buffers.is_empty());
    let watched = fake.watches.borrow().clone();
    assert!(
        !watched.contains_key("capacitybuffers") && !watched.contains_key("deployments"),
        "{watched:?}"
    );
}

/// `simulate` over a snapshot with a buffer decides as it does for the same room as a `--headroom-config`
/// policy (tests/simulate.rs works the numbers out: 2 chunks fit beside the pods, 3 need 3 nodes).
#[test]
fn simulate_decides_for_a_buffer_as_for_the_equivalent_headroom_policy() {
    let provider = Binary::start(&[]);
    let mut snapshot: Value = serde_norway::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/scaledown.yaml"
        ))
        .unwrap(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("headroom.yaml");
    std::fs::write(
        &config,
        "headroom:\n  - {name: buffer, nodeGroup: general, pods: 5, shape: {cpu: '1', memory: 2Gi}}\n",
    )
    .unwrap();
    let by_policy = simulate_json(
        provider.grpc,
        &snapshot,
        &["--headroom-config", config.to_str().unwrap()],
    );

    let items = snapshot["items"].as_array_mut().unwrap();
    items.push(json!({"apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default", "generation": 1},
        "template": {"spec": {"nodeSelector": {"eks.amazonaws.com/nodegroup": "general"},
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}}));
    items.push(buffer(
        "v1beta1",
        "buffer",
        json!({"podTemplateRef": {"name": "chunk"}, "replicas": 5}),
    ));
    let by_buffer = simulate_json(provider.grpc, &snapshot, &[]);

    assert_eq!(scale_ups(&by_buffer), scale_ups(&by_policy));
    assert_eq!(scale_ups(&by_buffer), [("general".to_string(), 3)]);
    assert_eq!(by_buffer["scaleDown"], by_policy["scaleDown"]);
    let policy = &by_policy["headroom"][0];
    let buffer = &by_buffer["capacityBuffers"][0];
    assert_eq!(
        (
            &buffer["inFreeRoom"],
            &buffer["inScaleUp"],
            &buffer["unmet"]
        ),
        (&policy["placed"], &policy["scaleUp"], &policy["unmet"]),
        "{by_buffer:#}"
    );
    assert_eq!(buffer["desiredChunks"], 5);
    assert_eq!(buffer["chunk"], json!({"cpu": "1", "memory": "2Gi"}));
    assert_eq!(
        buffer["conditions"][1],
        json!({"type": "Provisioning", "status": "True",
        "reason": "FakePodsInjected", "message": "5 chunk(s) kept free"})
    );
}

/// A buffer of five 600m chunks where node-0's 2 CPUs hold three: `readyReplicas` 3 is written with the rest
/// of its status, and the loop's status says so; chunks on the node still coming are not counted, and
/// nothing is written again while the count holds. With
/// `--capacity-buffer-ready-replicas-enabled=false` the status written has no `readyReplicas`.
#[tokio::test]
async fn ready_replicas_count_the_chunks_that_fit_on_the_nodes_there_are() {
    let mut chunk = template();
    chunk["template"]["spec"]["containers"][0]["resources"]["requests"] =
        json!({"cpu": "600m", "memory": "1Gi"});
    let objects = || Objects {
        buffer_versions: vec!["v1beta1"],
        capacity_buffers: vec![buffer(
            "v1beta1",
            "spare",
            json!({"podTemplateRef": {"name": "chunk"}, "replicas": 5}),
        )],
        pod_templates: vec![chunk.clone()],
        ..Objects::default()
    };
    let (_provider, client, kube, fake) = cluster(objects()).await;
    let mut once = RunOnce::new(client, acting()).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    let spare = of(&status, "spare");
    assert_eq!(
        (spare.desired_chunks, spare.in_free_room, spare.in_scale_up),
        (5, 3, 2)
    );
    assert_eq!(spare.ready_replicas, Some(3));
    let writes = fake.objects.lock().unwrap().status_writes.clone();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].2["status"]["readyReplicas"], 3);
    assert_eq!(writes[0].2["status"]["replicas"], 5);
    // The API server holds it now. The next loop finds the node asked for still coming, with room for the
    // other two: they are in free room, but not ready; the count holds and nothing is written.
    fake.expire_watches("capacitybuffers").await;
    let view = kube.view().await.unwrap();
    let held = view.buffers.buffers[0].buffer.status.as_ref().unwrap();
    assert_eq!(held.ready_replicas, Some(3));
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    let spare = of(&status, "spare");
    assert_eq!((spare.in_free_room, spare.ready_replicas), (5, Some(3)));
    assert_eq!(fake.objects.lock().unwrap().status_writes.len(), 1);

    let (_provider, client, kube, fake) = cluster(objects()).await;
    let settings = Settings {
        capacity_buffer_ready_replicas: ReadyReplicas::Left,
        ..acting()
    };
    let mut once = RunOnce::new(client, settings).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    let status = once.run(&view, SystemTime::now()).await.unwrap();
    assert_eq!(of(&status, "spare").ready_replicas, None);
    let writes = fake.objects.lock().unwrap().status_writes.clone();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].2["status"]["replicas"], 5);
    assert!(
        writes[0].2["status"].get("readyReplicas").is_none(),
        "{writes:#?}"
    );
}

/// `simulate` over a snapshot with one of general's two instances registered: eight 500m chunks, three on
/// the node there is (its 1930m of allocatable CPU), three on the upcoming one, two in a new node. Only the
/// three on the registered node are ready, as cluster-autoscaler 1.37 counts; with the flag off the field
/// is left out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulate_reports_ready_replicas_on_registered_nodes_only() {
    let two = SCENARIO.replace("desiredSize: 1", "desiredSize: 2");
    let provider = Server::start_with(&two, None).await;
    let mut items = nodes_of(provider.addr, &["general"]).await;
    items.truncate(1);
    items.push(json!({"apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "chunk", "namespace": "default", "generation": 1},
        "template": {"spec": {"containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}}));
    items.push(buffer(
        "v1beta1",
        "spare",
        json!({"podTemplateRef": {"name": "chunk"}, "replicas": 8}),
    ));
    let snapshot = list(items);
    let result = simulate_json(provider.addr, &snapshot, &[]);
    let spare = &result["capacityBuffers"][0];
    assert_eq!(
        (
            &spare["desiredChunks"],
            &spare["inFreeRoom"],
            &spare["inScaleUp"]
        ),
        (&json!(8), &json!(6), &json!(2)),
        "{result:#}"
    );
    assert_eq!(spare["readyReplicas"], 3, "{result:#}");
    let off = ["--capacity-buffer-ready-replicas-enabled=false"];
    let result = simulate_json(provider.addr, &snapshot, &off);
    let spare = &result["capacityBuffers"][0];
    assert_eq!(spare["inFreeRoom"], 6, "{result:#}");
    assert!(spare.get("readyReplicas").is_none(), "{result:#}");
}
