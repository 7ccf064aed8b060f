//! Per-group overrides of cluster-autoscaler's options, from YAML (scenario, AWS config) or from the
//! `k8s.io/cluster-autoscaler/node-template/autoscaling-options/<option>` tags upstream's AWS provider reads.

use super::node_group::OptionOverrides;
use crate::model::Invalid;
use serde::Deserialize;
#[cfg(any(feature = "aws", test))]
use std::collections::HashMap;
use std::time::Duration;

/// The tag prefix of per-group options on an EKS node group (or its Auto Scaling group). Only the AWS
/// backend reads tags.
#[cfg(any(feature = "aws", test))]
pub const TAG_PREFIX: &str = "k8s.io/cluster-autoscaler/node-template/autoscaling-options/";

/// Options as written in YAML, with cluster-autoscaler's option names.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OptionsFile {
    scale_down_utilization_threshold: Option<f64>,
    scale_down_gpu_utilization_threshold: Option<f64>,
    #[serde(default, with = "humantime_serde")]
    scale_down_unneeded_time: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    scale_down_unready_time: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    max_node_provision_time: Option<Duration>,
    zero_or_max_node_scaling: Option<bool>,
    ignore_daemon_sets_utilization: Option<bool>,
    #[serde(default, with = "humantime_serde")]
    max_node_startup_time: Option<Duration>,
    allow_non_atomic_scale_up_to_max: Option<bool>,
}

impl OptionsFile {
    /// Checks the values and turns them into overrides.
    pub fn overrides(&self) -> Result<OptionOverrides, Invalid> {
        let overrides = OptionOverrides {
            scale_down_utilization_threshold: self.scale_down_utilization_threshold,
            scale_down_gpu_utilization_threshold: self.scale_down_gpu_utilization_threshold,
            scale_down_unneeded_time: self.scale_down_unneeded_time,
            scale_down_unready_time: self.scale_down_unready_time,
            max_node_provision_time: self.max_node_provision_time,
            zero_or_max_node_scaling: self.zero_or_max_node_scaling,
            ignore_daemon_sets_utilization: self.ignore_daemon_sets_utilization,
            max_node_startup_time: self.max_node_startup_time,
            allow_non_atomic_scale_up_to_max: self.allow_non_atomic_scale_up_to_max,
        };
        check_thresholds(&overrides)?;
        Ok(overrides)
    }
}

fn check_thresholds(o: &OptionOverrides) -> Result<(), Invalid> {
    for (name, value) in [
        (
            "scaleDownUtilizationThreshold",
            o.scale_down_utilization_threshold,
        ),
        (
            "scaleDownGpuUtilizationThreshold",
            o.scale_down_gpu_utilization_threshold,
        ),
    ] {
        if value.is_some_and(|v| !(0.0..=1.0).contains(&v)) {
            return Err(Invalid::value(format!(
                "options.{name} must be between 0 and 1"
            )));
        }
    }
    Ok(())
}

/// Overrides from autoscaling-options tags (option names compared case-insensitively, as upstream writes
/// them in lower case). `None` when no tag names an option; an unreadable value is an error naming the tag.
#[cfg(any(feature = "aws", test))]
pub fn from_tags(tags: &HashMap<String, String>) -> Result<Option<OptionOverrides>, Invalid> {
    let mut o = OptionOverrides::default();
    let mut any = false;
    for (key, value) in tags {
        let Some(option) = key.strip_prefix(TAG_PREFIX) else {
            continue;
        };
        let bad = |what: &str| Invalid::new(format!("tag {key}={value:?}"), what);
        let float = || value.trim().parse::<f64>().map_err(|_| bad("not a number"));
        let boolean = || {
            value
                .trim()
                .parse::<bool>()
                .map_err(|_| bad("not true or false"))
        };
        let duration = || {
            humantime::parse_duration(value.trim()).map_err(|_| bad("not a duration such as 10m"))
        };
        match option.to_ascii_lowercase().as_str() {
            "scaledownutilizationthreshold" => o.scale_down_utilization_threshold = Some(float()?),
            "scaledowngpuutilizationthreshold" => {
                o.scale_down_gpu_utilization_threshold = Some(float()?)
            }
            "scaledownunneededtime" => o.scale_down_unneeded_time = Some(duration()?),
            "scaledownunreadytime" => o.scale_down_unready_time = Some(duration()?),
            "maxnodeprovisiontime" => o.max_node_provision_time = Some(duration()?),
            "zeroormaxnodescaling" => o.zero_or_max_node_scaling = Some(boolean()?),
            "ignoredaemonsetsutilization" => o.ignore_daemon_sets_utilization = Some(boolean()?),
            "maxnodestartuptime" => o.max_node_startup_time = Some(duration()?),
            "allownonatomicscaleuptomax" => o.allow_non_atomic_scale_up_to_max = Some(boolean()?),
            _ => return Err(bad("unknown autoscaling option")),
        }
        any = true;
    }
    check_thresholds(&o)?;
    Ok(any.then_some(o))
}

