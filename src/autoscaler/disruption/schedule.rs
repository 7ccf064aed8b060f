//! A budget's schedule: a cron expression, the duration of the window each firing opens, and the time zone the
//! expression is read in. Karpenter's rule (`Budget.IsActive`): a budget is active while some firing `f` has
//! `f <= now < f + duration`; each firing opens the half-open window `[f, f + duration)`, and windows that
//! overlap merge. Karpenter reads every schedule in UTC; we take an IANA `timeZone` (UTC when left out), as
//! Karpenter's open pull request #2032 and a CronJob's `spec.timeZone` do.
//!
//! Cron is the five fields of cron and CronJobs (minute hour day-of-month month day-of-week) and the
//! `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight` and `@hourly` shorthands. It is
//! croner's reading of them, set to Karpenter's (robfig/cron's) where they differ: exactly five fields (no
//! seconds, no years), `5/5` taken as `5-59/5`, `@midnight` as `@daily`, and day-of-month or day-of-week
//! (either matches) when both are restricted. croner is more lenient than robfig in a few ways we keep: `7`
//! is Sunday too, ranges may wrap into Sunday (`fri-sun`), and its extensions `L` (last), `W` (nearest
//! weekday), `#` (nth weekday) and a `+` before day-of-week (both days must match) are taken.
//!
//! Daylight saving time, as croner decides it (robfig and CronJobs decide otherwise: they skip a firing in
//! a skipped hour and fire twice in a repeated one):
//! - When clocks go forward, a firing at a fixed time inside the skipped hour happens at the first instant
//!   after it (`30 2 * * *` in Europe/Berlin on 2024-03-31 fires at 03:00 CEST), so a maintenance window is
//!   never lost; expressions with a wildcard or a step in the minute or hour skip the missing times.
//! - When clocks go back, a firing at a fixed time inside the repeated hour happens once, at its first
//!   occurrence; expressions with a wildcard or a step fire in both.
//! - `duration` is elapsed time: an 8h window opened at midnight on the day clocks go forward closes at
//!   09:00 on the wall clock.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::{TimeZone, TimeZoneDatabase};
use jiff::{Timestamp, Zoned};
use std::fmt;
use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

/// The IANA database compiled into the program (jiff's `tzdb-bundle-always`), never the machine's: a
/// budget's window must not move because an image ships older tzdata, or none.
static ZONES: LazyLock<TimeZoneDatabase> = LazyLock::new(TimeZoneDatabase::bundled);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    #[error(
        "{text:?} is not a cron schedule (minute hour day-of-month month day-of-week): {reason}"
    )]
    Cron { text: String, reason: String },
    #[error("{0:?} never fires")]
    NeverFires(String),
    #[error("{0:?} is not an IANA time zone, as Europe/Berlin or America/New_York")]
    Zone(String),
    #[error("a window of no length is never open")]
    EmptyWindow,
    #[error(
        "{0:?} is not whole minutes: a window is hours and minutes, as cron fires on minutes (Karpenter's rule)"
    )]
    PartMinute(String),
    /// Only when the cron search gives up at evaluation (a date the calendar cannot hold, or an expression
    /// that fires once in decades): the budget then allows nothing, as Karpenter's does when one fails.
    /// (The schedule's text is left to the caller, who has it: the error stays small.)
    #[error("could not be evaluated at {}: {reason}", instant(*at))]
    Evaluation { at: SystemTime, reason: String },
}

/// An instant as RFC 3339 in UTC, or as Rust writes a `SystemTime` when no calendar holds it.
fn instant(at: SystemTime) -> String {
    Timestamp::try_from(at).map_or_else(|_| format!("{at:?}"), |t| t.to_string())
}

#[derive(Clone, Debug)]
pub struct Schedule {
    text: String,
    cron: Cron,
    duration: Duration,
    zone: TimeZone,
    zone_name: String,
}

