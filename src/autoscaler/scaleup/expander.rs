//! Expanders: which of the node groups that could help to grow. As cluster-autoscaler's `--expander`: a
//! comma-separated chain in which each strategy narrows the options, the first to leave one decides, and
//! what ties at the end is settled at random.

use crate::model::Resources;
use rand::Rng;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    LeastWaste,
    MostPods,
    LeastNodes,
    Price,
    Priority,
    Random,
}

/// Why `--expander` could not be read.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ChainError {
    #[error(
        "unknown expander {0:?} (least-waste, most-pods, least-nodes, price, priority, random)"
    )]
    Unknown(String),
    #[error("random always leaves one option: it can only come last in --expander")]
    RandomNotLast,
}

impl FromStr for Strategy {
    type Err = ChainError;
    fn from_str(text: &str) -> Result<Strategy, ChainError> {
        Ok(match text.trim() {
            "least-waste" => Strategy::LeastWaste,
            "most-pods" => Strategy::MostPods,
            "least-nodes" => Strategy::LeastNodes,
            "price" => Strategy::Price,
            "priority" => Strategy::Priority,
            "random" => Strategy::Random,
            other => return Err(ChainError::Unknown(other.to_string())),
        })
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Strategy::LeastWaste => "least-waste",
            Strategy::MostPods => "most-pods",
            Strategy::LeastNodes => "least-nodes",
            Strategy::Price => "price",
            Strategy::Priority => "priority",
            Strategy::Random => "random",
        })
    }
}

/// Parses `--expander`: one strategy or a comma-separated chain.
pub fn parse_chain(text: &str) -> Result<Vec<Strategy>, ChainError> {
    let chain = text
        .split(',')
        .map(Strategy::from_str)
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(i) = chain.iter().position(|s| *s == Strategy::Random)
        && i + 1 != chain.len()
    {
        return Err(ChainError::RandomNotLast);
    }
    Ok(chain)
}

/// One way to help: grow `group` by `node_count` nodes for `pods` pods.
#[derive(Clone, Debug)]
pub struct ExpansionOption {
    pub group_id: String,
    pub node_count: u64,
    pub pods: u64,
    /// Sum of the helped pods' requests.
    pub requests: Resources,
    /// One node's capacity.
    pub capacity: Resources,
    /// Filled only when the chain prices options: the group's node price per hour, and the pods'.
    pub node_price: Option<f64>,
    pub pods_price: Option<f64>,
    /// Of its new nodes, how many go to capacity already paid for (an active reservation's or an open
    /// Capacity Block's available instances): prepaid, 0/h for the decision.
    pub reserved: u64,
}

/// What the price strategy needs to know of the cluster (filled by the caller from the provider).
#[derive(Clone, Copy, Debug, Default)]
pub struct PriceContext {
    /// Nodes in the cluster, to size the preferred node.
    pub cluster_nodes: usize,
    /// Price of a 500m / 500MiB pod for an hour (cluster-autoscaler's stabilisation term).
    pub stabilizer: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ExpanderError {
    #[error("priority expander config {path}: {reason}")]
    Priorities {
        path: PathBuf,
        reason: PrioritiesError,
    },
    #[error("price expander: {0}")]
    Price(String),
}

/// `--expander` with its inputs.
#[derive(Clone, Debug)]
pub struct Expander {
    pub chain: Vec<Strategy>,
    /// The priority strategy's YAML (cluster-autoscaler's ConfigMap `priorities` value), re-read per decision.
    pub priorities: Option<PathBuf>,
}

impl Expander {
    pub fn needs_prices(&self) -> bool {
        self.chain.contains(&Strategy::Price)
    }

    /// The same chain without the price strategy: for a loop without prices.
    pub fn without_price(&self) -> Expander {
        Expander {
            chain: self
                .chain
                .iter()
                .copied()
                .filter(|s| *s != Strategy::Price)
                .collect(),
            priorities: self.priorities.clone(),
        }
    }

