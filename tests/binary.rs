//! The real `ekscale-provider` binary: grpcurl through reflection, health, metrics, logs, flags, shutdown.

mod common;

use common::{Binary, grpcurl, http_get};

use std::process::{Command, Output};
use std::time::{Duration, Instant};
use tokio_stream::StreamExt;

const CLOUD_PROVIDER: &str = "clusterautoscaler.cloudprovider.v1.externalgrpc.CloudProvider";

fn run_grpcurl(args: &[&str]) -> Output {
    Command::new(grpcurl())
        .args(args)
        .output()
        .expect("running grpcurl")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "grpcurl failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[test]
fn grpcurl_lists_and_calls_through_reflection() {
    let provider = Binary::start(&[]);
    let addr = provider.grpc.to_string();

    let services = stdout(&run_grpcurl(&["-plaintext", &addr, "list"]));
    for service in [
        CLOUD_PROVIDER,
        "ekscale.v1.Fargate",
        "ekscale.v1.NodeGroups",
        "grpc.health.v1.Health",
    ] {
        assert!(
            services.lines().any(|l| l == service),
            "{service} missing from:\n{services}"
        );
    }
    let described = stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "describe",
        CLOUD_PROVIDER,
    ]));
    for rpc in [
        "NodeGroups",
        "NodeGroupForNode",
        "NodeGroupTemplateNodeInfo",
        "NodeGroupGetOptions",
        "PricingPodPrice",
    ] {
        assert!(
            described.contains(&format!("rpc {rpc} (")),
            "{rpc} missing from:\n{described}"
        );
    }

    let groups = stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        &format!("{CLOUD_PROVIDER}/NodeGroups"),
    ]));
    for id in ["\"general\"", "\"batch\"", "\"spot\"", "\"gpu\""] {
        assert!(groups.contains(id), "{id} missing from:\n{groups}");
    }

    // Script a node group the way an operator would.
    let increase = format!("{CLOUD_PROVIDER}/NodeGroupIncreaseSize");
    stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"general","delta":3}"#,
        &addr,
        &increase,
    ]));
    let target = format!("{CLOUD_PROVIDER}/NodeGroupTargetSize");
    let size = stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"general"}"#,
        &addr,
        &target,
    ]));
    assert!(size.contains("\"targetSize\": 5"), "{size}");

    let refused = run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"general","delta":100}"#,
        &addr,
        &increase,
    ]);
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("FailedPrecondition") && message.contains("max:20"),
        "{message}"
    );

    let health = stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        &format!(r#"{{"service":"{CLOUD_PROVIDER}"}}"#),
        &addr,
        "grpc.health.v1.Health/Check",
    ]));
    assert!(health.contains("SERVING"), "{health}");

    let profiles = stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.Fargate/ListProfiles",
    ]));
    assert!(profiles.contains("\"serverless\""), "{profiles}");

    // Each group's zones, as the built-in scenario lists them.
    let zones: serde_json::Value = serde_json::from_str(&stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.NodeGroups/ListZones",
    ])))
    .unwrap();
    let general = zones["nodeGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "general")
        .unwrap_or_else(|| panic!("{zones}"));
    assert_eq!(
        general["zones"],
        serde_json::json!(["us-east-1a", "us-east-1b", "us-east-1c"])
    );

    // Each group's status and image, as the README shows the built-in scenario's.
    let described: serde_json::Value = serde_json::from_str(&stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.NodeGroups/DescribeNodeGroups",
    ])))
    .unwrap();
    let general = described["nodeGroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == "general")
        .unwrap_or_else(|| panic!("{described}"));
    assert_eq!(
        *general,
        serde_json::json!({"id": "general", "status": "ACTIVE", "image": "ami-eks-amd64-1",
                           "capacityType": "ON_DEMAND"})
    );
}