impl Schedule {
    /// A schedule from `cron` (as written), the window's `duration`, and the IANA zone the cron is read in
    /// (UTC when `None`).
    pub fn new(
        cron: &str,
        duration: Duration,
        zone: Option<&str>,
    ) -> Result<Schedule, ScheduleError> {
        let zone = match zone {
            None => TimeZone::UTC,
            Some(name) => ZONES
                .get(name)
                .map_err(|_| ScheduleError::Zone(name.to_string()))?,
        };
        if duration.is_zero() {
            return Err(ScheduleError::EmptyWindow);
        }
        if !duration.as_secs().is_multiple_of(60) || duration.subsec_nanos() != 0 {
            return Err(ScheduleError::PartMinute(format!("{duration:?}")));
        }
        let parsed = parse_cron(cron).map_err(|e| ScheduleError::Cron {
            text: cron.to_string(),
            reason: e.to_string(),
        })?;
        // An expression can be well formed and name no real time (`0 0 30 2 *`): croner then searches for
        // years before it gives up. Refuse it here, once, rather than evaluate it every loop (robfig would
        // call such a budget active forever). Any expression that fires at all fires within one 400-year
        // cycle of the calendar, which the search covers.
        let epoch = Timestamp::UNIX_EPOCH.to_zoned(zone.clone());
        if parsed.find_next_occurrence(&epoch, false).is_err() {
            return Err(ScheduleError::NeverFires(cron.to_string()));
        }
        Ok(Schedule {
            text: cron.to_string(),
            cron: parsed,
            duration,
            zone_name: zone.iana_name().unwrap_or("UTC").to_string(),
            zone,
        })
    }

    /// The cron expression as written.
    pub fn cron(&self) -> &str {
        &self.text
    }

    pub fn duration(&self) -> Duration {
        self.duration
    }

    /// The zone's IANA name, as the database spells it (`UTC` when none was given).
    pub fn time_zone(&self) -> &str {
        &self.zone_name
    }

    /// The window open at `now`: `[f, f + duration)` for the latest firing `f <= now`, when `now` is inside
    /// it; `None` when the schedule is inactive. A window longer than the time between firings is reported
    /// from its latest firing, though it has been open since an earlier one.
    pub fn active_window(
        &self,
        now: SystemTime,
    ) -> Result<Option<(SystemTime, SystemTime)>, ScheduleError> {
        let fired = self.latest_firing(now)?;
        let end = fired
            .checked_add(self.duration)
            .expect("a firing before now plus at most 100 years fits in a SystemTime");
        Ok((now < end).then_some((fired, end)))
    }

    /// The latest firing at or before `now`, read in the schedule's zone.
    fn latest_firing(&self, now: SystemTime) -> Result<SystemTime, ScheduleError> {
        let failed = |reason: String| ScheduleError::Evaluation { at: now, reason };
        let at = Timestamp::try_from(now).map_err(|e| failed(e.to_string()))?;
        let fired = (self.cron)
            .find_previous_occurrence(&at.to_zoned(self.zone.clone()), true)
            .map_err(|e| failed(e.to_string()))?;
        Ok(SystemTime::from(fired.timestamp()))
    }

    /// A window's local times for people: `from 09:00 to 17:00 Europe/Berlin`, with the dates when it does
    /// not start and end on one day (`from 2024-06-07 22:00 to 2024-06-08 06:00 UTC`).
    pub fn describe_window(&self, start: SystemTime, end: SystemTime) -> WindowText<'_> {
        WindowText {
            schedule: self,
            start,
            end,
        }
    }

    fn local(&self, at: SystemTime) -> Option<Zoned> {
        Some(Timestamp::try_from(at).ok()?.to_zoned(self.zone.clone()))
    }
}

/// Parses cron as Karpenter's robfig/cron does, where croner differs (see the module's comment).
fn parse_cron(text: &str) -> Result<Cron, croner::errors::CronError> {
    let text = text.trim();
    let text = if text.eq_ignore_ascii_case("@midnight") {
        "@daily" // croner lacks robfig's name for it
    } else {
        text
    };
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .sloppy_ranges(true)
        .build()
        .parse(text)
}

/// A window in the schedule's local time; see [`Schedule::describe_window`].
pub struct WindowText<'a> {
    schedule: &'a Schedule,
    start: SystemTime,
    end: SystemTime,
}

