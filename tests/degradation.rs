//! Graceful degradation, `ekscale-autoscaler run` as a process over a live cluster (the fake API server, at
//! the HTTP layer): a loop over 200,000 pending pods while `/health-check` answers throughout, and with
//! `--enable-graceful-degradation` a batching timeout that leaves pods for the next loop, which takes them.

mod common;

use common::companion::Live;
use common::companion::{Companion, decisions_when, get};
use common::kube_api::{self, Objects};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

impl Live {
    /// `run --dry-run` over this cluster (no Lease), with `args` besides; every line it logs is sent on.
    fn start(&self, args: &[&str]) -> (Companion, Receiver<String>) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ekscale-autoscaler"))
            .args(["run", "--address", "127.0.0.1:0", "--leader-elect=false"])
            .args(["--dry-run", "--provider", &self.provider.grpc.to_string()])
            .args(["--kubeconfig", self.kubeconfig.to_str().unwrap()])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("starting ekscale-autoscaler run");
        let lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let (send, log) = channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        // Killed when dropped, whatever happens from here.
        let mut companion = Companion {
            child,
            http: "127.0.0.1:1".parse().unwrap(),
        };
        let listening = next_line(&log, |l| l.contains("address="));
        let rest = listening.split("address=").nth(1).unwrap();
        companion.http = rest.split_whitespace().next().unwrap().parse().unwrap();
        (companion, log)
    }
}

/// The next line logged that `wanted` picks (the lines before it are passed over). A generous deadline:
/// a loop over 200,000 pods in a debug build on a busy machine.
fn next_line(log: &Receiver<String>, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = log
            .recv_timeout(left)
            .expect("the line awaited was never logged");
        if wanted(&line) {
            return line;
        }
    }
}