/// `ekscale.v1.NodeGroups/DescribeNodeGroups`: each group's EKS status, the image of its new nodes and its
/// capacity type, as the scenario gives them (ACTIVE and its AMI type's image when it does not), and the
/// reservations it launches into with their counts now (a block from the scenario's start for days, so the
/// answer never depends on how long the machine takes), counted like every RPC.
#[test]
fn grpcurl_describes_each_groups_status_and_image() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "cluster: images\nregion: us-east-1\nstart: \"2026-12-01T09:00:00Z\"\nnodeGroups:\n  \
         - {name: web, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 1}\n  \
         - {name: legacy, instanceType: m5.large, zones: [us-east-1b], minSize: 0, maxSize: 4, desiredSize: 1,\n     \
            status: DEGRADED, image: ami-0c1f2e3d4b5a69788}\n  \
         - {name: train, instanceType: g4dn.xlarge, capacityType: CAPACITY_BLOCK, zones: [us-east-1a],\n     \
            minSize: 0, maxSize: 4, desiredSize: 1, reservations: [{id: cr-0b10c0000000001, type: capacity-block,\n     \
            start: \"2026-12-01T09:00:00Z\", end: \"2026-12-04T09:00:00Z\", total: 2}]}\n",
    )
    .unwrap();
    let provider = Binary::start(&["--sim-file", scenario.to_str().unwrap()]);
    let addr = provider.grpc.to_string();
    let described = stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "describe",
        "ekscale.v1.NodeGroups",
    ]));
    assert!(
        described.contains("rpc DescribeNodeGroups ( .ekscale.v1.DescribeNodeGroupsRequest )"),
        "{described}"
    );
    let answer: serde_json::Value = serde_json::from_str(&stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.NodeGroups/DescribeNodeGroups",
    ])))
    .unwrap();
    assert_eq!(
        answer["nodeGroups"],
        serde_json::json!([
            {"id": "web", "status": "ACTIVE", "image": "ami-eks-amd64-1", "capacityType": "ON_DEMAND"},
            {"id": "legacy", "status": "DEGRADED", "image": "ami-0c1f2e3d4b5a69788",
             "capacityType": "ON_DEMAND"},
            {"id": "train", "status": "ACTIVE", "image": "ami-eks-amd64-nvidia-1",
             "capacityType": "CAPACITY_BLOCK",
             "reservations": [{"id": "cr-0b10c0000000001", "type": "capacity-block",
                               "startUnixSeconds": "1796115600", "endUnixSeconds": "1796374800",
                               "total": 2, "available": 1}]},
        ])
    );
    let metrics = http_get(provider.metrics, "/metrics");
    let counted = r#"ekscale_provider_requests_total{method="DescribeNodeGroups",code="OK"} 1"#;
    assert!(metrics.contains(counted), "{counted} missing");
}

/// A scenario for the binary, whose simulated clock runs on the machine's from the scenario's `start`: what
/// is in force at the start stays so for hours (the scheduled event is known ahead, the rebalance has no
/// capacity rebalancing to follow it, the interruption and the stop come three hours later), so the answer
/// never depends on how long the machine takes, nor on its date.
const LEAVING_FOR_HOURS: &str = r#"
cluster: leaving
region: us-east-1
seed: 60
start: "2026-12-01T09:00:00Z"
nodeGroups:
  - {name: spot, instanceType: m5.large, capacityType: SPOT, capacityRebalance: false, zones: [us-east-1a],
     minSize: 0, maxSize: 4, desiredSize: 2}
  - {name: general, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 2}
instanceEvents:
  - {nodeGroup: spot, index: 0, kind: rebalance, at: "2026-12-01T09:00:00Z"}
  - {nodeGroup: spot, index: 1, kind: spotInterruption, at: "2026-12-01T12:00:00Z"}
  - {nodeGroup: general, index: 0, kind: scheduledEvent, at: "2026-12-02T03:00:00Z"}
  - {nodeGroup: general, index: 1, kind: stopped, at: "2026-12-01T12:00:00Z"}
"#;

/// `ekscale.v1.NodeGroups/ListLeavingInstances` on the binary: each instance EC2 has said by then is going
/// away, with its group, reason, time and what was said; what is said later is not yet listed.
#[test]
fn grpcurl_lists_the_leaving_instances() {
    let (provider, _dir) = Binary::on_scenario(LEAVING_FOR_HOURS);
    let addr = provider.grpc.to_string();
    let answer: serde_json::Value = serde_json::from_str(&stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.NodeGroups/ListLeavingInstances",
    ])))
    .unwrap();
    let said: Vec<(&str, &str, &str, &str)> = (answer["instances"].as_array().unwrap().iter())
        .map(|i| {
            let field = |name: &str| i[name].as_str().unwrap();
            (
                field("nodeGroupId"),
                field("id"),
                field("reason"),
                field("atUnixSeconds"),
            )
        })
        .collect();
    // 2026-12-01T09:00:00Z is 1796115600; the scheduled event is 18 hours later.
    assert_eq!(
        said,
        [
            (
                "general",
                "aws:///us-east-1a/i-de9865cf3713d80cf",
                "scheduledEvent",
                "1796180400"
            ),
            (
                "spot",
                "aws:///us-east-1a/i-4f1a62cd47693503c",
                "rebalance",
                "1796115600"
            ),
        ]
    );
    assert!(
        answer["instances"][1]["detail"]
            .as_str()
            .unwrap()
            .contains("the group has no capacity rebalancing"),
        "{answer}"
    );
    let metrics = http_get(provider.metrics, "/metrics");
    let counted = r#"ekscale_provider_requests_total{method="ListLeavingInstances",code="OK"} 1"#;
    assert!(metrics.contains(counted), "{counted} missing");
}

