//! The time source of the simulated EKS and the cluster simulator.
//!
//! Real time for a provider serving cluster-autoscaler; scaled time so the demo can play a day in a minute;
//! manual time so tests step through instance lifecycles without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A monotonic clock whose readings are durations since it started.
#[derive(Clone, Debug)]
pub struct Clock(Source);

#[derive(Clone, Debug)]
enum Source {
    Real(Instant),
    Scaled { start: Instant, speed: f64 },
    Manual(Arc<AtomicU64>),
}

impl Clock {
    /// Wall-clock time.
    pub fn real() -> Self {
        Clock(Source::Real(Instant::now()))
    }

    /// Time that runs `speed` times faster than the wall clock.
    pub fn scaled(speed: f64) -> Self {
        Clock(Source::Scaled {
            start: Instant::now(),
            speed: speed.max(f64::MIN_POSITIVE),
        })
    }

    /// Time that only moves when [`Clock::advance`] is called.
    pub fn manual() -> Self {
        Clock(Source::Manual(Arc::new(AtomicU64::new(0))))
    }

    /// Time since the clock started.
    pub fn now(&self) -> Duration {
        match &self.0 {
            Source::Real(start) => start.elapsed(),
            Source::Scaled { start, speed } => start.elapsed().mul_f64(*speed),
            Source::Manual(nanos) => Duration::from_nanos(nanos.load(Ordering::SeqCst)),
        }
    }

    /// Moves a manual clock forward; other clocks ignore it (they move by themselves).
    pub fn advance(&self, by: Duration) {
        if let Source::Manual(nanos) = &self.0 {
            let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
            nanos.fetch_add(by, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = Clock::manual();
        assert_eq!(clock.now(), Duration::ZERO);
        clock.advance(Duration::from_secs(30));
        let copy = clock.clone();
        assert_eq!(copy.now(), Duration::from_secs(30));
    }

    #[test]
    fn scaled_clock_runs_faster() {
        let clock = Clock::scaled(1000.0);
        std::thread::sleep(Duration::from_millis(5));
        assert!(clock.now() >= Duration::from_secs(5));
    }
}
