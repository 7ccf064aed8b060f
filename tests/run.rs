//! `ekscale-autoscaler run --snapshot F --dry-run` as a process, as an operator would try it: its
//! /health-check, /metrics and /snapshotz answer for the loops it ran.

mod common;

use common::Binary;
use common::companion::Live;
use common::companion::{Companion, decisions_when, get, start};
use common::kube_api::Objects;
use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};

#[test]
fn a_dry_run_over_a_snapshot_serves_health_metrics_and_its_decisions() {
    let provider = Binary::start(&[]);
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot.yaml");
    let companion = start(&[
        "--provider",
        &provider.grpc.to_string(),
        "--snapshot",
        snapshot,
        "--dry-run",
        "--scan-interval",
        "200ms",
    ]);
    // Wait for the first loop's decisions.
    let deadline = Instant::now() + Duration::from_secs(20);
    let snapshotz = loop {
        let (code, body) = get(companion.http, "/snapshotz");
        assert_eq!(code, 200);
        let json: Value = serde_json::from_str(&body).unwrap();
        if json.get("decisions").is_some() {
            break json;
        }
        assert!(Instant::now() < deadline, "no loop ran: {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // The README's example: three scale-ups, the huge pod explained.
    let decisions = &snapshotz["decisions"];
    let groups: Vec<&str> = decisions["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["nodeGroup"].as_str().unwrap())
        .collect();
    assert_eq!(groups, ["batch", "general", "gpu"]);
    assert_eq!(decisions["noScaleUp"][0]["pod"], "default/huge");
    assert!(snapshotz["cluster"]["pendingPods"].as_u64().unwrap() >= 10);

    assert_eq!(get(companion.http, "/health-check"), (200, "OK".into()));
    let (code, metrics) = get(companion.http, "/metrics");
    assert_eq!(code, 200);
    for line in [
        "ekscale_unschedulable_pods_count{type=\"unschedulable\"} ",
        "ekscale_node_group_max_count{node_group=\"general\"} 20",
        "ekscale_function_duration_seconds_count{function=\"main\"} ",
        "ekscale_last_activity{activity=\"mainSuccessful\"} ",
    ] {
        assert!(metrics.contains(line), "no {line} in\n{metrics}");
    }
    // A dry run asks for nothing: no node was added.
    assert!(
        metrics.contains("ekscale_scaled_up_nodes_total 0"),
        "{metrics}"
    );
    // Its loops run without transparent huge pages (a first touch of fresh memory zeroes 4 KiB, not 2 MiB),
    // on kernels that say so (5.0 and later).
    let status = std::fs::read_to_string(format!("/proc/{}/status", companion.child.id())).unwrap();
    if let Some(line) = status.lines().find(|l| l.starts_with("THP_enabled:")) {
        assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
    }
}

/// `run` over tests/data/snapshot.yaml with nothing listening at its provider's address: every loop fails.
fn unreachable(max_startup_time: &str) -> Companion {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = unused.local_addr().unwrap();
    drop(unused);
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot.yaml");
    start(&[
        "--provider",
        &dead.to_string(),
        "--snapshot",
        snapshot,
        "--dry-run",
        "--scan-interval",
        "200ms",
        "--max-startup-time",
        max_startup_time,
    ])
}

/// /snapshotz once a loop has failed.
fn after_a_failed_loop(companion: &Companion) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = get(companion.http, "/snapshotz");
        if body.contains("lastFailure") {
            return body;
        }
        assert!(Instant::now() < deadline, "no loop failed: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn health_check_fails_while_the_provider_is_unreachable() {
    // Loops that fail within --max-startup-time leave the check healthy: still starting. (An hour, so that
    // however slowly this machine runs, the check is made within it.)
    let starting = unreachable("1h");
    let snapshotz = after_a_failed_loop(&starting);
    assert!(!snapshotz.contains("\"decisions\""), "{snapshotz}");
    assert_eq!(
        get(starting.http, "/health-check"),
        (200, "OK".into()),
        "still starting"
    );
    drop(starting);

    // Past --max-startup-time with no loop done, the check turns failed, and says how long ago the
    // companion started: at least the limit, and no longer than this test has been waiting for it.
    let spawned = Instant::now();
    let companion = unreachable("1s");
    let deadline = Instant::now() + Duration::from_secs(20);
    let body = loop {
        let (code, body) = get(companion.http, "/health-check");
        if code == 500 {
            break body;
        }
        assert_eq!(code, 200, "{body}");
        assert!(Instant::now() < deadline, "never failed: {body}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let waited = spawned.elapsed().as_secs();
    let age = (body.strip_prefix("started "))
        .and_then(|rest| rest.split_once("s ago, more than 1s"))
        .and_then(|(secs, _)| secs.parse::<u64>().ok())
        .unwrap_or_else(|| panic!("{body}"));
    assert!((1..=waited).contains(&age), "{body} after {waited}s");
    let snapshotz = after_a_failed_loop(&companion);
    assert!(!snapshotz.contains("\"decisions\""), "{snapshotz}");
}

/// Pending pods the loop found a node for: on nodes already coming, or in its scale-ups.
fn helped(decisions: &Value) -> Vec<String> {
    let placed = decisions["placed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["pod"]);
    let scaled = decisions["scaleUp"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["pods"].as_array().unwrap().iter());
    let mut pods: Vec<String> = placed
        .chain(scaled)
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    pods.sort();
    pods
}

/// A provider and a fake API server with `pods`, with a kubeconfig for it.
async fn live_cluster(pods: Vec<Value>) -> Live {
    Live::new(Objects {
        pods,
        ..Objects::default()
    })
    .await
}

impl Live {
    /// `run` against this provider and cluster, with `args` besides.
    fn start(&self, args: &[&str]) -> Companion {
        let provider = self.provider.grpc.to_string();
        let kubeconfig = self.kubeconfig.to_str().unwrap();
        let mut all = vec!["--provider", &provider, "--kubeconfig", kubeconfig];
        all.extend_from_slice(args);
        start(&all)
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn run_watches_a_live_cluster_and_a_new_unschedulable_pod_starts_a_loop_early() {
    use common::kube_api;
    let live = live_cluster(vec![kube_api::unschedulable("web-0", "1")]).await;
    let fake = &live.fake;
    let companion = live.start(&[
        "--leader-elect=false",
        "--dry-run",
        // Only the first loop comes from the clock; the second must come from the watch.
        "--scan-interval",
        "1h",
    ]);
    let first = decisions_when(&companion, |d| !helped(d).is_empty());
    assert_eq!(helped(&first), ["default/web-0"]);

    let event =
        serde_json::json!({"type": "ADDED", "object": kube_api::unschedulable("web-1", "2")});
    fake.send_when_watched(4, "pods", event).await;
    let second = decisions_when(&companion, |d| helped(d).len() == 2);
    assert_eq!(helped(&second), ["default/web-0", "default/web-1"]);
    // A dry run changes nothing in the cluster.
    assert!(fake.objects.lock().unwrap().patches.is_empty());
}

#[test]
fn a_live_cluster_needs_a_readable_kubeconfig() {
    let output = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args([
            "run",
            "--provider",
            "127.0.0.1:1",
            "--address",
            "127.0.0.1:0",
        ])
        .args(["--kubeconfig", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--kubeconfig /nonexistent"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn one_replica_acts_and_a_standby_takes_over_when_it_goes() {
    use common::kube_api::{self, Fake};
    let live = live_cluster(vec![kube_api::unschedulable("web-0", "1")]).await;
    let fake = &live.fake;
    let replica = || {
        live.start(&[
            "--dry-run",
            "--scan-interval",
            "200ms",
            "--leader-elect-lease-duration",
            "2s",
            "--leader-elect-renew-deadline",
            "1s",
            "--leader-elect-retry-period",
            "200ms",
        ])
    };
    let first = replica();
    decisions_when(&first, |d| !helped(d).is_empty());
    let holder = |fake: &Fake| {
        fake.objects.lock().unwrap().leases["ekscale-autoscaler"]["spec"]["holderIdentity"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first_holder = holder(fake);
    assert!(
        first_holder.ends_with(&format!("_{}", first.child.id())),
        "{first_holder}"
    );

    // A second replica waits: healthy, no loop.
    let second = replica();
    // Standby once its first attempt finds the lease held.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !get(second.http, "/snapshotz").1.contains("standby") {
        assert!(
            Instant::now() < deadline,
            "the second replica never tried the lease"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(holder(fake), first_holder);
    assert_eq!(get(second.http, "/health-check"), (200, "OK".into()));

    // The leader goes: once its lease expires the standby takes it and acts.
    drop(first);
    let decisions = decisions_when(&second, |d| !helped(d).is_empty());
    assert_eq!(helped(&decisions), ["default/web-0"]);
    assert!(holder(fake).ends_with(&format!("_{}", second.child.id())));
    assert_eq!(
        fake.objects.lock().unwrap().leases["ekscale-autoscaler"]["spec"]["leaseTransitions"],
        1
    );

    // The API server fails: past its renew deadline the leader cannot know it still holds the lease, and
    // stops at once.
    fake.objects.lock().unwrap().lease_outage = true;
    let mut second = second;
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        if let Some(status) = second.child.try_wait().unwrap() {
            break status.code();
        }
        assert!(
            Instant::now() < deadline,
            "the leader kept running without its lease"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(code, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn acting_on_a_live_cluster_writes_the_status_config_map_and_events() {
    use common::kube_api;
    // Three 1-CPU pods: the two general nodes coming hold two (1930m each), the third needs a scale-up.
    let mut pods: Vec<Value> = (0..3)
        .map(|i| kube_api::unschedulable(&format!("web-{i}"), "1"))
        .collect();
    for pod in &mut pods {
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1".into();
    }
    let live = live_cluster(pods).await;
    let fake = &live.fake;
    let companion = live.start(&[
        "--leader-elect=false",
        "--namespace",
        "autoscaling",
        "--scan-interval",
        "1h",
    ]);
    decisions_when(&companion, |d| !d["scaleUp"].as_array().unwrap().is_empty());
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let written = {
            let objects = fake.objects.lock().unwrap();
            objects
                .config_maps
                .contains_key("ekscale-autoscaler-status")
                && objects
                    .events
                    .iter()
                    .any(|e| e["reason"] == "TriggeredScaleUp")
        };
        if written {
            break;
        }
        assert!(Instant::now() < deadline, "no status ConfigMap or events");
        std::thread::sleep(Duration::from_millis(100));
    }
    let objects = fake.objects.lock().unwrap();
    let status: Value = serde_norway::from_str(
        objects.config_maps["ekscale-autoscaler-status"]["data"]["status"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(status["autoscalerStatus"], "Running");
    let event = objects
        .events
        .iter()
        .find(|e| e["reason"] == "ScaledUpGroup")
        .unwrap();
    assert_eq!(event["regarding"]["namespace"], "autoscaling");
}
