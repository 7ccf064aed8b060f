//! Node group backoff after a failed scale-up, as cluster-autoscaler's (utils/backoff): 5 minutes at first,
//! doubled by each failure after the previous backoff ran out (up to 30 minutes), kept as it is by a
//! failure during a backoff, forgotten 3 hours after the last failure.

use std::collections::HashMap;
use std::time::{Duration, SystemTime};

#[derive(Clone, Copy, Debug)]
pub struct BackoffSettings {
    pub initial: Duration,
    pub max: Duration,
    pub reset: Duration,
}

impl Default for BackoffSettings {
    fn default() -> Self {
        BackoffSettings {
            initial: Duration::from_secs(5 * 60),
            max: Duration::from_secs(30 * 60),
            reset: Duration::from_secs(3 * 3600),
        }
    }
}

#[derive(Clone, Debug)]
struct Entry {
    duration: Duration,
    until: SystemTime,
    last_failure: SystemTime,
    why: String,
}

#[derive(Clone, Debug, Default)]
pub struct GroupBackoff {
    settings: BackoffSettings,
    groups: HashMap<String, Entry>,
    /// Groups whose capacity is out for a while though no scale-up failed (a Spot interruption came from
    /// them, as Karpenter's unavailable offerings): until when, and why. Unlike a failure's backoff, the
    /// nodes a group was asked for are still counted on.
    unavailable: HashMap<String, (SystemTime, String)>,
}

impl GroupBackoff {
    pub fn new(settings: BackoffSettings) -> GroupBackoff {
        GroupBackoff {
            settings,
            groups: HashMap::new(),
            unavailable: HashMap::new(),
        }
    }

    /// Takes `group`'s new capacity out until `until`, for `why`; no doubling, no failure counted.
    pub fn unavailable(&mut self, group: &str, why: String, until: SystemTime) {
        let entry = self
            .unavailable
            .entry(group.to_string())
            .or_insert((until, why.clone()));
        if entry.0 <= until {
            *entry = (until, why);
        }
    }

    /// Why `group` gets no new capacity now, if it was said unavailable.
    pub fn unavailable_now(&self, group: &str, now: SystemTime) -> Option<String> {
        let (until, why) = self
            .unavailable
            .get(group)
            .filter(|(until, _)| now < *until)?;
        Some(format!(
            "{why} (until {})",
            humantime::format_rfc3339_seconds(*until)
        ))
    }

    /// Records a failed scale-up of `group`; returns until when it is backed off.
    pub fn fail(&mut self, group: &str, why: String, now: SystemTime) -> SystemTime {
        let settings = self.settings;
        let duration = match self.groups.get(group) {
            Some(e) if now < e.until => e.duration,
            Some(e) if now.duration_since(e.last_failure).unwrap_or_default() < settings.reset => {
                (e.duration * 2).min(settings.max)
            }
            _ => settings.initial,
        };
        let until = now + duration;
        self.groups.insert(
            group.to_string(),
            Entry {
                duration,
                until,
                last_failure: now,
                why,
            },
        );
        until
    }

    /// Why `group` may not scale up now, if it is backed off. The end is a time, not a countdown, so that
    /// the reason reads the same every loop of the backoff (a status written back changes only when it does).
    pub fn backed_off(&self, group: &str, now: SystemTime) -> Option<String> {
        let entry = self.groups.get(group).filter(|e| now < e.until)?;
        Some(format!(
            "in backoff after failed scale-up ({}; until {})",
            entry.why,
            humantime::format_rfc3339_seconds(entry.until)
        ))
    }

    /// Drops what is older than the reset timeout.
    pub fn forget_old(&mut self, now: SystemTime) {
        let reset = self.settings.reset;
        self.groups
            .retain(|_, e| now.duration_since(e.last_failure).unwrap_or_default() < reset);
        self.unavailable.retain(|_, (until, _)| now < *until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: Duration = Duration::from_secs(60);

    #[test]
    fn doubles_after_expiry_keeps_during_and_resets_after_three_hours() {
        let mut backoff = GroupBackoff::new(BackoffSettings::default());
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(backoff.fail("web", "stockout".into(), t0), t0 + 5 * MIN);
        assert!(
            backoff
                .backed_off("web", t0 + 4 * MIN)
                .unwrap()
                .contains("stockout")
        );
        assert!(backoff.backed_off("web", t0 + 5 * MIN).is_none());
        assert!(backoff.backed_off("batch", t0).is_none());
        // During a backoff: same duration from now.
        assert_eq!(backoff.fail("web", "again".into(), t0 + MIN), t0 + 6 * MIN);
        // After it ran out: doubled, then capped at 30 minutes.
        let t1 = t0 + 7 * MIN;
        assert_eq!(backoff.fail("web", "x".into(), t1), t1 + 10 * MIN);
        let t2 = t1 + 11 * MIN;
        assert_eq!(backoff.fail("web", "x".into(), t2), t2 + 20 * MIN);
        let t3 = t2 + 21 * MIN;
        assert_eq!(backoff.fail("web", "x".into(), t3), t3 + 30 * MIN);
        let t4 = t3 + 31 * MIN;
        assert_eq!(backoff.fail("web", "x".into(), t4), t4 + 30 * MIN);
        // Three hours after the last failure it starts over.
        let t5 = t4 + Duration::from_secs(3 * 3600);
        backoff.forget_old(t5);
        assert_eq!(backoff.fail("web", "x".into(), t5), t5 + 5 * MIN);
    }
}
