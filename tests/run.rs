//! `ekscale-autoscaler run --snapshot F --dry-run` as a process, as an operator would try it: its
//! /health-check, /metrics and /snapshotz answer for the loops it ran.

mod common;

use common::Binary;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The companion started on a loopback address it picks; killed when dropped.
struct Companion {
    child: Child,
    http: SocketAddr,
}

impl Drop for Companion {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Companion {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
        .args(["run", "--address", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting ekscale-autoscaler run");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("address=").nth(1) {
            let http = rest.split_whitespace().next().unwrap().parse().unwrap();
            std::thread::spawn(move || lines.for_each(drop));
            return Companion { child, http };
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("ekscale-autoscaler run did not start listening");
}

/// (status code, body) of a GET.
fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let code = response[9..12].parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (code, body)
}

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
}

#[test]
fn health_check_fails_while_the_provider_is_unreachable() {
    // Nothing listens there: every loop fails, and with --max-startup-time 1s the check says so.
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = unused.local_addr().unwrap();
    drop(unused);
    let snapshot = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/snapshot.yaml");
    let companion = start(&[
        "--provider",
        &dead.to_string(),
        "--snapshot",
        snapshot,
        "--dry-run",
        "--scan-interval",
        "200ms",
        "--max-startup-time",
        "1s",
    ]);
    assert_eq!(
        get(companion.http, "/health-check").0,
        200,
        "still starting"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let (code, body) = get(companion.http, "/health-check");
    assert_eq!(code, 500, "{body}");
    assert!(body.starts_with("started 1s ago, more than 1s"), "{body}");
    let (_, snapshotz) = get(companion.http, "/snapshotz");
    assert!(snapshotz.contains("lastFailure"), "{snapshotz}");
}