impl fmt::Display for WindowText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zone = &self.schedule.zone_name;
        let (Some(start), Some(end)) = (
            self.schedule.local(self.start),
            self.schedule.local(self.end),
        ) else {
            return write!(f, "in a window of {zone}");
        };
        let format = if start.date() == end.date() {
            "%H:%M"
        } else {
            "%Y-%m-%d %H:%M"
        };
        write!(
            f,
            "from {} to {} {zone}",
            start.strftime(format),
            end.strftime(format)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: Duration = Duration::from_secs(3600);
    const M: Duration = Duration::from_secs(60);

    /// A UTC instant, written as RFC 3339.
    fn at(text: &str) -> SystemTime {
        SystemTime::from(text.parse::<Timestamp>().unwrap())
    }

    fn schedule(cron: &str, duration: Duration, zone: Option<&str>) -> Schedule {
        Schedule::new(cron, duration, zone).unwrap()
    }

    /// The window open at `now`, as UTC RFC 3339 texts.
    fn window(schedule: &Schedule, now: &str) -> Option<(String, String)> {
        let text = |t: SystemTime| Timestamp::try_from(t).unwrap().to_string();
        (schedule.active_window(at(now)).unwrap()).map(|(start, end)| (text(start), text(end)))
    }

    fn open(start: &str, end: &str) -> Option<(String, String)> {
        Some((start.to_string(), end.to_string()))
    }

    #[test]
    fn a_window_is_half_open_from_each_firing() {
        let weekdays = schedule("0 9 * * mon-fri", 8 * H, None);
        let monday = open("2024-06-10T09:00:00Z", "2024-06-10T17:00:00Z");
        assert_eq!(window(&weekdays, "2024-06-10T08:59:59Z"), None);
        assert_eq!(window(&weekdays, "2024-06-10T09:00:00Z"), monday);
        assert_eq!(window(&weekdays, "2024-06-10T16:59:59Z"), monday);
        assert_eq!(window(&weekdays, "2024-06-10T17:00:00Z"), None);
        assert_eq!(window(&weekdays, "2024-06-15T12:00:00Z"), None); // a Saturday
    }

    #[test]
    fn a_window_longer_than_the_recurrence_stays_open_from_the_latest_firing() {
        let daily = schedule("@daily", 48 * H, None);
        assert_eq!(
            window(&daily, "2024-06-10T23:59:00Z"),
            open("2024-06-10T00:00:00Z", "2024-06-12T00:00:00Z")
        );
    }

    #[test]
    fn reads_cron_as_karpenter_does() {
        let fires = |cron: &str, now: &str, expected: &str| {
            let s = schedule(cron, M, None);
            assert_eq!(
                Timestamp::try_from(s.latest_firing(at(now)).unwrap())
                    .unwrap()
                    .to_string(),
                expected,
                "{cron}"
            );
        };
        fires("@midnight", "2024-06-10T12:00:00Z", "2024-06-10T00:00:00Z");
        fires("@weekly", "2024-06-12T12:00:00Z", "2024-06-09T00:00:00Z"); // Sunday
        fires("@hourly", "2024-06-10T12:34:00Z", "2024-06-10T12:00:00Z");
        fires(
            "5/20 * * * *",
            "2024-06-10T12:30:00Z",
            "2024-06-10T12:25:00Z",
        ); // robfig's 5-59/20
        fires(
            "0 0 1 * mon",
            "2024-06-04T12:00:00Z",
            "2024-06-03T00:00:00Z",
        ); // a Monday: either day matches
        fires("0 0 * * 7", "2024-06-12T12:00:00Z", "2024-06-09T00:00:00Z"); // 7 is Sunday
        fires(
            "0 0 * * SAT-sun",
            "2024-06-10T12:00:00Z",
            "2024-06-09T00:00:00Z",
        );
    }

    #[test]
    fn refuses_what_is_not_five_field_cron() {
        for (cron, reason) in [
            (
                "0 0 9 * * mon",
                "Invalid pattern: Pattern must have 5 fields when seconds are disallowed.",
            ),
            (
                "0 9 * *",
                "Invalid pattern: Pattern must have 5 fields when seconds are disallowed.",
            ),
            ("0 9 * * tue-mon", "Component error: Range out of bounds."),
            ("0 24 * * *", "Component error: Number out of bounds."),
            (
                "@every 1h",
                "Invalid pattern: Pattern must have 5 fields when seconds are disallowed.",
            ),
            ("", "CronPattern cannot be an empty string."),
        ] {
            assert_eq!(
                Schedule::new(cron, H, None).unwrap_err(),
                ScheduleError::Cron {
                    text: cron.into(),
                    reason: reason.into()
                },
                "{cron}"
            );
        }
    }

    #[test]
    fn refuses_a_schedule_that_never_fires() {
        let error = Schedule::new("0 0 30 2 *", H, None).unwrap_err();
        assert_eq!(error.to_string(), r#""0 0 30 2 *" never fires"#);
        // February 29th comes, once in four years.
        assert!(Schedule::new("0 0 29 2 *", H, None).is_ok());
    }

    #[test]
    fn refuses_unknown_zones_and_windows_of_no_length_or_part_minutes() {
        assert_eq!(
            Schedule::new("@daily", H, Some("Europe/Berln"))
                .unwrap_err()
                .to_string(),
            r#""Europe/Berln" is not an IANA time zone, as Europe/Berlin or America/New_York"#
        );
        assert_eq!(
            Schedule::new("@daily", Duration::ZERO, None).unwrap_err(),
            ScheduleError::EmptyWindow
        );
        assert_eq!(
            Schedule::new("@daily", Duration::from_secs(90), None)
                .unwrap_err()
                .to_string(),
            r#""90s" is not whole minutes: a window is hours and minutes, as cron fires on minutes (Karpenter's rule)"#
        );
    }

    #[test]
    fn keeps_the_cron_as_written_and_the_zone_as_the_database_names_it() {
        let s = schedule(" @midnight", 90 * M, None);
        assert_eq!(
            (s.cron(), s.duration(), s.time_zone()),
            (" @midnight", 90 * M, "UTC")
        );
        assert_eq!(
            schedule("@daily", H, Some("europe/berlin")).time_zone(),
            "Europe/Berlin"
        );
    }

    #[test]
    fn one_schedule_in_two_zones_opens_at_each_zones_nine() {
        let berlin = schedule("0 9 * * *", 8 * H, Some("Europe/Berlin"));
        let new_york = schedule("0 9 * * *", 8 * H, Some("America/New_York"));
        // Summer: Berlin is UTC+2, New York UTC-4.
        let berlin_day = open("2024-06-10T07:00:00Z", "2024-06-10T15:00:00Z");
        let new_york_day = open("2024-06-10T13:00:00Z", "2024-06-10T21:00:00Z");
        assert_eq!(window(&berlin, "2024-06-10T12:00:00Z"), berlin_day);
        assert_eq!(window(&new_york, "2024-06-10T12:00:00Z"), None);
        assert_eq!(window(&berlin, "2024-06-10T14:00:00Z"), berlin_day);
        assert_eq!(window(&new_york, "2024-06-10T14:00:00Z"), new_york_day);
        assert_eq!(window(&berlin, "2024-06-10T16:00:00Z"), None);
        let (start, end) = berlin
            .active_window(at("2024-06-10T12:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!(
            berlin.describe_window(start, end).to_string(),
            "from 09:00 to 17:00 Europe/Berlin"
        );
        let (start, end) = new_york
            .active_window(at("2024-06-10T14:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!(
            new_york.describe_window(start, end).to_string(),
            "from 09:00 to 17:00 America/New_York"
        );
    }

    #[test]
    fn a_window_across_midnight_is_described_with_its_dates() {
        let night = schedule("0 22 * * *", 8 * H, None);
        let (start, end) = night
            .active_window(at("2024-06-08T01:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!(
            night.describe_window(start, end).to_string(),
            "from 2024-06-07 22:00 to 2024-06-08 06:00 UTC"
        );
    }

    #[test]
    fn office_hours_follow_the_wall_clock_across_both_changes_in_berlin() {
        let office = schedule("0 9 * * mon-fri", 8 * H, Some("Europe/Berlin"));
        // Clocks go forward on Sunday 2024-03-31 (02:00 CET -> 03:00 CEST) and back on Sunday 2024-10-27
        // (03:00 CEST -> 02:00 CET): 09:00 is 08:00 UTC in winter and 07:00 UTC in summer.
        for (now, expected) in [
            (
                "2024-03-29T12:00:00Z",
                ("2024-03-29T08:00:00Z", "2024-03-29T16:00:00Z"),
            ),
            (
                "2024-04-01T12:00:00Z",
                ("2024-04-01T07:00:00Z", "2024-04-01T15:00:00Z"),
            ),
            (
                "2024-10-25T12:00:00Z",
                ("2024-10-25T07:00:00Z", "2024-10-25T15:00:00Z"),
            ),
            (
                "2024-10-28T12:00:00Z",
                ("2024-10-28T08:00:00Z", "2024-10-28T16:00:00Z"),
            ),
        ] {
            assert_eq!(window(&office, now), open(expected.0, expected.1), "{now}");
        }
        assert_eq!(window(&office, "2024-04-01T15:30:00Z"), None); // 17:30 CEST
        assert_eq!(
            window(&office, "2024-10-28T15:30:00Z"),
            open("2024-10-28T08:00:00Z", "2024-10-28T16:00:00Z")
        ); // 16:30 CET
    }

    #[test]
    fn office_hours_follow_the_wall_clock_across_both_changes_in_new_york() {
        let office = schedule("0 9 * * mon-fri", 8 * H, Some("America/New_York"));
        // Forward on Sunday 2024-03-10, back on Sunday 2024-11-03: 09:00 is 14:00 UTC in winter (EST), 13:00
        // UTC in summer (EDT).
        for (now, expected) in [
            (
                "2024-03-08T15:00:00Z",
                ("2024-03-08T14:00:00Z", "2024-03-08T22:00:00Z"),
            ),
            (
                "2024-03-11T15:00:00Z",
                ("2024-03-11T13:00:00Z", "2024-03-11T21:00:00Z"),
            ),
            (
                "2024-11-01T15:00:00Z",
                ("2024-11-01T13:00:00Z", "2024-11-01T21:00:00Z"),
            ),
            (
                "2024-11-04T15:00:00Z",
                ("2024-11-04T14:00:00Z", "2024-11-04T22:00:00Z"),
            ),
        ] {
            assert_eq!(window(&office, now), open(expected.0, expected.1), "{now}");
        }
    }

    #[test]
    fn a_window_through_a_change_lasts_its_duration_in_elapsed_time() {
        let nightly = schedule("0 0 * * *", 8 * H, Some("Europe/Berlin"));
        // Midnight CET is 23:00 UTC; eight hours later the wall clock says 09:00 CEST.
        let (start, end) = nightly
            .active_window(at("2024-03-31T05:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (start, end),
            (at("2024-03-30T23:00:00Z"), at("2024-03-31T07:00:00Z"))
        );
        assert_eq!(
            nightly.describe_window(start, end).to_string(),
            "from 00:00 to 09:00 Europe/Berlin"
        );
        // Midnight CEST is 22:00 UTC; eight hours later the wall clock says 07:00 CET.
        let (start, end) = nightly
            .active_window(at("2024-10-27T05:00:00Z"))
            .unwrap()
            .unwrap();
        assert_eq!(
            (start, end),
            (at("2024-10-26T22:00:00Z"), at("2024-10-27T06:00:00Z"))
        );
        assert_eq!(
            nightly.describe_window(start, end).to_string(),
            "from 00:00 to 07:00 Europe/Berlin"
        );
    }

    #[test]
    fn a_fixed_time_in_the_skipped_hour_fires_right_after_it() {
        // Berlin skips 02:00-03:00 on 2024-03-31: 02:30 fires at 03:00 CEST (01:00 UTC).
        let berlin = schedule("30 2 * * *", H, Some("Europe/Berlin"));
        assert_eq!(
            window(&berlin, "2024-03-31T01:30:00Z"),
            open("2024-03-31T01:00:00Z", "2024-03-31T02:00:00Z")
        );
        // The day before and after, 02:30 is 01:30 UTC and 00:30 UTC.
        assert_eq!(
            window(&berlin, "2024-03-30T02:00:00Z"),
            open("2024-03-30T01:30:00Z", "2024-03-30T02:30:00Z")
        );
        assert_eq!(
            window(&berlin, "2024-04-01T01:00:00Z"),
            open("2024-04-01T00:30:00Z", "2024-04-01T01:30:00Z")
        );
        // New York skips 02:00-03:00 on 2024-03-10: 02:30 fires at 03:00 EDT (07:00 UTC).
        let new_york = schedule("30 2 * * *", H, Some("America/New_York"));
        assert_eq!(
            window(&new_york, "2024-03-10T07:30:00Z"),
            open("2024-03-10T07:00:00Z", "2024-03-10T08:00:00Z")
        );
    }

    #[test]
    fn a_wildcard_hour_skips_the_missing_times() {
        // Every hour at :30: on 2024-03-31 Berlin has no 02:30, so 01:30 CET (00:30 UTC) is followed by
        // 03:30 CEST (01:30 UTC).
        let half_past = schedule("30 * * * *", 10 * M, Some("Europe/Berlin"));
        assert_eq!(window(&half_past, "2024-03-31T01:05:00Z"), None);
        assert_eq!(
            window(&half_past, "2024-03-31T01:35:00Z"),
            open("2024-03-31T01:30:00Z", "2024-03-31T01:40:00Z")
        );
    }

    #[test]
    fn a_fixed_time_in_the_repeated_hour_fires_once_and_a_wildcard_twice() {
        // Berlin repeats 02:00-03:00 on 2024-10-27: 02:30 is 00:30 UTC (CEST) and 01:30 UTC (CET).
        let berlin = schedule("30 2 * * *", H, Some("Europe/Berlin"));
        let first = open("2024-10-27T00:30:00Z", "2024-10-27T01:30:00Z");
        assert_eq!(window(&berlin, "2024-10-27T01:00:00Z"), first);
        assert_eq!(window(&berlin, "2024-10-27T01:45:00Z"), None);
        // New York repeats 01:00-02:00 on 2024-11-03: 01:30 is 05:30 UTC (EDT) and 06:30 UTC (EST).
        let new_york = schedule("30 1 * * *", H, Some("America/New_York"));
        assert_eq!(
            window(&new_york, "2024-11-03T06:00:00Z"),
            open("2024-11-03T05:30:00Z", "2024-11-03T06:30:00Z")
        );
        assert_eq!(window(&new_york, "2024-11-03T06:45:00Z"), None);
        // Every hour at :30 fires at both.
        let half_past = schedule("30 * * * *", 10 * M, Some("America/New_York"));
        assert_eq!(
            window(&half_past, "2024-11-03T05:35:00Z"),
            open("2024-11-03T05:30:00Z", "2024-11-03T05:40:00Z")
        );
        assert_eq!(
            window(&half_past, "2024-11-03T06:35:00Z"),
            open("2024-11-03T06:30:00Z", "2024-11-03T06:40:00Z")
        );
    }

    const CRONS: &[&str] = &[
        "0 9 * * mon-fri",
        "30 2 * * *",
        "30 1 * * *",
        "*/15 * * * *",
        "0 0 1 * *",
        "0 22 * * sat,sun",
        "@hourly",
    ];
    const ZONE_NAMES: &[&str] = &[
        "UTC",
        "Europe/Berlin",
        "America/New_York",
        "Australia/Lord_Howe",
    ];

    proptest! {
        /// The window reported contains `now` exactly when Karpenter's own test says the schedule is
        /// active: the first firing after `now - duration` is not after `now`.
        #[test]
        fn the_window_contains_now_exactly_when_active(
            cron in proptest::sample::select(CRONS),
            zone in proptest::sample::select(ZONE_NAMES),
            minutes in 1u64..(3 * 24 * 60),
            // 2024 and 2025, to the second, through every change of the zones above.
            seconds in 1_704_067_200u64..1_767_225_600,
        ) {
            let s = schedule(cron, Duration::from_secs(minutes * 60), Some(zone));
            let now = SystemTime::UNIX_EPOCH + Duration::from_secs(seconds);
            let window = s.active_window(now).unwrap();
            if let Some((start, end)) = window {
                prop_assert!(start <= now && now < end);
                prop_assert_eq!(end.duration_since(start).unwrap(), s.duration);
            }
            let since = Timestamp::try_from(now - s.duration).unwrap().to_zoned(s.zone.clone());
            let next = s.cron.find_next_occurrence(&since, false).unwrap();
            let karpenter = SystemTime::from(next.timestamp()) <= now;
            prop_assert_eq!(window.is_some(), karpenter, "{} {} at {:?}", cron, zone, now);
        }
    }
}