/// `/health-check` asked again and again on a thread of its own, each answer counted, until stopped.
struct Poller {
    answers: Arc<AtomicUsize>,
    /// Answers other than 200 OK, as (code, body).
    wrong: Arc<Mutex<Vec<(u16, String)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Poller {
    fn start(http: std::net::SocketAddr) -> Poller {
        let answers = Arc::new(AtomicUsize::new(0));
        let wrong = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, w, s) = (answers.clone(), wrong.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                // Each answer must arrive: the helper's read fails the test when one does not.
                let (code, body) = get(http, "/health-check");
                if (code, body.as_str()) != (200, "OK") {
                    w.lock().unwrap().push((code, body));
                }
                a.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let thread = Some(thread);
        Poller {
            answers,
            wrong,
            stop,
            thread,
        }
    }

    fn answers(&self) -> usize {
        self.answers.load(Ordering::Relaxed)
    }

    /// Stops polling; every answer must have been 200 OK.
    fn finish(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .unwrap()
            .join()
            .expect("every answer arrived");
        assert!(self.wrong.lock().unwrap().is_empty(), "{:?}", self.wrong);
        self.answers()
    }
}

/// A metric's value in a `/metrics` page, by its whole name and labels.
fn metric(page: &str, name: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_loop_over_200000_pending_pods_answers_health_check_throughout() {
    const PENDING: usize = 200_000;
    let pods = (0..PENDING)
        .map(|i| kube_api::unschedulable(&format!("web-{i}"), "1"))
        .collect();
    let live = Live::new(Objects {
        pods,
        ..Objects::default()
    })
    .await;
    let (companion, log) = live.start(&["--scan-interval", "1s"]);
    // Polled from before the first loop ends, so from before the second starts: that one is watched whole.
    let poller = Poller::start(companion.http);
    let first = next_line(&log, |l| l.contains("loop done"));
    assert!(first.contains("no_scale_up="), "{first}");
    let started = next_line(&log, |l| l.contains("loop started"));
    assert!(started.contains(&format!("pods={PENDING}")), "{started}");
    let before = poller.answers();
    let done = next_line(&log, |l| l.contains("loop done"));
    let during = poller.answers() - before;
    let answers = poller.finish();
    // The endpoints answered while the loop ran, not only before and after it.
    assert!(
        during >= 2,
        "{during} answers during the loop ({answers} in all): {done}"
    );

    let (code, page) = get(companion.http, "/metrics");
    assert_eq!(code, 200);
    let pending = metric(
        &page,
        "ekscale_unschedulable_pods_count{type=\"unschedulable\"}",
    );
    assert_eq!(pending, Some(PENDING as f64), "{page}");
    // Off by default: every pod was tried.
    let skipped = metric(
        &page,
        "ekscale_skipped_pods_count{requestor=\"filter-out-pod-list-processor\"}",
    );
    assert_eq!(skipped, Some(0.0), "{page}");
}

/// A pending pod of the batch workload: bigger than the web pods, and another equivalence group.
fn batch(name: &str) -> Value {
    let mut pod = kube_api::unschedulable(name, "1");
    pod["metadata"]["labels"]["app"] = "batch".into();
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1".into();
    pod
}

/// The pods among `decisions` a node was found for: placed where nodes are or coming, or in a scale-up.
fn helped(decisions: &Value) -> Vec<String> {
    let placed = decisions["placed"].as_array().unwrap().iter();
    let mut pods: Vec<String> = placed
        .map(|p| p["pod"].as_str().unwrap().to_string())
        .collect();
    for s in decisions["scaleUp"].as_array().unwrap() {
        let scaled = s["pods"].as_array().unwrap().iter();
        pods.extend(scaled.map(|p| p.as_str().unwrap().to_string()));
    }
    pods.sort();
    pods
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batching_timeout_leaves_pods_for_the_next_loop_which_takes_them() {
    // Two web pods (one equivalence group, tried first: it comes first) that fit the node there is, and
    // three batch pods after them.
    let mut node = kube_api::node("node-0");
    node["spec"]["taints"] = Value::Array(Vec::new());
    let mut pods: Vec<Value> = (0..2)
        .map(|i| kube_api::unschedulable(&format!("web-{i}"), "1"))
        .collect();
    pods.extend((0..3).map(|i| batch(&format!("batch-{i}"))));
    let live = Live::new(Objects {
        nodes: vec![node],
        pods,
        ..Objects::default()
    })
    .await;
    // A budget spent at once: each loop tries its first equivalence group and no other.
    let (companion, _log) = live.start(&[
        "--scan-interval",
        "1s",
        "--enable-graceful-degradation",
        "--pending-pods-batching-timeout",
        "1ns",
    ]);
    let first = decisions_when(&companion, |d| d.get("skippedPods").is_some());
    assert_eq!(first["skippedPods"], 3, "{first:#}");
    // Graceful degradation mode, counted in loops as upstream counts them.
    assert!(
        first["gracefulDegradationLoops"].as_u64() >= Some(1),
        "{first:#}"
    );
    assert_eq!(helped(&first), ["default/web-0", "default/web-1"]);
    assert!(first["scaleUp"].as_array().unwrap().is_empty(), "{first:#}");
    let skipped: Vec<&str> = (first["noScaleUp"].as_array().unwrap().iter())
        .filter(|n| {
            let why = n["reasons"][""].as_str().unwrap_or_default();
            why.contains("exceeding pending pod batching timeout")
        })
        .map(|n| n["pod"].as_str().unwrap())
        .collect();
    assert_eq!(
        skipped,
        ["default/batch-0", "default/batch-1", "default/batch-2"]
    );
    let (_, page) = get(companion.http, "/metrics");
    let metric_name = "ekscale_skipped_pods_count{requestor=\"filter-out-pod-list-processor\"}";
    assert_eq!(metric(&page, metric_name), Some(3.0), "{page}");

    // The scheduler binds the web pods where the loop placed them; the next loop starts with the batch pods.
    for i in 0..2 {
        let mut bound = kube_api::unschedulable(&format!("web-{i}"), "2");
        bound["spec"]["nodeName"] = "node-0".into();
        bound["status"] = serde_json::json!({"phase": "Running"});
        let event = serde_json::json!({"type": "MODIFIED", "object": bound});
        live.fake.send_when_watched(4, "pods", event).await;
    }
    let next = decisions_when(&companion, |d| d.get("skippedPods").is_none());
    let batch = ["default/batch-0", "default/batch-1", "default/batch-2"];
    assert_eq!(helped(&next), batch, "{next:#}");
    assert!(next.get("gracefulDegradationLoops").is_none(), "{next:#}");
    let (_, page) = get(companion.http, "/metrics");
    assert_eq!(metric(&page, metric_name), Some(0.0), "{page}");
}
