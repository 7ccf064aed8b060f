//! The last loop, as `/health-check` and `/snapshotz` serve it: when the loop last ran and last succeeded
//! (cluster-autoscaler's liveness rules), and what it saw and decided. A loop still running counts as
//! activity while it shows progress (`Progress`, beaten by its stages), however long it takes.

use crate::autoscaler::cluster::ClusterView;
use crate::autoscaler::degradation::Progress;
use crate::autoscaler::status::Status;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `--max-inactivity`, `--max-failing-time`, `--max-startup-time`.
#[derive(Clone, Copy, Debug)]
pub struct Liveness {
    pub max_inactivity: Duration,
    pub max_failing_time: Duration,
    pub max_startup_time: Duration,
}

impl Default for Liveness {
    fn default() -> Liveness {
        Liveness {
            max_inactivity: Duration::from_secs(600),
            max_failing_time: Duration::from_secs(900),
            max_startup_time: Duration::from_secs(1200),
        }
    }
}

#[derive(Debug)]
struct LoopRecord {
    /// Waiting for the lease: alive, but not looping.
    standby: bool,
    started: SystemTime,
    last_activity: Option<SystemTime>,
    last_success: Option<SystemTime>,
    /// The last loop that decided; kept as it is and turned into JSON only when `/snapshotz` is asked.
    decided: Option<LastDecision>,
    /// A loop that failed since (time, why).
    failure: Option<(SystemTime, String)>,
}

#[derive(Debug)]
struct LastDecision {
    at: SystemTime,
    cluster: Value,
    status: Arc<Status>,
}

/// Shared between the loop (which records) and the HTTP endpoints (which read).
#[derive(Debug)]
pub struct LastLoop {
    liveness: Liveness,
    state: Mutex<LoopRecord>,
    /// The running loop's progress: activity too.
    progress: Progress,
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

impl LastLoop {
    /// Alive from `started` by the loops it is told of, and by each beat of the running loop's `progress`.
    pub fn new(liveness: Liveness, started: SystemTime, progress: Progress) -> LastLoop {
        LastLoop {
            liveness,
            progress,
            state: Mutex::new(LoopRecord {
                standby: false,
                started,
                last_activity: None,
                last_success: None,
                decided: None,
                failure: None,
            }),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, LoopRecord> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waiting for another replica's lease (healthy, no loop), or leading from `now` (the start-up time
    /// counts from then).
    pub fn standby(&self, waiting: bool, now: SystemTime) {
        let mut state = self.state();
        if state.standby && !waiting {
            state.started = now;
        }
        state.standby = waiting;
        if waiting {
            state.decided = None;
            state.failure = None;
        }
    }

    /// A loop that decided: what it saw (summarised) and every decision and reason.
    pub fn succeeded(&self, view: &ClusterView, status: Arc<Status>, at: SystemTime) {
        let pending = view.pods.iter().filter(|p| p.node_name.is_none()).count();
        let cluster = json!({
            "nodes": view.nodes.len(),
            "readyNodes": view.nodes.iter().filter(|n| n.ready).count(),
            "pods": view.pods.len(),
            "pendingPods": pending,
            "podDisruptionBudgets": view.pdbs.len(),
        });
        let mut state = self.state();
        state.last_activity = Some(at);
        state.last_success = Some(at);
        state.decided = Some(LastDecision {
            at,
            cluster,
            status,
        });
        state.failure = None;
    }

    /// A loop that could not decide.
    pub fn failed(&self, why: &str, at: SystemTime) {
        let mut state = self.state();
        state.last_activity = Some(at);
        state.failure = Some((at, why.to_string()));
    }

    /// `Ok` while the loop is alive by cluster-autoscaler's rules, else why not.
    pub fn health(&self, now: SystemTime) -> Result<(), Late> {
        let state = self.state();
        if state.standby {
            return Ok(());
        }
        let since = |t: SystemTime| now.duration_since(t).unwrap_or_default();
        let late = |what: &'static str, age: Duration, limit: Duration| {
            let age = Duration::from_secs(age.as_secs());
            Err(Late { what, age, limit })
        };
        match (state.last_activity, state.last_success) {
            (_, None) => {
                let age = since(state.started);
                if age > self.liveness.max_startup_time {
                    return late("started", age, self.liveness.max_startup_time);
                }
                Ok(())
            }
            (activity, Some(success)) => {
                let active = since(activity.max(self.progress.last()).unwrap_or(success));
                if active > self.liveness.max_inactivity {
                    return late("last loop", active, self.liveness.max_inactivity);
                }
                // A loop running since a success, still making progress, is not failing either.
                let working = self.progress.last().filter(|_| state.failure.is_none());
                let ok = since(working.max(Some(success)).unwrap_or(success));
                if ok > self.liveness.max_failing_time {
                    return late("last successful loop", ok, self.liveness.max_failing_time);
                }
                Ok(())
            }
        }
    }

    /// The JSON `/snapshotz` serves.
    pub fn snapshot(&self) -> Value {
        let state = self.state();
        let mut snapshot = match &state.decided {
            Some(d) => {
                let mut decisions = json!(*d.status);
                let truncated = bound_lists(&mut decisions);
                let mut snapshot =
                    json!({"time": unix(d.at), "cluster": d.cluster, "decisions": decisions});
                if !truncated.is_empty() {
                    snapshot["truncated"] = json!(truncated);
                }
                snapshot
            }
            None if state.standby => json!({"status": "standby: another replica holds the lease"}),
            None => json!({"status": "no loop has run yet"}),
        };
        if let Some((at, why)) = &state.failure {
            snapshot["lastFailure"] = json!({"time": unix(*at), "error": why});
        }
        snapshot
    }
}

/// The most entries `/snapshotz` lists of one kind of decision: at 100,000 nodes a loop can find 70,000
/// removable, and a page of all of them is read by nobody (upstream bounds its unremovable list likewise).
pub const LISTED: usize = 1000;

/// Cuts every list of `decisions` to [`LISTED`] entries, returning each cut list's full length by name.
fn bound_lists(decisions: &mut Value) -> serde_json::Map<String, Value> {
    let mut totals = serde_json::Map::new();
    if let Some(fields) = decisions.as_object_mut() {
        for (name, value) in fields.iter_mut() {
            if let Some(list) = value.as_array_mut().filter(|l| l.len() > LISTED) {
                totals.insert(name.clone(), json!(list.len()));
                list.truncate(LISTED);
            }
        }
    }
    totals
}

/// Why the loop is not alive by cluster-autoscaler's rules: `what` (started, the last loop, the last
/// successful one) was `age` ago, more than `limit` allows.
#[derive(Debug, thiserror::Error)]
#[error("{what} {} ago, more than {}", humantime::format_duration(*.age), humantime::format_duration(*.limit))]
pub struct Late {
    pub what: &'static str,
    pub age: Duration,
    pub limit: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_follows_cluster_autoscalers_liveness_rules() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let last = LastLoop::new(Liveness::default(), start, Progress::default());
        let at = |s: u64| start + Duration::from_secs(s);
        assert!(last.health(at(60)).is_ok(), "starting");
        assert!(
            last.health(at(1201))
                .unwrap_err()
                .to_string()
                .starts_with("started 20m 1s ago")
        );
        last.succeeded(&ClusterView::default(), Arc::default(), at(1300));
        assert!(last.health(at(1400)).is_ok());
        // Failing loops keep it active but not successful: unhealthy after 15 minutes.
        for s in (1400..2300).step_by(60) {
            last.failed("provider down", at(s));
        }
        let why = last.health(at(2201)).unwrap_err().to_string();
        assert!(why.starts_with("last successful loop 15m 1s ago"), "{why}");
        assert_eq!(last.snapshot()["lastFailure"]["error"], "provider down");
        // No loop at all for 10 minutes.
        last.succeeded(&ClusterView::default(), Arc::default(), at(3000));
        assert!(
            last.health(at(3601))
                .unwrap_err()
                .to_string()
                .starts_with("last loop 10m 1s ago")
        );
    }