/// `ekscale.v1.NodeGroups/TemplateResourceSlices`, as an operator checks what a DRA group's new nodes will
/// publish: one ResourceSlice (Kubernetes' protobuf, base64 in grpcurl's JSON) per driver; NotFound for a
/// group that does not exist.
#[test]
fn grpcurl_shows_a_groups_template_resource_slices() {
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "cluster: dra\nregion: us-east-1\nnodeGroups:\n  \
         - {name: web, instanceType: m5.large, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 1}\n  \
         - {name: a10g, instanceType: g5.12xlarge, zones: [us-east-1a], minSize: 0, maxSize: 4, desiredSize: 0,\n     \
            draDrivers: [gpu.nvidia.com]}\n",
    )
    .unwrap();
    let provider = Binary::start(&["--sim-file", scenario.to_str().unwrap()]);
    let addr = provider.grpc.to_string();
    let answer: serde_json::Value = serde_json::from_str(&stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "ekscale.v1.NodeGroups/TemplateResourceSlices",
    ])))
    .unwrap();
    let groups = answer["nodeGroups"].as_array().unwrap();
    assert_eq!(groups[0], serde_json::json!({"id": "web"}), "no slices");
    assert_eq!(groups[1]["id"], "a10g");
    let [bytes] = groups[1]["resourceSliceBytes"]
        .as_array()
        .unwrap()
        .as_slice()
    else {
        panic!("one slice: {answer}")
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(bytes.as_str().unwrap())
        .unwrap();
    let slice = ekscale::k8s::resource_slice_from_pb_bytes(&bytes).unwrap();
    assert_eq!(&*slice.driver, "gpu.nvidia.com");
    assert_eq!(&*slice.pool.name, "template-node-for-a10g");
    assert_eq!(slice.devices.len(), 4);

    let missing = run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"ids":["a10g","h100"]}"#,
        &addr,
        "ekscale.v1.NodeGroups/TemplateResourceSlices",
    ]);
    assert!(!missing.status.success());
    let message = String::from_utf8_lossy(&missing.stderr);
    assert!(
        message.contains("NotFound") && message.contains(r#"node group "h100" not found"#),
        "{message}"
    );
}

