//! ProvisioningRequests (autoscaling.x-k8s.io), both classes cluster-autoscaler serves. Over a snapshot,
//! `simulate` gives each request upstream's conditions (checks that fit and do not, an atomic request within
//! and beyond its group's max, a missing PodTemplate, booked room and the pod consuming it). Over the
//! simulated EKS, acting: an atomic request the cloud cannot launch whole leaves nothing behind and is made
//! whole once capacity frees; its room stays booked until its consuming pods run, then the booking ends.

mod common;

use common::cluster::{readme_shows, scale_ups, simulate_json};
use common::kube_api;
use common::{Binary, Server};
use ekscale::autoscaler::ClusterSource;
use ekscale::autoscaler::RunOnce;
use ekscale::autoscaler::Settings;
use ekscale::autoscaler::status::{ProvisioningRequestStatus, Status};
use ekscale::autoscaler::{ProviderClient, ProviderConfig};
use ekscale::k8s::Template;
use ekscale::k8s::VersionedRequest;
use ekscale::model::{Pod, Resources};
use ekscale::simulated_cluster::SimulatedCluster;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const SNAPSHOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/provisioning_requests.yaml"
);

/// Each request's conditions as `type=status/reason`.
fn conditions(request: &Value) -> Vec<String> {
    (request["conditions"].as_array().unwrap().iter())
        .map(|c| {
            format!(
                "{}={}/{}",
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                c["reason"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn simulate_gives_each_request_upstreams_conditions() {
    let provider = Binary::start(&[]);
    let snapshot: Value =
        serde_norway::from_str(&std::fs::read_to_string(SNAPSHOT).unwrap()).unwrap();
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    let requests = result["provisioningRequests"].as_array().unwrap();
    let by_name = |name: &str| {
        (requests.iter())
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} not listed: {result:#}"))
    };
    // Another autoscaler's class is not ours to list; the rest oldest first.
    let names: Vec<&str> = requests
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "ml/booked",
            "ml/check-4",
            "ml/check-20",
            "ml/train",
            "ml/no-template",
            "ml/train-big"
        ]
    );
    let accepted = "Accepted=True/Accepted";
    // Booked room is held first (two small pods), then four more fit beside it: the two nodes hold six.
    let booked = by_name("ml/booked");
    assert_eq!(
        conditions(booked),
        [accepted, "Provisioned=True/CapacityIsFound"]
    );
    assert_eq!((&booked["pods"], &booked["booked"]), (&json!(2), &json!(2)));
    assert_eq!(booked["consumingPods"], json!(["ml/booked-job-0"]));
    assert_eq!(
        conditions(by_name("ml/check-4")),
        [accepted, "Provisioned=True/CapacityIsFound"]
    );
    let check_20 = by_name("ml/check-20");
    assert_eq!(
        conditions(check_20),
        [accepted, "Provisioned=False/CapacityIsNotFound"]
    );
    assert_eq!(
        check_20["conditions"][1]["message"],
        "Capacity is not found, CA will try to find it later. 0 of 20 pods fit in the cluster as it is. \
         The next: 0/2 nodes are available: 2 Insufficient cpu."
    );
    // The atomic request: all three GPU workers in one increase of the gpu group, and nothing else grows.
    let train = by_name("ml/train");
    assert_eq!(
        conditions(train),
        [accepted, "Provisioned=True/CapacityIsProvisioned"]
    );
    assert_eq!(train["scaleUp"], json!([{"nodeGroup": "gpu", "delta": 3}]));
    assert_eq!(scale_ups(&result), [("gpu".to_string(), 3)]);
    // Six more do not fit in what is left of the group's max of 4: nothing is increased, and why says so.
    let big = by_name("ml/train-big");
    assert_eq!(
        conditions(big),
        [accepted, "Provisioned=False/CapacityIsNotFound"]
    );
    assert_eq!(big["scaleUp"], json!([]));
    let why = big["conditions"][1]["message"].as_str().unwrap();
    assert!(
        why.contains("5 of 6 pods fit in no scale-up")
            && why.contains("gpu: max node group size reached"),
        "{why}"
    );
    let missing = by_name("ml/no-template");
    assert_eq!(
        conditions(missing),
        [accepted, "Failed=True/FailedToCreatePods"]
    );
    assert_eq!(
        missing["conditions"][1]["message"],
        "Provisioning Request's pods cannot be created: PodTemplate ml/missing not found"
    );
    assert_eq!(missing["pods"], 1);
    // The consuming pod waits for its request's room: nobody scales up for it on its own.
    assert_eq!(result["noScaleUp"], json!([]), "{result:#}");
}

#[test]
fn the_readmes_example_prints_what_the_readme_shows() {
    let provider = Binary::start(&[]);
    let snapshot = "tests/data/provisioning_requests.yaml";
    let lines = readme_shows(provider.grpc, snapshot, &[], "\nProvisioning requests\n");
    assert_eq!(lines, 7);
}

const SCENARIO: &str = "
cluster: training
region: us-east-1
nodeGroups:
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}
  - {name: gpu, instanceType: g4dn.xlarge, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 0, availableCapacity: 2, provisioningDelay: 30s}
";

fn gpu_worker() -> Template {
    let template = serde_json::from_value(json!({
        "metadata": {"name": "gpu-worker", "namespace": "ml"},
        "template": {"spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                            "limits": {"nvidia.com/gpu": "1"}}}]}}
    }))
    .unwrap();
    Template::from_api(&template)
}

fn atomic(name: &str, count: u32, created: &str) -> VersionedRequest {
    VersionedRequest::from_value(json!({
        "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
        "metadata": {"name": name, "namespace": "ml", "generation": 1, "creationTimestamp": created},
        "spec": {"provisioningClassName": "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                 "podSets": [{"podTemplateRef": {"name": "gpu-worker"}, "count": count}]}
    }))
    .unwrap()
}

/// A pod of the training job, which consumes request `train`.
fn consumer(i: usize) -> Pod {
    let demand = Resources {
        cpu_millis: 2000,
        memory_bytes: 8 << 30,
        gpus: 1,
        pods: 1,
        ..Default::default()
    };
    let template = gpu_worker().pod.unwrap();
    Pod {
        consumes: Some("train".into()),
        scheduling: template.scheduling.clone(),
        ..Pod::pending("ml", &format!("train-job-{i}"), demand)
    }
}

fn of<'a>(status: &'a Status, name: &str) -> &'a ProvisioningRequestStatus {
    (status.provisioning_requests.iter())
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("{name} not listed: {status:#?}"))
}

/// `Provisioned`'s status and reason, as the cluster holds them (what was written back).
fn written(cluster: &SimulatedCluster, name: &str, kind: &str) -> Option<(String, String)> {
    let read = cluster
        .requests()
        .into_iter()
        .find(|r| r.request.metadata.name.as_deref() == Some(name))?;
    let conditions = read.request.status?.conditions;
    let c = conditions.into_iter().find(|c| c.type_ == kind)?;
    Some((c.status, c.reason))
}

#[tokio::test]
async fn an_atomic_request_is_whole_or_nothing_and_its_booking_ends_when_its_pods_run() {
    let server = Server::start_with(SCENARIO, None).await;
    let config = ProviderConfig::plaintext(server.addr.to_string());
    let clock = server.sim().clock().clone();
    let cluster = Arc::new(SimulatedCluster::new(&config, clock.clone()).unwrap());
    let client = ProviderClient::new(&config).unwrap();
    let settings = Settings {
        act: true,
        ..Settings::default()
    };
    let mut once = RunOnce::new(client.clone(), settings).acting_on(cluster.clone());
    // Created at the simulated clock's epoch and just after: `train` is the older, tried first.
    let epoch = cluster.now();
    let stamp = |after: u64| {
        let t = k8s_openapi::jiff::Timestamp::try_from(epoch + Duration::from_secs(after)).unwrap();
        t.to_string()
    };
    cluster.create_templates(vec![gpu_worker()]);
    cluster.create_request(atomic("train", 3, &stamp(0)));
    cluster.create_request(atomic("too-big", 5, &stamp(1)));

    // The group can launch only 2 of the 3 now: the provider refuses the whole increase; nothing is
    // half-built, the group is backed off. Five pods are more than the group's max: not even asked.
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let train = of(&status, "ml/train");
    assert!(train.scale_up.is_empty(), "{status:#?}");
    let refused = status
        .scale_up
        .iter()
        .find(|s| s.node_group == "gpu")
        .unwrap();
    assert!(
        refused
            .error
            .as_deref()
            .unwrap()
            .contains("availableCapacity"),
        "{refused:?}"
    );
    assert_eq!(client.target_size("gpu").await.unwrap(), 0);
    assert!(client.nodes("gpu").await.unwrap().is_empty());
    let not_found = Some(("False".to_string(), "CapacityIsNotFound".to_string()));
    assert_eq!(written(&cluster, "train", "Provisioned"), not_found);
    assert_eq!(written(&cluster, "too-big", "Provisioned"), not_found);
    let too_big = &of(&status, "ml/too-big").conditions[1].message;
    assert!(
        too_big.contains("gpu: max node group size reached"),
        "{too_big}"
    );

    // Capacity frees up and the backoff passes: all three in one increase.
    server.sim().set_available_capacity("gpu", None).unwrap();
    clock.advance(Duration::from_secs(6 * 60));
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    let train = of(&status, "ml/train");
    assert_eq!(
        train
            .scale_up
            .iter()
            .map(|s| (s.node_group.as_str(), s.delta))
            .collect::<Vec<_>>(),
        [("gpu", 3)]
    );
    assert_eq!(client.target_size("gpu").await.unwrap(), 3);
    let provisioned = Some(("True".to_string(), "CapacityIsProvisioned".to_string()));
    assert_eq!(written(&cluster, "train", "Provisioned"), provisioned);

    // While the nodes start, and once they run, the room is booked: the next loop asks for nothing more.
    clock.advance(Duration::from_secs(31));
    let view = cluster.view().await.unwrap();
    assert_eq!(view.nodes.len(), 4, "general's node and gpu's three");
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(of(&status, "ml/train").booked, 3);
    assert!(
        status.scale_up.iter().all(|s| s.node_group != "gpu"),
        "{status:#?}"
    );

    // The job's pods arrive and run on the booked nodes: each frees one booked pod's room.
    cluster.create_pods([consumer(0)]);
    let view = cluster.view().await.unwrap();
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(of(&status, "ml/train").booked, 2, "{status:#?}");
    cluster.create_pods([consumer(1), consumer(2)]);
    let view = cluster.view().await.unwrap();
    assert!(view.pods.iter().all(|p| p.node_name.is_some()));
    let status = once.run(&view, cluster.now()).await.unwrap();
    assert_eq!(of(&status, "ml/train").booked, 0, "{status:#?}");

    // Ten minutes after it was provisioned, the booking is over, as upstream ends it.
    clock.advance(Duration::from_secs(10 * 60));
    let view = cluster.view().await.unwrap();
    once.run(&view, cluster.now()).await.unwrap();
    let expired = Some((
        "True".to_string(),
        "CapacityReservationTimeExpired".to_string(),
    ));
    assert_eq!(written(&cluster, "train", "BookingExpired"), expired);
}

/// When the fake API server's requests were made. The loops over them run at a fixed time five minutes
/// later, never at the machine's clock: a request not provisioned within 7 days of its creation fails, so a
/// loop at `SystemTime::now()` failed them once the machine's date passed this one by a week.
const CREATED: &str = "2026-12-01T10:00:00Z";

/// The loops' time over the fake API server's requests: five minutes after they were made.
fn loop_time() -> SystemTime {
    humantime::parse_rfc3339(CREATED).unwrap() + Duration::from_secs(5 * 60)
}

/// A request as the API server holds it, in `version`.
fn request(version: &str, name: &str, class: &str, template: &str, count: u32) -> Value {
    json!({"apiVersion": format!("autoscaling.x-k8s.io/{version}"), "kind": "ProvisioningRequest",
           "metadata": {"name": name, "namespace": "default", "generation": 2, "resourceVersion": "1",
                        "uid": format!("uid-{name}"), "creationTimestamp": CREATED},
           "spec": {"provisioningClassName": class,
                    "podSets": [{"podTemplateRef": {"name": template}, "count": count}]}})
}

/// Over a fake API server that serves ProvisioningRequests as v1beta1 only: each request's status is
/// written once, to the status subresource of that version, with upstream's conditions; the watch takes the
/// status back and the next loop books the room and writes nothing. A cluster without the CRD has no
/// requests.
#[tokio::test]
async fn statuses_are_written_once_in_the_version_served() {
    let provider = Server::start_with(
        "cluster: kube\nregion: us-east-1\nnodeGroups:\n  - {name: general, instanceType: m5.large, \
         zones: [us-east-1a], minSize: 0, maxSize: 5, desiredSize: 1}\n",
        None,
    )
    .await;
    let client =
        ProviderClient::new(&ProviderConfig::plaintext(provider.addr.to_string())).unwrap();
    let instance = client.nodes("general").await.unwrap().remove(0);
    let mut n = kube_api::node("node-0");
    n["spec"]["providerID"] = json!(instance.id);
    n["spec"]["taints"] = json!([]);
    n["metadata"]["labels"]["eks.amazonaws.com/nodegroup"] = json!("general");
    let small = json!({"apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "small", "namespace": "default", "resourceVersion": "1"},
        "template": {"spec": {"containers": [{"name": "c",
                     "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}});
    let check = "check-capacity.autoscaling.x-k8s.io";
    let (kube, fake) = kube_api::connect(kube_api::Objects {
        nodes: vec![n.clone()],
        request_versions: vec!["v1beta1"],
        provisioning_requests: vec![
            request("v1beta1", "fits", check, "small", 2),
            request("v1beta1", "no-template", check, "gone", 1),
            request(
                "v1beta1",
                "elsewhere",
                "queued-provisioning.gke.io",
                "small",
                1,
            ),
        ],
        pod_templates: vec![small],
        ..kube_api::Objects::default()
    })
    .await;
    let kube = Arc::new(kube);
    let settings = Settings {
        act: true,
        ..Settings::default()
    };
    let mut once = RunOnce::new(client.clone(), settings.clone()).acting_on(kube.clone());
    let view = kube.view().await.unwrap();
    assert_eq!(view.requests.requests.len(), 3);
    let status = once.run(&view, loop_time()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    assert!(
        status.scale_up.is_empty(),
        "a check never scales up: {:?}",
        status.scale_up
    );

    let writes = fake.objects.lock().unwrap().status_writes.clone();
    let keys: Vec<&str> = writes.iter().map(|w| w.1.as_str()).collect();
    assert_eq!(
        keys,
        ["default/fits", "default/no-template"],
        "another class is left alone"
    );
    assert!(writes.iter().all(|(version, _, _)| version == "v1beta1"));
    let fits = &writes[0].2["status"]["conditions"];
    assert_eq!(fits[0]["type"], "Accepted");
    assert_eq!(fits[1]["type"], "Provisioned");
    assert_eq!(fits[1]["status"], "True");
    assert_eq!(fits[1]["reason"], "CapacityIsFound");
    assert_eq!(fits[1]["observedGeneration"], 2);
    let failed = &writes[1].2["status"]["conditions"][1];
    assert_eq!(
        (&failed["type"], &failed["reason"]),
        (&json!("Failed"), &json!("FailedToCreatePods"))
    );

    // The cache takes the statuses written; the next loop holds the booked room and writes nothing.
    fake.expire_watches("provisioningrequests").await;
    let view = kube.view().await.unwrap();
    let status = once.run(&view, loop_time()).await.unwrap();
    assert!(status.errors.is_empty(), "{:?}", status.errors);
    let fits = (status.provisioning_requests.iter())
        .find(|r| r.name == "default/fits")
        .unwrap();
    assert_eq!(fits.booked, 2, "{fits:?}");
    assert_eq!(fake.objects.lock().unwrap().status_writes.len(), 2);

    // Without the CRD there are no request watches, and no requests.
    let (kube, _fake) = kube_api::connect(kube_api::Objects {
        nodes: vec![n],
        ..kube_api::Objects::default()
    })
    .await;
    assert!(kube.view().await.unwrap().requests.requests.is_empty());
}

/// A loop over the snapshot, in process, becomes Events on the requests whose status it changed (none on
/// their virtual pods, none on a request it left as it was) and the requests-by-state metric.
#[tokio::test]
async fn changed_requests_get_events_and_every_request_is_counted_by_state() {
    use ekscale::autoscaler::Snapshot;
    use ekscale::autoscaler::control::AutoscalerMetrics;
    use ekscale::autoscaler::control::Publisher;
    let provider = Server::start_with(include_str!("../src/cloud/scenario.yaml"), None).await;
    let client =
        ProviderClient::new(&ProviderConfig::plaintext(provider.addr.to_string())).unwrap();
    let snapshot = Snapshot::read(std::path::Path::new(SNAPSHOT)).unwrap();
    let view = snapshot.view().await.unwrap();
    let mut once = RunOnce::new(client, Settings::default());
    let status = once.run(&view, view.now.unwrap()).await.unwrap();

    let fake = kube_api::Fake::new(kube_api::Objects::default());
    let publisher = Publisher::new(kube_api::client(&fake).await, "kube-system", "pod-a");
    assert!(
        publisher
            .publish(&status, SystemTime::now())
            .await
            .is_empty()
    );
    let events = fake.objects.lock().unwrap().events.clone();
    let seen: Vec<(String, String, String, String)> = (events.iter())
        .map(|e| {
            let field = |v: &Value| v.as_str().unwrap_or_default().to_string();
            (
                field(&e["reason"]),
                field(&e["type"]),
                field(&e["regarding"]["kind"]),
                field(&e["regarding"]["name"]),
            )
        })
        .collect();
    let expect = |reason: &str, kind: &str, on: &str, name: &str| {
        (
            reason.to_string(),
            kind.to_string(),
            on.to_string(),
            name.to_string(),
        )
    };
    assert_eq!(
        seen,
        [
            expect(
                "ScaledUpGroup",
                "Normal",
                "ConfigMap",
                "ekscale-autoscaler-status"
            ),
            expect(
                "CapacityIsFound",
                "Normal",
                "ProvisioningRequest",
                "check-4"
            ),
            expect(
                "CapacityIsNotFound",
                "Normal",
                "ProvisioningRequest",
                "check-20"
            ),
            expect(
                "CapacityIsProvisioned",
                "Normal",
                "ProvisioningRequest",
                "train"
            ),
            expect(
                "FailedToCreatePods",
                "Warning",
                "ProvisioningRequest",
                "no-template"
            ),
            expect(
                "CapacityIsNotFound",
                "Normal",
                "ProvisioningRequest",
                "train-big"
            ),
        ],
        "booked's status did not change; the virtual pods get no TriggeredScaleUp"
    );
    assert_eq!(
        events[3]["note"],
        "Capacity is found in the cluster; scale-up: gpu +3, all or nothing"
    );

    let metrics = AutoscalerMetrics::default();
    metrics.observe_loop(
        &view,
        &status,
        ekscale::autoscaler::control::Acting::DryRun,
        SystemTime::now(),
    );
    let text = metrics.encode();
    let count = |class: &str, state: &str| {
        let line = format!(
            "ekscale_provisioning_requests_count{{class=\"{class}.autoscaling.x-k8s.io\",state=\"{state}\"}} "
        );
        (text.lines().find_map(|l| l.strip_prefix(line.as_str())))
            .map(|n| n.parse::<u32>().unwrap())
    };
    assert_eq!(count("check-capacity", "provisioned"), Some(2), "{text}");
    assert_eq!(count("check-capacity", "pending"), Some(1));
    assert_eq!(count("check-capacity", "failed"), Some(1));
    assert_eq!(count("best-effort-atomic-scale-up", "provisioned"), Some(1));
    assert_eq!(count("best-effort-atomic-scale-up", "pending"), Some(1));
}

/// Booked room is not scale-down's to take: four booked small pods keep both general nodes (three on one,
/// one on the other, which has nowhere to move it), where the same cluster without the booking loses one.
#[test]
fn booked_room_keeps_its_nodes() {
    let provider = Binary::start(&[]);
    let mut snapshot: Value =
        serde_norway::from_str(&std::fs::read_to_string(SNAPSHOT).unwrap()).unwrap();
    let items = snapshot["items"].as_array_mut().unwrap();
    items.retain(|i| {
        i["kind"] == "Node" || i["kind"] == "PodTemplate" || i["metadata"]["name"] == "booked"
    });
    let booked = items
        .iter_mut()
        .find(|i| i["kind"] == "ProvisioningRequest")
        .unwrap();
    booked["spec"]["podSets"][0]["count"] = json!(4);
    let removed = |result: &Value| -> Vec<String> {
        (result["scaleDown"].as_array().unwrap().iter())
            .map(|s| s["node"].as_str().unwrap().to_string())
            .collect()
    };
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(removed(&result), Vec::<String>::new(), "{result:#}");
    let kept: Vec<&str> = (result["unremovable"].as_array().unwrap().iter())
        .map(|k| k["reason"].as_str().unwrap())
        .collect();
    assert!(kept.contains(&"NoPlaceToMovePods"), "{kept:?}");

    // Without the booking (its booking over), the emptier node goes.
    let items = snapshot["items"].as_array_mut().unwrap();
    let booked = items
        .iter_mut()
        .find(|i| i["kind"] == "ProvisioningRequest")
        .unwrap();
    booked["status"]["conditions"].as_array_mut().unwrap().push(json!({
        "type": "BookingExpired", "status": "True", "reason": "CapacityReservationTimeExpired",
        "message": "Capacity reservation time is expired", "lastTransitionTime": "2026-12-01T09:59:00Z"}));
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    assert_eq!(removed(&result).len(), 1, "{result:#}");
}

/// Each trial copies the snapshot, so at most ten requests are tried a loop, oldest first; the others wait
/// their turn with their status as it was (accepted, nothing decided yet).
#[test]
fn at_most_ten_requests_are_tried_a_loop() {
    let provider = Binary::start(&[]);
    let mut snapshot: Value =
        serde_norway::from_str(&std::fs::read_to_string(SNAPSHOT).unwrap()).unwrap();
    let items = snapshot["items"].as_array_mut().unwrap();
    items.retain(|i| i["kind"] == "Node" || i["kind"] == "PodTemplate");
    for n in 0..12 {
        items.push(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": format!("check-{n:02}"), "namespace": "ml",
                         "creationTimestamp": format!("2026-12-01T09:{n:02}:00Z")},
            "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                     "podSets": [{"podTemplateRef": {"name": "small"}, "count": 50}]}}));
    }
    let result = simulate_json(provider.grpc, &snapshot, &[]);
    let decided: Vec<(String, usize)> = (result["provisioningRequests"].as_array().unwrap().iter())
        .map(|r| {
            let name = r["name"].as_str().unwrap().to_string();
            (name, r["conditions"].as_array().unwrap().len())
        })
        .collect();
    let expected: Vec<(String, usize)> = (0..12)
        .map(|n| (format!("ml/check-{n:02}"), if n < 10 { 2 } else { 1 }))
        .collect();
    assert_eq!(decided, expected, "{result:#}");
}
