//! The demo as the binary runs it: the script's day, then the second day with consolidation off and on, the
//! third with disruption control and the fourth with leaving nodes handled and ignored, the summary of them
//! all, and the report.

use super::compare::Comparison;
use super::day::{Progress, play, play_followed};
use super::day4::LeavingDay;
use super::error::DemoError;
use super::night::Night;
use super::record::Record;
use super::report;
use super::script::Script;
use super::summary::{summary, summary_line};
use crate::autoscaler::ConsolidationMode as Mode;
use crate::autoscaler::LeavingHandling::{Handle, Ignore};
use std::path::PathBuf;
use std::time::Instant;

pub struct Options {
    pub script: Script,
    /// A second day, played after the first with consolidation off and then on; `None` plays one day.
    pub second_day: Option<Script>,
    /// A third, played after them with its disruption configuration.
    pub third_day: Option<Script>,
    /// A fourth, played after them with leaving nodes handled and then ignored.
    pub fourth_day: Option<Script>,
    /// Simulated seconds per real second; 0 plays as fast as the machine goes.
    pub speed: f64,
    pub report: Option<PathBuf>,
    /// Overrides the scenario's seed (instance ids).
    pub seed: Option<u64>,
}

/// [`run`] to completion on a new multi-thread runtime, for the binary (see
/// [`crate::autoscaler::control::simulate_blocking`] for why it is here).
pub fn run_blocking(options: Options) -> Result<(Record, String), DemoError> {
    crate::autoscaler::control::runtime().block_on(run(options))
}

/// Plays the script's day (printing progress and decisions as they happen), then the second day, if there is
/// one, with consolidation off and on, and the third, if there is one; returns the first day's record and
/// the summary of all, which ends with the one-line `demo summary:` scripts read.
pub async fn run(options: Options) -> Result<(Record, String), DemoError> {
    let started = Instant::now();
    let Options {
        mut script,
        second_day,
        third_day,
        fourth_day,
        speed,
        report,
        seed,
    } = options;
    if let Some(seed) = seed {
        script.scenario.seed = seed;
    }
    let record = play(&script, (Mode::Off, Handle), speed, Progress::Shown).await?;
    let mut text = summary(&record, script.duration, started.elapsed());
    let second = match second_day {
        Some(mut day) => {
            if let Some(seed) = seed {
                day.scenario.seed = seed;
            }
            let off = play(&day, (Mode::Off, Handle), 0.0, Progress::Hidden).await?;
            let on = play(&day, (Mode::Replace, Handle), 0.0, Progress::Hidden).await?;
            let day = Comparison::new(off, on, &day);
            text.push_str(&day.summary());
            Some(day)
        }
        None => None,
    };
    let third = match third_day {
        Some(mut day) => {
            if let Some(seed) = seed {
                day.scenario.seed = seed;
            }
            let night = Night::new(
                play(&day, (Mode::Off, Handle), 0.0, Progress::Hidden).await?,
                &day,
            );
            text.push_str(&night.summary());
            Some(night)
        }
        None => None,
    };
    let fourth = match fourth_day {
        Some(mut day) => {
            if let Some(seed) = seed {
                day.scenario.seed = seed;
            }
            let handled = play_followed(&day, (Mode::Off, Handle), 0.0, Progress::Hidden).await?;
            let ignored = play_followed(&day, (Mode::Off, Ignore), 0.0, Progress::Hidden).await?;
            let day = LeavingDay::new(handled, ignored, &day);
            text.push_str(&day.summary());
            Some(day)
        }
        None => None,
    };
    text.push_str(&summary_line(&record));
    if let Some(path) = report {
        let days = report::Days {
            second: second.as_ref(),
            third: third.as_ref(),
            fourth: fourth.as_ref(),
        };
        let page = report::html(&record, days, &text);
        std::fs::write(&path, page).map_err(|source| DemoError::Report { path, source })?;
    }
    Ok((record, text))
}