impl OptionOverrides {
    /// These overrides, with each field `other` sets taking precedence.
    pub fn overridden_by(&self, other: &OptionOverrides) -> OptionOverrides {
        OptionOverrides {
            scale_down_utilization_threshold: other
                .scale_down_utilization_threshold
                .or(self.scale_down_utilization_threshold),
            scale_down_gpu_utilization_threshold: other
                .scale_down_gpu_utilization_threshold
                .or(self.scale_down_gpu_utilization_threshold),
            scale_down_unneeded_time: other
                .scale_down_unneeded_time
                .or(self.scale_down_unneeded_time),
            scale_down_unready_time: other
                .scale_down_unready_time
                .or(self.scale_down_unready_time),
            max_node_provision_time: other
                .max_node_provision_time
                .or(self.max_node_provision_time),
            zero_or_max_node_scaling: other
                .zero_or_max_node_scaling
                .or(self.zero_or_max_node_scaling),
            ignore_daemon_sets_utilization: other
                .ignore_daemon_sets_utilization
                .or(self.ignore_daemon_sets_utilization),
            max_node_startup_time: other.max_node_startup_time.or(self.max_node_startup_time),
            allow_non_atomic_scale_up_to_max: other
                .allow_non_atomic_scale_up_to_max
                .or(self.allow_non_atomic_scale_up_to_max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("{TAG_PREFIX}{k}"), v.to_string()))
            .collect()
    }

    #[test]
    fn tags_in_upstreams_spelling() {
        let o = from_tags(&tags(&[
            ("scaledownutilizationthreshold", "0.4"),
            ("scaledownunneededtime", "10m0s"),
            ("ignoredaemonsetsutilization", "true"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.scale_down_utilization_threshold, Some(0.4));
        assert_eq!(o.scale_down_unneeded_time, Some(Duration::from_secs(600)));
        assert_eq!(o.ignore_daemon_sets_utilization, Some(true));
        assert_eq!(
            from_tags(&HashMap::from([("team".into(), "web".into())])).unwrap(),
            None
        );
    }

    #[test]
    fn bad_tags_name_themselves() {
        let error = from_tags(&tags(&[("scaledownunneededtime", "soon")]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("scaledownunneededtime") && error.contains("duration"),
            "{error}"
        );
        assert!(from_tags(&tags(&[("scaledownutilizationthreshold", "2")])).is_err());
        assert!(
            from_tags(&tags(&[("colour", "red")]))
                .unwrap_err()
                .to_string()
                .contains("unknown")
        );
    }

    #[test]
    fn later_overrides_win_field_by_field() {
        let tags = OptionOverrides {
            scale_down_utilization_threshold: Some(0.4),
            zero_or_max_node_scaling: Some(true),
            ..Default::default()
        };
        let config = OptionOverrides {
            scale_down_utilization_threshold: Some(0.2),
            ..Default::default()
        };
        let merged = tags.overridden_by(&config);
        assert_eq!(merged.scale_down_utilization_threshold, Some(0.2));
        assert_eq!(merged.zero_or_max_node_scaling, Some(true));
    }
}
