//! Cluster-wide and per-scale-up limits, as cluster-autoscaler's flags say them.

use std::time::Duration;

/// Cluster-wide and per-scale-up limits (cluster-autoscaler's flags).
#[derive(Clone, Debug)]
pub struct ClusterLimits {
    /// `--max-nodes-total`; 0 means none.
    pub max_nodes_total: u64,
    /// `--cores-total` max, in cores; `--memory-total` max, in GiB.
    pub max_cores: u64,
    pub max_memory_gib: u64,
    /// `--cores-total` and `--memory-total` min: scale-down stops there.
    pub min_cores: u64,
    pub min_memory_gib: u64,
    pub max_nodes_per_scaleup: u64,
    pub max_binpacking_duration: Duration,
    pub balance_similar_node_groups: bool,
}

impl Default for ClusterLimits {
    /// cluster-autoscaler's defaults.
    fn default() -> ClusterLimits {
        ClusterLimits {
            max_nodes_total: 0,
            max_cores: 320_000,
            max_memory_gib: 6_400_000,
            min_cores: 0,
            min_memory_gib: 0,
            max_nodes_per_scaleup: 1000,
            max_binpacking_duration: Duration::from_secs(10),
            balance_similar_node_groups: false,
        }
    }
}
