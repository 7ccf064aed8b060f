//! What the scale-down and consolidation flags say, each stage's own part of the loop's settings.

use crate::autoscaler::scaledown::act::actuation::Pacing;
use crate::autoscaler::scaledown::plan::drainability::Rules;
use crate::autoscaler::scaledown::plan::unneeded::Timers;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The scale-down flags.
#[derive(Clone, Debug)]
pub struct ScaleDownSettings {
    /// `--scale-down-enabled`.
    pub enabled: bool,
    pub rules: Rules,
    /// Defaults of the per-group options (GetOptions overrides them): `--scale-down-utilization-threshold`,
    /// `--scale-down-gpu-utilization-threshold`, `--scale-down-unneeded-time`, `--scale-down-unready-time`,
    /// `--ignore-daemonsets-utilization`.
    pub utilization_threshold: f64,
    pub gpu_utilization_threshold: f64,
    pub unneeded_time: Duration,
    pub unready_time: Duration,
    pub ignore_daemonsets_utilization: bool,
    /// `--scale-down-unready-enabled`.
    pub unready_enabled: bool,
    /// `--scale-down-delay-after-add`, `-after-delete`, `-after-failure`.
    pub delay_after_add: Duration,
    pub delay_after_delete: Duration,
    pub delay_after_failure: Duration,
    /// `--max-scale-down-parallelism`, `--max-drain-parallelism`.
    pub max_parallelism: usize,
    pub max_drain_parallelism: usize,
    /// `--max-empty-bulk-delete`: empty nodes whose deletion may start in one loop.
    pub max_empty_bulk_delete: usize,
    pub pacing: Pacing,
    /// `--max-bulk-soft-taint-count`: soft taints added or removed per loop; 0 turns them off.
    pub max_soft_taints: usize,
    /// Take unneeded timers as elapsed and pacing (cooldowns, parallelism) as no obstacle: `simulate` lists
    /// every node that would go.
    pub timers_elapsed: bool,
}

impl ScaleDownSettings {
    /// How the timers count, as `timers_elapsed` says.
    pub fn timers(&self) -> Timers {
        if self.timers_elapsed {
            Timers::Elapsed
        } else {
            Timers::Kept
        }
    }
}

impl Default for ScaleDownSettings {
    /// cluster-autoscaler's defaults.
    fn default() -> ScaleDownSettings {
        ScaleDownSettings {
            enabled: true,
            rules: Rules::default(),
            utilization_threshold: 0.5,
            gpu_utilization_threshold: 0.5,
            unneeded_time: Duration::from_secs(600),
            unready_time: Duration::from_secs(1200),
            ignore_daemonsets_utilization: false,
            unready_enabled: true,
            delay_after_add: Duration::from_secs(600),
            delay_after_delete: Duration::ZERO,
            delay_after_failure: Duration::from_secs(180),
            max_parallelism: 10,
            max_drain_parallelism: 1,
            max_empty_bulk_delete: 10,
            pacing: Pacing::default(),
            max_soft_taints: 10,
            timers_elapsed: false,
        }
    }
}

/// `--consolidation`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ConsolidationMode {
    /// Upstream's behaviour: scale-down removes nodes whose pods fit elsewhere, nothing is replaced.
    #[default]
    Off,
    /// The same as `off`, said explicitly: nodes are only deleted (scale-down).
    Delete,
    /// Scale-down, and replacements of nodes by cheaper ones.
    Replace,
}

/// `--consolidation-min-saving`: a replacement must save both this share of the price of what it replaces
/// and this much per hour.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MinSaving {
    pub fraction: f64,
    pub per_hour: f64,
}

impl Default for MinSaving {
    fn default() -> MinSaving {
        MinSaving {
            fraction: 0.2,
            per_hour: 0.01,
        }
    }
}

impl MinSaving {
    /// Whether going from `before` to `after` (per hour) saves enough.
    pub fn met(&self, before: f64, after: f64) -> bool {
        let saving = before - after;
        saving > 0.0 && saving >= self.fraction * before && saving >= self.per_hour
    }
}

impl fmt::Display for MinSaving {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%,${}", self.fraction * 100.0, self.per_hour)
    }
}

/// A `--consolidation-min-saving` that does not read.
#[derive(Debug, thiserror::Error)]
pub enum MinSavingError {
    #[error(
        "{part:?} in {text:?}: expected a percentage (20%) or dollars per hour (0.01 or $0.01), at least 0"
    )]
    NotAnAmount { part: String, text: String },
    #[error("{text:?}: one percentage between 0% and 100%, please")]
    Percentage { text: String },
    #[error("{text:?}: one dollar amount, please")]
    Dollars { text: String },
}

impl FromStr for MinSaving {
    type Err = MinSavingError;

    /// `20%,0.01`: a percentage, a dollar amount per hour (`$` optional), or both, comma-separated; a part
    /// not given keeps its default (20%, $0.01).
    fn from_str(text: &str) -> Result<MinSaving, MinSavingError> {
        let mut saving = MinSaving::default();
        let (mut percent, mut dollars) = (false, false);
        for part in text.split(',').map(str::trim) {
            let number = |s: &str| {
                s.parse::<f64>()
                    .ok()
                    .filter(|v| v.is_finite() && *v >= 0.0)
                    .ok_or_else(|| MinSavingError::NotAnAmount {
                        part: part.to_string(),
                        text: text.to_string(),
                    })
            };
            if let Some(p) = part.strip_suffix('%') {
                let p = number(p)?;
                if p > 100.0 || percent {
                    let text = text.to_string();
                    return Err(MinSavingError::Percentage { text });
                }
                saving.fraction = p / 100.0;
                percent = true;
            } else {
                let d = number(part.strip_prefix('$').unwrap_or(part))?;
                if dollars {
                    let text = text.to_string();
                    return Err(MinSavingError::Dollars { text });
                }
                saving.per_hour = d;
                dollars = true;
            }
        }
        Ok(saving)
    }
}

/// The consolidation flags.
#[derive(Clone, Debug)]
pub struct ConsolidationSettings {
    pub mode: ConsolidationMode,
    pub min_saving: MinSaving,
    /// `--max-consolidation-parallelism`: replacements in progress at once.
    pub max_parallelism: usize,
    /// `--consolidation-stable-time`: how long a node must have been a candidate, with no pod scheduled to it,
    /// before it is replaced.
    pub stable_time: Duration,
}

impl Default for ConsolidationSettings {
    fn default() -> ConsolidationSettings {
        ConsolidationSettings {
            mode: ConsolidationMode::Off,
            min_saving: MinSaving::default(),
            max_parallelism: 1,
            stable_time: Duration::from_secs(600),
        }
    }
}

impl ConsolidationSettings {
    pub fn replaces(&self) -> bool {
        self.mode == ConsolidationMode::Replace
    }
}