/// `ekscale.v1.NodeGroups/AtomicIncreaseSize`, scripted as an operator would: all of the increase or none.
#[test]
fn grpcurl_calls_the_all_or_nothing_increase() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.yaml");
    std::fs::write(
        &scenario,
        "cluster: gangs\nregion: us-east-1\nnodeGroups:\n  - name: train\n    instanceType: g4dn.xlarge\n    \
         zones: [us-east-1a]\n    minSize: 0\n    maxSize: 8\n    desiredSize: 1\n    availableCapacity: 4\n",
    )
    .unwrap();
    let provider = Binary::start(&["--sim-file", scenario.to_str().unwrap()]);
    let addr = provider.grpc.to_string();
    let atomic = "ekscale.v1.NodeGroups/AtomicIncreaseSize";

    let described = stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        "describe",
        "ekscale.v1.NodeGroups",
    ]));
    assert!(
        described.contains("rpc AtomicIncreaseSize ( .ekscale.v1.AtomicIncreaseSizeRequest )"),
        "{described}"
    );
    let target = || {
        let size = stdout(&run_grpcurl(&[
            "-plaintext",
            "-d",
            r#"{"id":"train"}"#,
            &addr,
            &format!("{CLOUD_PROVIDER}/NodeGroupTargetSize"),
        ]));
        serde_json::from_str::<serde_json::Value>(&size).unwrap()["targetSize"].clone()
    };
    let refused = |body: &str| {
        let output = run_grpcurl(&["-plaintext", "-d", body, &addr, atomic]);
        assert!(!output.status.success(), "{body} was taken");
        String::from_utf8_lossy(&output.stderr).into_owned()
    };

    // Four more of a capacity of four with one running: refused whole, nothing asked of the cloud.
    let message = refused(r#"{"id":"train","delta":4}"#);
    assert!(
        message.contains("ResourceExhausted")
            && message.contains("can launch 3 more instance(s) now"),
        "{message}"
    );
    assert_eq!(target(), 1);
    // The IncreaseSize rules hold too: over max, not positive, unknown group.
    let message = refused(r#"{"id":"train","delta":8}"#);
    assert!(
        message.contains("FailedPrecondition") && message.contains("max:8"),
        "{message}"
    );
    let message = refused(r#"{"id":"train","delta":0}"#);
    assert!(message.contains("InvalidArgument"), "{message}");
    let message = refused(r#"{"id":"nope","delta":1}"#);
    assert!(message.contains("NotFound"), "{message}");
    assert_eq!(target(), 1);

    // Three fit: all three are asked for and launched, none left a placeholder.
    stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"train","delta":3}"#,
        &addr,
        atomic,
    ]));
    assert_eq!(target(), 4);
    let nodes = stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"train"}"#,
        &addr,
        &format!("{CLOUD_PROVIDER}/NodeGroupNodes"),
    ]));
    let nodes: serde_json::Value = serde_json::from_str(&nodes).unwrap();
    let ids: Vec<&str> = nodes["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 4, "{nodes}");
    assert!(ids.iter().all(|id| !id.contains("placeholder")), "{nodes}");
    let metrics = http_get(provider.metrics, "/metrics");
    for expected in [
        r#"ekscale_provider_requests_total{method="AtomicIncreaseSize",code="OK"} 1"#,
        r#"ekscale_provider_requests_total{method="AtomicIncreaseSize",code="ResourceExhausted"} 1"#,
    ] {
        assert!(metrics.contains(expected), "{expected} missing");
    }
}

/// grpcurl 1.8 speaks reflection v1alpha; newer clients speak v1. Both list the same services.
#[tokio::test]
async fn reflection_v1_lists_the_services() {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let provider = Binary::start(&[]);
    let mut client = ServerReflectionClient::new(provider.channel().await);
    let request = ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut responses = client
        .server_reflection_info(tokio_stream::once(request))
        .await
        .unwrap()
        .into_inner();
    let response = responses.next().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
        panic!("unexpected reflection answer: {response:?}");
    };
    let names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
    assert!(names.iter().any(|n| n == CLOUD_PROVIDER), "{names:?}");
    assert!(names.iter().any(|n| n == "ekscale.v1.Fargate"), "{names:?}");
}

#[test]
fn metrics_and_healthz_are_served_and_count_requests() {
    let provider = Binary::start(&[]);
    let addr = provider.grpc.to_string();
    stdout(&run_grpcurl(&[
        "-plaintext",
        &addr,
        &format!("{CLOUD_PROVIDER}/NodeGroups"),
    ]));
    let _ = run_grpcurl(&[
        "-plaintext",
        "-d",
        r#"{"id":"nope"}"#,
        &addr,
        &format!("{CLOUD_PROVIDER}/NodeGroupTargetSize"),
    ]);

    assert!(http_get(provider.metrics, "/healthz").starts_with("HTTP/1.1 200"));
    let metrics = http_get(provider.metrics, "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    for expected in [
        r#"ekscale_provider_requests_total{method="NodeGroups",code="OK"} 1"#,
        r#"ekscale_provider_requests_total{method="NodeGroupTargetSize",code="NotFound"} 1"#,
        r#"ekscale_provider_request_duration_seconds_count{method="NodeGroups"} 1"#,
        "ekscale_provider_node_groups 4",
        r#"ekscale_provider_instances{node_group="general",state="running"} 2"#,
        r#"ekscale_provider_instances{node_group="gpu",state="running"} 0"#,
    ] {
        assert!(
            metrics.contains(expected),
            "{expected} missing from:\n{metrics}"
        );
    }
}