    /// The index of the chosen option; `options` is never empty. Capacity already paid for comes first,
    /// whatever the chain (as Karpenter prefers reserved offerings): when some options launch into an
    /// active reservation or block, the chain chooses among those.
    pub fn choose(
        &self,
        options: &[ExpansionOption],
        prices: PriceContext,
    ) -> Result<usize, ExpanderError> {
        let mut left: Vec<usize> = reserved_first(options);
        for strategy in &self.chain {
            if left.len() <= 1 {
                break;
            }
            left = match strategy {
                Strategy::LeastWaste => keep_min(&left, |i| waste(&options[i])),
                Strategy::MostPods => keep_min(&left, |i| -(options[i].pods as f64)),
                Strategy::LeastNodes => keep_min(&left, |i| options[i].node_count as f64),
                Strategy::Price => {
                    let scores = left
                        .iter()
                        .map(|&i| price_score(&options[i], prices).map(|s| (i, s)))
                        .collect::<Result<BTreeMap<_, _>, _>>()?;
                    keep_min(&left, |i| scores[&i])
                }
                Strategy::Priority => match &self.priorities {
                    Some(path) => by_priority(&left, options, &read_priorities(path)?),
                    None => left,
                },
                Strategy::Random => left,
            };
        }
        Ok(left[rand::rng().random_range(0..left.len())])
    }
}

/// The options that launch some of their nodes into capacity already paid for, when there are such; all of
/// them otherwise.
pub fn reserved_first(options: &[ExpansionOption]) -> Vec<usize> {
    let all = 0..options.len();
    let reserved: Vec<usize> = all.clone().filter(|&i| options[i].reserved > 0).collect();
    if reserved.is_empty() {
        all.collect()
    } else {
        reserved
    }
}

/// The options with the lowest score; all of them when no score is a number (a provider pricing everything
/// at zero makes upstream's price ratio 0/0).
fn keep_min(left: &[usize], score: impl Fn(usize) -> f64) -> Vec<usize> {
    let best = left.iter().map(|&i| score(i)).fold(f64::INFINITY, f64::min);
    let kept: Vec<usize> = left.iter().copied().filter(|&i| score(i) == best).collect();
    if kept.is_empty() { left.to_vec() } else { kept }
}

/// cluster-autoscaler's least-waste: the unused share of cpu plus that of memory, over node capacity.
pub fn waste(option: &ExpansionOption) -> f64 {
    let part = |requested: u64, per_node: u64| {
        let available = per_node as f64 * option.node_count as f64;
        if available <= 0.0 {
            0.0
        } else {
            (available - requested as f64) / available
        }
    };
    part(option.requests.cpu_millis, option.capacity.cpu_millis)
        + part(option.requests.memory_bytes, option.capacity.memory_bytes)
}

/// cluster-autoscaler's price score: what the nodes cost over what the pods would cost alone, times how
/// far the node is from the preferred size for a cluster this big (damped as more nodes are added).
pub fn price_score(option: &ExpansionOption, context: PriceContext) -> Result<f64, ExpanderError> {
    let missing = || ExpanderError::Price(format!("no price for node group {}", option.group_id));
    let node_price = option.node_price.ok_or_else(missing)?;
    let pods_price = option.pods_price.ok_or_else(missing)?;
    // Nodes launched into a reservation or block are prepaid: only the others cost.
    let paid = option.node_count.saturating_sub(option.reserved);
    let ratio = (node_price * paid as f64 + context.stabilizer) / (pods_price + context.stabilizer);
    if option.capacity.gpus > 0 {
        return Ok(1000.0 * ratio);
    }
    let preferred_cpus = match context.cluster_nodes {
        0..=2 => 1.0,
        3..=6 => 2.0,
        7..=20 => 4.0,
        21..=60 => 8.0,
        61..=200 => 16.0,
        _ => 32.0,
    };
    let cpus = (option.capacity.cpu_millis as f64 / 1000.0).max(0.001);
    let unfitness = (preferred_cpus / cpus).max(cpus / preferred_cpus);
    let damped = (unfitness - 1.0) * (1.0 - ((option.node_count as f64 - 1.0) / 15.0).tanh()) + 1.0;
    Ok(damped * ratio)
}

/// `{priority: [regex, ...]}`, cluster-autoscaler's priority expander format.
pub fn read_priorities(path: &Path) -> Result<Vec<(i64, Vec<Regex>)>, ExpanderError> {
    let fail = |reason: PrioritiesError| ExpanderError::Priorities {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(PrioritiesError::Read(e)))?;
    parse_priorities(&text).map_err(fail)
}

/// Why the priority expander's configuration could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PrioritiesError {
    #[error("{0}")]
    Read(std::io::Error),
    #[error("expected {{priority: [regex, ...]}}: {0}")]
    Yaml(serde_norway::Error),
    #[error("priority {priority}: {error}")]
    Regex { priority: i64, error: regex::Error },
}

