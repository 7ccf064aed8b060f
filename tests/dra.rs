//! Dynamic Resource Allocation's objects reach the loop's view from every source that reads a cluster: a
//! snapshot file, and the API server's watches (only where it serves `resource.k8s.io`, each event
//! converted once), objects the API server would refuse left out; pods that claim devices are alike only
//! when their claims are; and one companion's next loop plans on the slice, class or claim that changed,
//! not on what it kept from the loop before.

mod common;

use common::kube_api::{self, Objects, node, pod};
use ekscale::autoscaler::{
    ClusterSource, ClusterView, ProviderClient, ProviderConfig, RunOnce, Settings, Snapshot,
};
use ekscale::model::{
    Alike, ClaimSource, DraObjects, LabelProjection, Node, Pod, PodClaim, PodDra, Resources,
    SchedulingIds,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn class() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}})
}

fn claim(name: &str, count: i64) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}]}}})
}

fn template() -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu",
            "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})
}

fn slice(node: &str) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpu.nvidia.com")},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"}},
                "capacity": {"memory": {"value": "23028Mi"}}}]}})
}

/// A pending pod of ReplicaSet `trainer-1` with `claims` (`spec.resourceClaims`) and, for its template
/// claims, the names the claim controller made them under.
fn claiming(name: &str, claims: Value, made: Value) -> Value {
    let mut pod = pod(name, None);
    pod["metadata"]["uid"] = json!(format!("uid-{name}"));
    pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "name": "trainer-1", "uid": "rs-1", "controller": true}]);
    pod["spec"]["resourceClaims"] = claims;
    pod["status"]["resourceClaimStatuses"] = made;
    pod
}

#[tokio::test]
async fn the_api_servers_dra_objects_and_pod_claims_reach_the_view() {
    let objects = Objects {
        nodes: vec![node("a")],
        pods: vec![claiming(
            "trainer-0",
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                   {"name": "shared", "resourceClaimName": "shared-gpu"}]),
            json!([{"name": "gpu", "resourceClaimName": "trainer-0-gpu-x7k2p"}]),
        )],
        dra_versions: vec!["v1"],
        device_classes: vec![class()],
        resource_claims: vec![claim("shared-gpu", 1), claim("broken", -1)],
        resource_claim_templates: vec![template()],
        resource_slices: vec![slice("a")],
        ..Objects::default()
    };
    let (kube, _fake) = kube_api::connect(objects).await;
    let view = kube.view().await.unwrap();
    let dra = &view.dra;
    assert_eq!(&*dra.classes[0].name, "gpu.nvidia.com");
    assert_eq!(&*dra.templates[0].name, "one-gpu");
    let claims: Vec<&str> = dra.claims.iter().map(|c| &*c.name).collect();
    assert_eq!(
        claims,
        ["shared-gpu"],
        "the refused claim is left out, the rest read"
    );
    assert_eq!(&*dra.slices[0].pool.name, "a");
    let pod = &view.pods[0];
    assert_eq!(pod.uid().map(|u| &**u), Some("uid-trainer-0"));
    assert_eq!(
        pod.claims()[0].source,
        ClaimSource::Template {
            template: "one-gpu".into(),
            made: Some("trainer-0-gpu-x7k2p".into())
        }
    );
    assert_eq!(
        pod.claims()[1].source,
        ClaimSource::Claim("shared-gpu".into())
    );
}

/// A Kubernetes 1.33 serves `resource.k8s.io` in v1beta2 only, with the same fields: read as v1 is.
#[tokio::test]
async fn a_cluster_serving_v1beta2_is_read_in_it() {
    let beta = |mut object: Value| {
        object["apiVersion"] = json!("resource.k8s.io/v1beta2");
        object
    };
    let objects = Objects {
        nodes: vec![node("a")],
        dra_versions: vec!["v1beta2"],
        device_classes: vec![beta(class())],
        resource_slices: vec![beta(slice("a"))],
        ..Objects::default()
    };
    let (kube, _fake) = kube_api::connect(objects).await;
    let view = kube.view().await.unwrap();
    assert_eq!(&*view.dra.classes[0].name, "gpu.nvidia.com");
    assert_eq!(&*view.dra.slices[0].devices[0].name, "gpu-0");
}

#[tokio::test]
async fn a_cluster_without_dra_has_none_in_its_view() {
    let objects = Objects {
        nodes: vec![node("a")],
        // Served by nothing: the source must not ask for them (404) or fail.
        resource_slices: vec![slice("a")],
        ..Objects::default()
    };
    let (kube, _fake) = kube_api::connect(objects).await;
    let view = kube.view().await.unwrap();
    assert!(view.dra.is_empty());
    assert_eq!(view.nodes.len(), 1);
}

