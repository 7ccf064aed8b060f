//! The provider's configuration for the AWS backend (`--config FILE`, with `--cluster`/`--region` on top).

use crate::cloud::fargate::FargateRates;
use crate::cloud::node_group::OptionOverrides;
use crate::cloud::options::OptionsFile;
use crate::cloud::pricing::DEFAULT_SPOT_PRICE_RATIO;
use crate::model::Invalid;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigFile {
    cluster: Option<String>,
    region: Option<String>,
    #[serde(default, with = "humantime_serde")]
    refresh_interval: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    describe_interval: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    flux_interval: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    aws_timeout: Option<Duration>,
    #[serde(default, with = "humantime_serde")]
    max_cache_age: Option<Duration>,
    #[serde(default)]
    node_groups: Selection,
    /// On-demand prices per hour by instance type, over the built-in list.
    #[serde(default)]
    prices: BTreeMap<String, f64>,
    spot_price_ratio: Option<f64>,
    /// Option overrides by node group name (globs allowed); later entries win.
    #[serde(default)]
    options: Vec<GroupOptions>,
    /// Fargate's prices by region (default: us-east-1's everywhere).
    #[serde(default)]
    fargate_pricing: BTreeMap<String, FargateRates>,
    /// The SQS queue EventBridge sends interruption events to: its URL or name.
    interruption_queue: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Selection {
    #[serde(default)]
    include: Vec<String>,
    #[serde(default)]
    exclude: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupOptions {
    #[serde(rename = "nodeGroup")]
    node_group: String,
    options: OptionsFile,
}

/// The AWS backend's settings, validated.
#[derive(Clone, Debug)]
pub struct AwsConfig {
    pub cluster: String,
    /// `None`: the SDK's own region resolution (AWS_REGION, profile, instance metadata).
    pub region: Option<String>,
    /// Refresh re-reads node groups and Auto Scaling groups at most this often (default 60 s).
    pub refresh_interval: Duration,
    /// A node group's EKS description (labels, taints, types) is re-read at most this often (default 5 min).
    pub describe_interval: Duration,
    /// Groups in flux (desired capacity not met by live instances, or instances launching or terminating)
    /// are re-read this often between refreshes, until they settle (default 10 s; 0s: only at refreshes).
    pub flux_interval: Duration,
    /// How long an RPC waits for AWS (default 4 s, inside cluster-autoscaler's 5 s deadline). A refresh
    /// that takes longer goes on in the background while the cache is served; a size change that takes
    /// longer is reported unavailable and its outcome read back from the ASG.
    pub aws_timeout: Duration,
    /// While AWS is too slow to refresh, Refresh answers from the cache until it is this old (default 5 min),
    /// then fails, so that cluster-autoscaler skips its loops rather than decide on what may be gone.
    pub max_cache_age: Duration,
    include: GlobSet,
    exclude: GlobSet,
    prices: HashMap<String, f64>,
    pub spot_price_ratio: f64,
    options: Vec<(GlobSet, OptionOverrides)>,
    fargate_pricing: BTreeMap<String, FargateRates>,
    /// The SQS queue (URL, or name) EventBridge sends Spot interruption warnings, rebalance
    /// recommendations, AWS Health scheduled changes and state changes to; `None`: none is read.
    /// `--interruption-queue` sets it over the file's `interruptionQueue`.
    pub interruption_queue: Option<String>,
}

impl AwsConfig {
    /// Reads the config file's text (empty for none), with flags on top.
    pub fn load(
        text: &str,
        cluster: Option<String>,
        region: Option<String>,
    ) -> Result<AwsConfig, AwsConfigError> {
        let file: ConfigFile = if text.trim().is_empty() {
            ConfigFile::default()
        } else {
            serde_norway::from_str(text)?
        };
        let cluster = cluster
            .or(file.cluster)
            .filter(|c| !c.is_empty())
            .ok_or(Invalid::value(
                "the EKS cluster name is required: --cluster NAME or `cluster:` in the config",
            ))?;
        let refresh_interval = file.refresh_interval.unwrap_or(Duration::from_secs(60));
        let describe_interval = file.describe_interval.unwrap_or(Duration::from_secs(300));
        let flux_interval = file.flux_interval.unwrap_or(Duration::from_secs(10));
        let aws_timeout = file.aws_timeout.unwrap_or(Duration::from_secs(4));
        if aws_timeout.is_zero() {
            return Err(Invalid::value("awsTimeout must be more than 0s").into());
        }
        let max_cache_age = file.max_cache_age.unwrap_or(Duration::from_secs(300));
        let spot_price_ratio = file.spot_price_ratio.unwrap_or(DEFAULT_SPOT_PRICE_RATIO);
        if !(0.0..=1.0).contains(&spot_price_ratio) {
            return Err(Invalid::value("spotPriceRatio must be between 0 and 1").into());
        }
        if let Some((name, price)) = file
            .prices
            .iter()
            .find(|(_, p)| !(p.is_finite() && **p >= 0.0))
        {
            let rule = format!("{price} is not a price");
            return Err(Invalid::new(format!("prices.{name}"), rule).into());
        }
        let include = if file.node_groups.include.is_empty() {
            vec!["*".to_string()]
        } else {
            file.node_groups.include
        };
        let options = file
            .options
            .iter()
            .map(|entry| {
                let overrides = entry
                    .options
                    .overrides()
                    .map_err(|e| e.under(&format!("options for {}", entry.node_group)))?;
                Ok((globs(std::slice::from_ref(&entry.node_group))?, overrides))
            })
            .collect::<Result<_, AwsConfigError>>()?;
        for (region, rates) in &file.fargate_pricing {
            rates
                .check()
                .map_err(|e| e.under(&format!("fargatePricing.{region}")))?;
        }
        let interruption_queue = (file.interruption_queue)
            .map(|queue| named_queue("interruptionQueue", queue))
            .transpose()?;
        Ok(AwsConfig {
            interruption_queue,
            fargate_pricing: file.fargate_pricing,
            cluster,
            region: region.or(file.region),
            refresh_interval,
            describe_interval,
            flux_interval,
            aws_timeout,
            max_cache_age,
            include: globs(&include)?,
            exclude: globs(&file.node_groups.exclude)?,
            prices: file.prices.into_iter().collect(),
            spot_price_ratio,
            options,
        })
    }

    /// The interruption queue `--interruption-queue` names, over the config file's: refused when blank.
    pub fn with_interruption_queue(self, queue: String) -> Result<AwsConfig, Invalid> {
        let queue = named_queue("--interruption-queue", queue)?;
        Ok(AwsConfig {
            interruption_queue: Some(queue),
            ..self
        })
    }

    /// Whether the node group is one to serve.
    pub fn selects(&self, node_group: &str) -> bool {
        self.include.is_match(node_group) && !self.exclude.is_match(node_group)
    }

    /// The configured on-demand price of an instance type, if any.
    pub fn price(&self, instance_type: &str) -> Option<f64> {
        self.prices.get(instance_type).copied()
    }

    /// Fargate's prices in `region`.
    pub fn fargate_rates(&self, region: &str) -> FargateRates {
        self.fargate_pricing
            .get(region)
            .copied()
            .unwrap_or_default()
    }

    /// The config file's option overrides for a node group, merged in file order.
    pub fn options(&self, node_group: &str) -> Option<OptionOverrides> {
        self.options
            .iter()
            .filter(|(globs, _)| globs.is_match(node_group))
            .map(|(_, o)| o.clone())
            .reduce(|earlier, later| earlier.overridden_by(&later))
    }
}

/// Why the provider's configuration cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum AwsConfigError {
    #[error("{0}")]
    Yaml(#[from] serde_norway::Error),
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error("node group pattern {pattern:?}: {source}")]
    Pattern {
        pattern: String,
        source: globset::Error,
    },
    #[error("{0}")]
    Globs(#[from] globset::Error),
}

/// A queue's URL or name, as `field` gives it: not blank.
fn named_queue(field: &str, queue: String) -> Result<String, Invalid> {
    if queue.trim().is_empty() {
        return Err(Invalid::new(
            field,
            "must name a queue: its URL or its name",
        ));
    }
    Ok(queue)
}

fn globs(patterns: &[String]) -> Result<GlobSet, AwsConfigError> {
    let mut set = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|source| AwsConfigError::Pattern {
            pattern: pattern.clone(),
            source,
        })?;
        set.add(glob);
    }
    Ok(set.build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags() {
        let config = AwsConfig::load("", Some("prod".into()), None).unwrap();
        assert_eq!(config.cluster, "prod");
        assert_eq!(config.refresh_interval, Duration::from_secs(60));
        assert_eq!(config.flux_interval, Duration::from_secs(10));
        assert!(config.selects("anything"));
        assert!(
            AwsConfig::load("", None, None)
                .unwrap_err()
                .to_string()
                .contains("--cluster")
        );
    }

    #[test]
    fn selection_prices_and_options() {
        let config = AwsConfig::load(
            r#"
cluster: from-file
region: eu-west-1
refreshInterval: 30s
nodeGroups: {include: ["web-*", "batch"], exclude: ["web-canary*"]}
prices: {m7a.large: 0.11}
interruptionQueue: https://sqs.eu-west-1.amazonaws.com/123456789012/prod-interruptions
fargatePricing: {eu-west-1: {vcpuPerHour: 0.04456, gbPerHour: 0.004865}}
options:
  - {nodeGroup: "web-*", options: {scaleDownUtilizationThreshold: 0.4, scaleDownUnneededTime: 5m}}
  - {nodeGroup: web-eu, options: {scaleDownUtilizationThreshold: 0.2}}
"#,
            Some("from-flag".into()),
            None,
        )
        .unwrap();
        assert_eq!(config.cluster, "from-flag");
        assert_eq!(config.region.as_deref(), Some("eu-west-1"));
        assert!(config.selects("web-eu") && config.selects("batch"));
        assert!(!config.selects("web-canary-1") && !config.selects("gpu"));
        assert_eq!(config.price("m7a.large"), Some(0.11));
        assert_eq!(
            config.interruption_queue.as_deref(),
            Some("https://sqs.eu-west-1.amazonaws.com/123456789012/prod-interruptions")
        );
        let options = config.options("web-eu").unwrap();
        assert_eq!(options.scale_down_utilization_threshold, Some(0.2));
        assert_eq!(
            options.scale_down_unneeded_time,
            Some(Duration::from_secs(300))
        );
        assert!(config.options("batch").is_none());
        assert_eq!(config.fargate_rates("eu-west-1").vcpu_per_hour, 0.04456);
        assert_eq!(config.fargate_rates("us-east-1"), FargateRates::default());
    }

    #[test]
    fn bad_config_names_the_problem() {
        assert!(AwsConfig::load("cluster: c\nrefreshInterval: often\n", None, None).is_err());
        assert!(
            AwsConfig::load("cluster: c\nnodeGroups: {include: ['[']}\n", None, None)
                .unwrap_err()
                .to_string()
                .contains("pattern")
        );
        assert!(
            AwsConfig::load("cluster: c\nspotPriceRatio: 3\n", None, None)
                .unwrap_err()
                .to_string()
                .contains("spotPriceRatio")
        );
        let empty = AwsConfig::load("cluster: c\ninterruptionQueue: ''\n", None, None);
        assert!(empty.unwrap_err().to_string().contains("interruptionQueue"));
        // The flag's queue goes over the file's, and is refused blank as the file's is.
        let config = AwsConfig::load("cluster: c\ninterruptionQueue: file-queue\n", None, None);
        let config = config.unwrap().with_interruption_queue("flag-queue".into());
        assert_eq!(
            config.unwrap().interruption_queue.as_deref(),
            Some("flag-queue")
        );
        let config = AwsConfig::load("cluster: c\n", None, None).unwrap();
        let blank = config.with_interruption_queue(" ".into()).unwrap_err();
        assert_eq!(
            blank.to_string(),
            "--interruption-queue: must name a queue: its URL or its name"
        );
        let unknown = AwsConfig::load("cluster: c\nclsuter: d\n", None, None)
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("clsuter"), "{unknown}");
    }
}