    #[test]
    fn a_long_loop_that_shows_progress_stays_alive() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let at = |s: u64| start + Duration::from_secs(s);
        let progress = Progress::default();
        let last = LastLoop::new(Liveness::default(), start, progress.clone());
        last.succeeded(&ClusterView::default(), Arc::default(), at(60));
        // The next loop runs for 20 minutes, beating as it goes: alive throughout, since its last beat.
        for s in (120..1260).step_by(60) {
            progress.beat_at(at(s));
            assert!(last.health(at(s + 59)).is_ok(), "at {s}");
        }
        // A loop that stops beating is inactive 10 minutes after its last beat.
        let why = last.health(at(1801)).unwrap_err().to_string();
        assert!(why.starts_with("last loop 10m 1s ago"), "{why}");
        // Loops that fail are failing 15 minutes after the last success, however they beat.
        last.succeeded(&ClusterView::default(), Arc::default(), at(2000));
        for s in (2060..2960).step_by(60) {
            progress.beat_at(at(s));
            last.failed("provider down", at(s));
        }
        let why = last.health(at(2901)).unwrap_err().to_string();
        assert!(why.starts_with("last successful loop 15m 1s ago"), "{why}");
    }

    #[test]
    fn long_lists_are_cut_with_their_totals() {
        use crate::autoscaler::status::{LoopProblem, LoopStage, ProblemKind};
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let last = LastLoop::new(Liveness::default(), start, Progress::default());
        let status = Status {
            errors: (0..LISTED + 5)
                .map(|i| {
                    LoopProblem::new(
                        LoopStage::ScaleUp,
                        ProblemKind::Action,
                        format!("error {i}"),
                    )
                })
                .collect(),
            ..Status::default()
        };
        last.succeeded(&ClusterView::default(), Arc::new(status), start);
        let snapshot = last.snapshot();
        assert_eq!(
            snapshot["decisions"]["errors"].as_array().unwrap().len(),
            LISTED
        );
        assert_eq!(
            snapshot["decisions"]["errors"][LISTED - 1],
            format!("error {}", LISTED - 1)
        );
        assert_eq!(snapshot["truncated"], json!({"errors": LISTED + 5}));
        // Nothing cut, nothing said.
        last.succeeded(&ClusterView::default(), Arc::default(), start);
        assert!(last.snapshot().get("truncated").is_none());
    }
}