#[tokio::test]
async fn a_snapshots_dra_objects_reach_the_view() {
    let items = [
        class(),
        template(),
        claim("shared-gpu", 1),
        claim("broken", 0),
        slice("a"),
    ];
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), list.to_string()).unwrap();
    let view = Snapshot::read(file.path()).unwrap().view().await.unwrap();
    assert_eq!(view.dra.classes.len(), 1);
    assert_eq!(view.dra.templates.len(), 1);
    let claims: Vec<&str> = view.dra.claims.iter().map(|c| &*c.name).collect();
    assert_eq!(
        claims,
        ["shared-gpu", "broken"],
        "count 0 is defaulted to 1, as the API server does"
    );
    assert_eq!(view.dra.slices.len(), 1);
}

/// Pods of one ReplicaSet, each with its own claim from the same template, are alike (one is scaled up for
/// as for all); pods naming different shared claims are not, nor a pod without claims.
#[test]
fn pods_are_alike_only_when_their_claims_are() {
    let read = |pod: Value| -> Pod {
        ekscale::k8s::pod_from_api(
            &serde_json::from_value(pod).unwrap(),
            ekscale::k8s::PodJson::KeepIfPending,
        )
        .unwrap()
    };
    let from_template = |name: &str| {
        read(claiming(
            name,
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]),
            json!([{"name": "gpu", "resourceClaimName": format!("{name}-gpu-abcde")}]),
        ))
    };
    let shared = |name: &str, claim: &str| {
        read(claiming(
            name,
            json!([{"name": "gpu", "resourceClaimName": claim}]),
            json!([]),
        ))
    };
    let mut pods = vec![
        from_template("trainer-0"),
        from_template("trainer-1"),
        shared("trainer-2", "gpu-a"),
        shared("trainer-3", "gpu-b"),
        shared("trainer-4", "gpu-a"),
        read(claiming("trainer-5", json!([]), json!([]))),
    ];
    let mut alike = Alike::default();
    for pod in &mut pods {
        alike.share(pod);
    }
    // Labels aside (each pod's own name may be one): what the claims make of them is what is compared.
    let projection = LabelProjection::Keys(Vec::new());
    let mut ids = SchedulingIds::default();
    let keys: Vec<_> = (pods.iter())
        .map(|p| p.equivalence_key(&projection, &mut ids))
        .collect();
    assert!(
        keys[0] == keys[1],
        "one template, claims made under different names"
    );
    assert!(keys[2] == keys[4], "the same shared claim");
    assert!(keys[2] != keys[3], "different shared claims");
    assert!(keys[0] != keys[2] && keys[0] != keys[5] && keys[2] != keys[5]);
}

/// Objects that change after the first list (a slice added, a class's selector changed) reach the next
/// view, and those no event touched are handed over as they were: the same `Arc`, converted once when it
/// was listed, not again for every loop (which is what lets the loop's DRA state take them as unchanged).
#[tokio::test]
async fn dra_watch_events_after_the_first_list_reach_the_next_view() {
    let objects = Objects {
        nodes: vec![node("a"), node("b")],
        dra_versions: vec!["v1"],
        device_classes: vec![class()],
        resource_claim_templates: vec![template()],
        resource_slices: vec![slice("a")],
        ..Objects::default()
    };
    let (kube, fake) = kube_api::connect(objects).await;
    let first = kube.view().await.unwrap();
    let slices = |view: &ClusterView| -> Vec<String> {
        (view.dra.slices.iter())
            .map(|s| s.name.to_string())
            .collect()
    };
    assert_eq!(slices(&first), ["a-gpu.nvidia.com"]);

    // Each watch opens once its list is applied: send the events when both are open.
    let mut opened = fake.watches.subscribe();
    let watching = opened.wait_for(|w| {
        w.get("resourceslices").is_some_and(|&n| n > 0)
            && w.get("deviceclasses").is_some_and(|&n| n > 0)
    });
    tokio::time::timeout(Duration::from_secs(5), watching)
        .await
        .expect("the DRA watches open")
        .unwrap();
    // A watch event carries the object's resourceVersion (the watch resumes from it).
    let mut added = slice("b");
    added["metadata"]["resourceVersion"] = json!("11");
    let mut changed = class();
    changed["metadata"]["resourceVersion"] = json!("12");
    changed["spec"]["selectors"] = json!([{"cel": {"expression": "device.driver == 'gpu.nvidia.com' && \
        device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]);
    let events = [
        ("resourceslices", json!({"type": "ADDED", "object": added})),
        (
            "deviceclasses",
            json!({"type": "MODIFIED", "object": changed}),
        ),
    ];
    for (resource, event) in events {
        fake.events
            .send((resource, event))
            .expect("a watch is open");
    }
    let next = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let view = kube.view().await.unwrap();
            if view.dra.slices.len() == 2 && view.dra.classes[0].selectors[0].contains("type") {
                return view;
            }
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the events reach the view");
    assert_eq!(slices(&next), ["a-gpu.nvidia.com", "b-gpu.nvidia.com"]);
    assert!(!Arc::ptr_eq(&first.dra.classes[0], &next.dra.classes[0]));
    assert!(
        Arc::ptr_eq(&first.dra.slices[0], &next.dra.slices[0]),
        "the slice no event touched is the one converted at the list"
    );
    assert!(Arc::ptr_eq(&first.dra.templates[0], &next.dra.templates[0]));
}

/// A node `gpu-a` whose slice (generation `generation`) has one GPU of `product`.
fn gpu_slice(product: &str, generation: i64) -> Value {
    json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "gpu-a-gpu.nvidia.com"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "gpu-a",
            "pool": {"name": "gpu-a", "generation": generation, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0", "attributes": {"type": {"string": "gpu"},
                "productName": {"string": product}}, "capacity": {"memory": {"value": "15Gi"}}}]}})
}

