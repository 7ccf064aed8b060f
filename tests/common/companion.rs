//! `ekscale-autoscaler run` as a process on a loopback address it picks, and what it serves there.

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The companion started on a loopback address it picks; killed when dropped.
pub struct Companion {
    pub child: Child,
    pub http: SocketAddr,
}

impl Drop for Companion {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(args: &[&str]) -> Companion {
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
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let response = super::http_get(addr, path);
    let code = response[9..12].parse().unwrap();
    let body = response.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (code, body)
}

/// The decisions /snapshotz shows, once a loop has run and `ready` says they are the ones awaited.
pub fn decisions_when(companion: &Companion, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, body) = get(companion.http, "/snapshotz");
        let json: Value = serde_json::from_str(&body).unwrap();
        if json.get("decisions").is_some_and(&ready) {
            return json["decisions"].clone();
        }
        assert!(Instant::now() < deadline, "not seen: {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Companion {
    /// Stops it as an operator would (SIGTERM) and waits for it to exit.
    pub fn terminate(mut self) -> ExitStatus {
        let term = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(term.success());
        self.child.wait().unwrap()
    }
}

/// A provider binary and a fake API server serving `objects`, with a kubeconfig for it: the live cluster an
/// `ekscale-autoscaler run` process reads.
pub struct Live {
    pub provider: super::Binary,
    pub fake: super::kube_api::Fake,
    pub kubeconfig: std::path::PathBuf,
    pub _dir: tempfile::TempDir,
}

impl Live {
    pub async fn new(objects: super::kube_api::Objects) -> Live {
        let provider = super::Binary::start(&[]);
        let fake = super::kube_api::Fake::new(objects);
        let api = super::kube_api::serve(fake.clone()).await;
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(&kubeconfig, super::kube_api::kubeconfig(api)).unwrap();
        Live {
            provider,
            fake,
            kubeconfig,
            _dir: dir,
        }
    }
}