pub fn parse_priorities(text: &str) -> Result<Vec<(i64, Vec<Regex>)>, PrioritiesError> {
    let raw: BTreeMap<i64, Vec<String>> =
        serde_norway::from_str(text).map_err(PrioritiesError::Yaml)?;
    raw.into_iter()
        .rev()
        .map(|(priority, patterns)| {
            let regexes = patterns
                .iter()
                .map(|p| Regex::new(p).map_err(|error| PrioritiesError::Regex { priority, error }))
                .collect::<Result<_, _>>()?;
            Ok((priority, regexes))
        })
        .collect()
}

/// The options whose group matches the highest priority that matches any; all of them when none matches.
fn by_priority(
    left: &[usize],
    options: &[ExpansionOption],
    priorities: &[(i64, Vec<Regex>)],
) -> Vec<usize> {
    for (_, regexes) in priorities {
        let matching: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&i| regexes.iter().any(|r| r.is_match(&options[i].group_id)))
            .collect();
        if !matching.is_empty() {
            return matching;
        }
    }
    left.to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const GI: u64 = 1 << 30;

    fn option(
        group: &str,
        nodes: u64,
        pods: u64,
        cpu: u64,
        mem_gi: u64,
        node_cpu: u64,
    ) -> ExpansionOption {
        ExpansionOption {
            group_id: group.into(),
            node_count: nodes,
            pods,
            requests: Resources {
                cpu_millis: cpu,
                memory_bytes: mem_gi * GI,
                ..Default::default()
            },
            capacity: Resources {
                cpu_millis: node_cpu,
                memory_bytes: node_cpu / 250 * GI,
                ..Default::default()
            },
            node_price: None,
            pods_price: None,
            reserved: 0,
        }
    }

    fn expander(chain: &str) -> Expander {
        Expander {
            chain: parse_chain(chain).unwrap(),
            priorities: None,
        }
    }

    #[test]
    fn chains_parse_and_random_comes_last() {
        assert_eq!(
            parse_chain("priority,least-waste").unwrap(),
            [Strategy::Priority, Strategy::LeastWaste]
        );
        assert!(
            parse_chain("random,least-waste")
                .unwrap_err()
                .to_string()
                .contains("last")
        );
        assert!(
            parse_chain("cheapest")
                .unwrap_err()
                .to_string()
                .contains("unknown expander \"cheapest\"")
        );
    }

    #[test]
    fn least_waste_prefers_the_tighter_fit() {
        // 6 CPUs / 24 GiB of pods: 2 x 4-CPU nodes waste 25%+25%; 1 x 8-CPU node the same; 1 x 16-CPU far more.
        let options = [
            option("big", 1, 6, 6000, 24, 16_000),
            option("medium", 1, 6, 6000, 24, 8000),
        ];
        assert_eq!(
            expander("least-waste")
                .choose(&options, PriceContext::default())
                .unwrap(),
            1
        );
        assert!((waste(&options[1]) - 0.5).abs() < 1e-9);
    }

    #[test]
    fn most_pods_then_least_nodes() {
        let options = [
            option("a", 3, 10, 1000, 1, 4000),
            option("b", 2, 12, 1000, 1, 4000),
            option("c", 1, 12, 1000, 1, 4000),
        ];
        assert_eq!(
            expander("most-pods,least-nodes")
                .choose(&options, PriceContext::default())
                .unwrap(),
            2
        );
    }

    #[test]
    fn priority_picks_the_highest_matching_regex_and_passes_on_ties() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("priorities.yaml");
        std::fs::write(&path, "10:\n  - .*\n50:\n  - ^spot-.*\n").unwrap();
        let options = [
            option("on-demand", 1, 4, 1000, 1, 4000),
            option("spot-large", 1, 4, 1000, 1, 16_000),
            option("spot-small", 1, 4, 1000, 1, 4000),
        ];
        let chained = Expander {
            chain: parse_chain("priority,least-waste").unwrap(),
            priorities: Some(path.clone()),
        };
        assert_eq!(
            chained.choose(&options, PriceContext::default()).unwrap(),
            2
        );
        std::fs::write(&path, "10: ['[unclosed']\n").unwrap();
        let error = chained
            .choose(&options, PriceContext::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains("priority 10"), "{error}");
    }

    #[test]
    fn price_prefers_cheap_nodes_of_a_sensible_size() {
        let mut cheap = option("cheap", 2, 8, 3000, 6, 2000);
        cheap.node_price = Some(0.1);
        cheap.pods_price = Some(0.15);
        let mut dear = option("dear", 1, 8, 3000, 6, 4000);
        dear.node_price = Some(0.4);
        dear.pods_price = Some(0.15);
        let context = PriceContext {
            cluster_nodes: 4,
            stabilizer: 0.02,
        };
        assert_eq!(
            expander("price")
                .choose(&[dear.clone(), cheap.clone()], context)
                .unwrap(),
            1
        );
        dear.node_price = None;
        assert!(expander("price").choose(&[dear, cheap], context).is_err());
    }

    #[test]
    fn free_prices_do_not_break_the_choice() {
        // Everything priced at zero makes upstream's ratio 0/0 for both options: the price step must keep
        // both (not drop them, not pick one), so the next strategy in the chain decides.
        let mut two_nodes = option("a", 2, 4, 1000, 1, 4000);
        two_nodes.node_price = Some(0.0);
        two_nodes.pods_price = Some(0.0);
        let one_node = ExpansionOption {
            group_id: "b".into(),
            node_count: 1,
            ..two_nodes.clone()
        };
        let options = [two_nodes, one_node];
        for _ in 0..32 {
            let chosen = expander("price,least-nodes")
                .choose(&options, PriceContext::default())
                .unwrap();
            assert_eq!(chosen, 1, "least-nodes decides between the free options");
        }
        assert!(
            price_score(&options[0], PriceContext::default())
                .unwrap()
                .is_nan()
        );
    }

    #[test]
    fn prepaid_capacity_comes_first_with_the_default_and_with_price() {
        // A dearer group whose new nodes go to a reservation's free instances, beside a cheaper On-Demand one.
        let mut ondemand = option("ondemand", 1, 4, 3000, 6, 4000);
        ondemand.node_price = Some(0.2);
        ondemand.pods_price = Some(0.15);
        let mut reserved = option("reserved", 1, 4, 3000, 6, 16_000);
        reserved.node_price = Some(0.8);
        reserved.pods_price = Some(0.15);
        let context = PriceContext {
            cluster_nodes: 4,
            stabilizer: 0.02,
        };
        let options = [ondemand.clone(), reserved.clone()];
        for chain in ["least-waste", "price"] {
            assert_eq!(
                expander(chain).choose(&options, context).unwrap(),
                0,
                "{chain}"
            );
        }
        reserved.reserved = 1;
        let options = [ondemand, reserved.clone()];
        for chain in ["least-waste", "price", "price,least-waste"] {
            assert_eq!(
                expander(chain).choose(&options, context).unwrap(),
                1,
                "{chain}"
            );
        }
        // Priced prepaid: only the nodes beyond the free instances cost.
        let free = price_score(&reserved, context).unwrap();
        reserved.reserved = 0;
        assert!(free < price_score(&reserved, context).unwrap());
    }
}