/// The DRA objects of one loop: NVIDIA's class selecting devices of `class_type`, a template asking for a
/// Tesla T4, `gpu-a`'s slice, and a claim holding its GPU when `held`.
fn loop_objects(product: &str, generation: i64, class_type: &str, held: bool) -> DraObjects {
    let class = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"selectors": [{"cel": {"expression": format!(
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == '{class_type}'"
    )}}]}});
    let template = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t4", "namespace": "ml"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "selectors": [{"cel": {"expression":
                "device.attributes['gpu.nvidia.com'].productName == 'Tesla T4'"}}]}}]}}}});
    let mut objects = DraObjects {
        classes: vec![Arc::new(ekscale::k8s::device_class(class).unwrap())],
        templates: vec![Arc::new(ekscale::k8s::claim_template(template).unwrap())],
        slices: vec![Arc::new(
            ekscale::k8s::resource_slice(gpu_slice(product, generation)).unwrap(),
        )],
        ..DraObjects::default()
    };
    if held {
        let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "held", "namespace": "ml"},
            "spec": {"devices": {"requests": [{"name": "gpu",
                "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}},
            "status": {"allocation": {"devices": {"results": [{"request": "gpu",
                "driver": "gpu.nvidia.com", "pool": "gpu-a", "device": "gpu-0"}]}}}});
        let claim = ekscale::k8s::resource_claim(claim).unwrap();
        objects.claims.push(Arc::new(claim));
    }
    objects
}

/// One companion, loop after loop, over a node with one GPU and a pending pod claiming a Tesla T4 from a
/// template, as the slice, the class and the claims change between loops: each loop places the pod on the
/// node exactly when that loop's objects let its claim be allocated there. A loop that kept the last
/// loop's pools (and their devices' verdicts), classes or allocations past a change would place it where
/// it no longer fits, or not where it fits again.
#[tokio::test]
async fn one_companions_next_loop_sees_the_slice_class_or_claim_that_changed() {
    const SCENARIO: &str = "
cluster: dra
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 1, desiredSize: 0}
";
    let server = common::Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let mut once = RunOnce::new(ProviderClient::new(&config).unwrap(), Settings::default());
    let node = Node {
        name: "gpu-a".into(),
        ready: true,
        allocatable: Resources {
            cpu_millis: 4000,
            memory_bytes: 16 << 30,
            pods: 110,
            ..Resources::default()
        },
        ..Node::default()
    };
    let pod = Pod {
        dra: Some(Box::new(PodDra {
            uid: Some("uid-trainer-0".into()),
            claims: vec![PodClaim {
                name: "gpu".into(),
                source: ClaimSource::Template {
                    template: "t4".into(),
                    made: None,
                },
            }],
            needs: None,
            extended_claim: None,
        })),
        ..Pod::pending(
            "ml",
            "trainer-0",
            Resources {
                cpu_millis: 1000,
                memory_bytes: 1 << 30,
                pods: 1,
                ..Resources::default()
            },
        )
    };
    let now = std::time::SystemTime::now();
    let loops = [
        (("Tesla T4", 0, "gpu", false), true),
        // The driver republished the pool: another GPU, which the template's selector refuses.
        (("NVIDIA A10G", 1, "gpu", false), false),
        (("Tesla T4", 2, "gpu", false), true),
        // The class now selects MIG devices only.
        (("Tesla T4", 2, "mig", false), false),
        // Another claim holds the node's only GPU.
        (("Tesla T4", 2, "gpu", true), false),
        (("Tesla T4", 2, "gpu", false), true),
    ];
    for (i, ((product, generation, class_type, held), fits)) in loops.into_iter().enumerate() {
        let view = ClusterView {
            nodes: vec![Arc::new(node.clone())],
            pods: vec![Arc::new(pod.clone())],
            dra: Arc::new(loop_objects(product, generation, class_type, held)),
            now: Some(now),
            ..ClusterView::default()
        };
        let status = once.run(&view, now).await.unwrap();
        let placed: Vec<(&str, &str)> = (status.placed.iter())
            .map(|p| (p.pod.as_str(), p.node.as_str()))
            .collect();
        let expected = match fits {
            true => vec![("ml/trainer-0", "gpu-a")],
            false => Vec::new(),
        };
        assert_eq!(
            placed, expected,
            "loop {i}: {product} (generation {generation}), class selecting {class_type}, held {held}"
        );
    }
}
