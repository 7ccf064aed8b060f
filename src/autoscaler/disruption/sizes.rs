//! Scheduled sizes (`schedules:` in an entry of the disruption document): while a window is open, the group's
//! min and max sizes are the window's, as Karpenter users ask for (kubernetes-sigs/karpenter #1177, #2711):
//! a development group at zero overnight, a pool grown before the 9 o'clock peak.
//!
//! ```yaml
//! schedules:
//!   - {schedule: "0 19 * * mon-fri", duration: 13h, timeZone: Europe/Berlin, minSize: 0, maxSize: 0}
//! ```
//!
//! A window's `minSize` or `maxSize` left out keeps the group's own. Where windows overlap, the first written
//! that is open wins.

use super::schedule::{Schedule, ScheduleError};
use std::time::SystemTime;

/// One of `schedules`: a window and the sizes in force while it is open.
#[derive(Clone, Debug)]
pub struct SizeSchedule {
    pub window: Schedule,
    pub min_size: Option<i32>,
    pub max_size: Option<i32>,
}

/// The sizes a schedule holds a group to now, and until when.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduledSize {
    /// Which of the entry's `schedules` (its index).
    pub index: usize,
    pub min_size: Option<i32>,
    pub max_size: Option<i32>,
    /// When its window closes.
    pub until: SystemTime,
}

/// The first of `schedules` whose window is open at `now`; an error when one cannot be evaluated (its sizes
/// are then not known, and the caller keeps the group's own).
pub fn in_force(
    schedules: &[SizeSchedule],
    now: SystemTime,
) -> Result<Option<ScheduledSize>, ScheduleError> {
    for (index, s) in schedules.iter().enumerate() {
        if let Some((_, until)) = s.window.active_window(now)? {
            return Ok(Some(ScheduledSize {
                index,
                min_size: s.min_size,
                max_size: s.max_size,
                until,
            }));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(text: &str) -> SystemTime {
        SystemTime::from(text.parse::<jiff::Timestamp>().unwrap())
    }

    #[test]
    fn the_first_open_window_holds_the_sizes_until_it_closes() {
        let night = SizeSchedule {
            window: Schedule::new(
                "0 19 * * mon-fri",
                Duration::from_secs(13 * 3600),
                Some("Europe/Berlin"),
            )
            .unwrap(),
            min_size: Some(0),
            max_size: Some(0),
        };
        let always = SizeSchedule {
            window: Schedule::new("@daily", Duration::from_secs(24 * 3600), None).unwrap(),
            min_size: Some(2),
            max_size: None,
        };
        let both = [night, always];
        // Monday 2026-03-02 20:00 in Berlin (19:00 UTC): the night window, open until 08:00 Berlin.
        let night_now = in_force(&both, at("2026-03-02T19:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!((night_now.index, night_now.max_size), (0, Some(0)));
        assert_eq!(night_now.until, at("2026-03-03T07:00:00Z"));
        // Tuesday noon: only the daily one.
        let day = in_force(&both, at("2026-03-03T12:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!((day.index, day.min_size, day.max_size), (1, Some(2), None));
        assert_eq!(
            in_force(&both[..1], at("2026-03-03T12:00:00Z")).unwrap(),
            None
        );
    }

    fn window(cron: &str, hours: u64, zone: &str, max: i32) -> SizeSchedule {
        SizeSchedule {
            window: Schedule::new(cron, Duration::from_secs(hours * 3600), Some(zone)).unwrap(),
            min_size: None,
            max_size: Some(max),
        }
    }

    #[test]
    fn a_night_window_follows_the_zones_wall_clock_across_daylight_saving() {
        // 19:00 to 08:00 on weekday nights in Berlin: 18:00 UTC in winter, 17:00 UTC in summer (clocks went
        // forward on Sunday 2026-03-29 and go back on Sunday 2026-10-25).
        let night = [window("0 19 * * mon-fri", 13, "Europe/Berlin", 0)];
        let until = |now: &str| in_force(&night, at(now)).unwrap().map(|s| s.until);
        assert_eq!(until("2026-03-26T17:30:00Z"), None); // Thursday 18:30 CET
        assert_eq!(
            until("2026-03-26T18:30:00Z"),
            Some(at("2026-03-27T07:00:00Z"))
        );
        assert_eq!(
            until("2026-03-30T17:30:00Z"),
            Some(at("2026-03-31T06:00:00Z"))
        ); // 19:30 CEST
        assert_eq!(until("2026-03-31T06:30:00Z"), None); // 08:30 CEST
        assert_eq!(until("2026-10-26T17:30:00Z"), None); // Monday 18:30 CET
        assert_eq!(
            until("2026-10-26T18:00:00Z"),
            Some(at("2026-10-27T07:00:00Z"))
        );
        // Friday night's window closes on Saturday morning; none opens on the weekend.
        assert_eq!(
            until("2026-10-31T06:59:00Z"),
            Some(at("2026-10-31T07:00:00Z"))
        );
        assert_eq!(until("2026-10-31T20:00:00Z"), None);
    }

    #[test]
    fn one_window_in_two_zones_opens_at_each_zones_hour() {
        let berlin = [window("0 9 * * *", 8, "Europe/Berlin", 1)];
        let new_york = [window("0 9 * * *", 8, "America/New_York", 1)];
        let open = |w: &[SizeSchedule], now: &str| in_force(w, at(now)).unwrap().is_some();
        // 13:00 UTC in June: 15:00 in Berlin, 09:00 in New York.
        assert!(open(&berlin, "2026-06-10T13:00:00Z"));
        assert!(open(&new_york, "2026-06-10T13:00:00Z"));
        // 12:59 UTC: New York's has not opened yet; 15:00 UTC: Berlin's has closed.
        assert!(!open(&new_york, "2026-06-10T12:59:00Z"));
        assert!(!open(&berlin, "2026-06-10T15:00:00Z"));
        assert!(open(&new_york, "2026-06-10T15:00:00Z"));
    }
}