#[test]
fn sigterm_stops_the_provider_gracefully() {
    let mut provider = Binary::start(&["--log-format", "json"]);
    assert!(
        provider.log[0].starts_with('{'),
        "JSON logs: {}",
        provider.log[0]
    );
    assert!(
        provider.log[0].contains(r#""backend":"sim""#),
        "the first line says the backend: {}",
        provider.log[0]
    );
    let pid = provider.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = provider.child.try_wait().unwrap() {
            assert!(status.success(), "exit status after SIGTERM: {status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the provider did not stop after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn provider_fails(args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ekscale-provider"));
    command.args(["--metrics-listen", "127.0.0.1:0"]);
    if !args.contains(&"--listen") {
        command.args(["--listen", "127.0.0.1:0"]);
    }
    let output = command.args(args).output().unwrap();
    assert!(!output.status.success(), "{args:?} should fail");
    String::from_utf8(output.stderr).unwrap()
}

#[test]
fn bad_input_is_refused_with_a_message_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "cluster: c\nregion: us-east-1\nnodeGroups:\n  - name: g\n    instanceType: m5.large\n    zones: [us-east-1a]\n    minSize: 2\n    maxSize: 1\n    desiredSize: 1\n").unwrap();
    let message = provider_fails(&["--sim-file", bad.to_str().unwrap()]);
    assert!(
        message.contains("bad.yaml") && message.contains("minSize (2)"),
        "{message}"
    );

    let message = provider_fails(&["--sim-file", "/nonexistent/scenario.yaml"]);
    assert!(message.contains("/nonexistent/scenario.yaml"), "{message}");

    let message = provider_fails(&["--backend", "aws"]);
    if cfg!(feature = "aws") {
        assert!(message.contains("--cluster"), "{message}");
    } else {
        // A build without the AWS backend says how to get one.
        assert!(message.contains("--features aws"), "{message}");
    }
    let message = provider_fails(&["--cluster", "prod"]);
    assert!(message.contains("--backend aws"), "{message}");

    let message = provider_fails(&["--tls-cert", "/tmp/cert.pem"]);
    assert!(message.contains("--tls-key"), "{message}");

    let message = provider_fails(&[
        "--tls-cert",
        "/nonexistent/c.pem",
        "--tls-key",
        "/nonexistent/k.pem",
    ]);
    assert!(message.contains("/nonexistent/c.pem"), "{message}");

    let message = provider_fails(&["--listen", "not-an-address"]);
    assert!(message.contains("--listen not-an-address"), "{message}");

    // Plaintext gRPC only on loopback: refused before anything is bound.
    let message = provider_fails(&["--listen", "0.0.0.0:0"]);
    assert!(
        message.contains("refusing to serve gRPC without TLS on --listen 0.0.0.0:0")
            && message.contains("--insecure"),
        "{message}"
    );
}

#[test]
fn the_autoscaler_parses_its_flags_and_says_what_is_missing() {
    let help = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args(["simulate", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8(help.stdout).unwrap();
    for flag in [
        "--provider",
        "--snapshot",
        "--format",
        "--expander",
        "--scale-down-unneeded-time",
    ] {
        assert!(text.contains(flag), "{flag} missing from:\n{text}");
    }
    let bad = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args([
            "run",
            "--provider",
            "127.0.0.1:1",
            "--scan-interval",
            "soon",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--scan-interval"));
    let bad = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args([
            "run",
            "--provider",
            "127.0.0.1:1",
            "--max-total-unready-percentage",
            "150",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("--max-total-unready-percentage")
            && stderr.contains("150 is not a percentage between 0 and 100"),
        "{stderr}"
    );
}

/// The README's MatchPod example, taken from the README itself, works against the real binary.
#[test]
fn the_readmes_fargate_example_works() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|l| l.contains("ekscale.v1.Fargate/MatchPod") && l.contains("-d '"))
        .unwrap();
    let data = line
        .split("-d '")
        .nth(1)
        .unwrap()
        .split("' ")
        .next()
        .unwrap();
    let provider = Binary::start(&[]);
    let answer = stdout(&run_grpcurl(&[
        "-plaintext",
        "-d",
        data,
        &provider.grpc.to_string(),
        "ekscale.v1.Fargate/MatchPod",
    ]));
    assert!(answer.contains(r#""profile": "serverless""#), "{answer}");
    assert!(
        answer.contains(r#""capacityProvisioned": "2vCPU 9GB""#),
        "{answer}"
    );
    assert!(answer.contains(r#""hourlyPrice": 0.120965"#), "{answer}");
}
