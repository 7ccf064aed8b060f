//! Dynamic Resource Allocation's objects reach the loop's view from every source that reads a cluster: a
//! snapshot file, and the API server's watches (only where it serves `resource.k8s.io`), objects the API
//! server would refuse left out; and pods that claim devices are alike only when their claims are.

mod common;

use common::kube_api::{self, Objects, node, pod};
use ekscale::autoscaler::{ClusterSource, Snapshot};
use ekscale::model::{Alike, ClaimSource, LabelProjection, Pod, SchedulingIds};
use serde_json::{Value, json};

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
    assert_eq!(pod.uid.as_deref(), Some("uid-trainer-0"));
    assert_eq!(
        pod.claims[0].source,
        ClaimSource::Template {
            template: "one-gpu".into(),
            made: Some("trainer-0-gpu-x7k2p".into())
        }
    );
    assert_eq!(
        pod.claims[1].source,
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
        ekscale::k8s::pod_from_api(&serde_json::from_value(pod).unwrap(), true).unwrap()
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
