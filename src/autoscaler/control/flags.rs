//! The companion's flags, with cluster-autoscaler's names and defaults where the meaning is the same, and
//! how they become the loop's settings. The binary parses them; `controller` runs what they ask.

use crate::autoscaler::client::{ClientError, ProviderClient, ProviderConfig};
use crate::autoscaler::clusterstate::backoff::BackoffSettings;
use crate::autoscaler::disruption::{DisruptionConfig, DisruptionConfigError};
use crate::autoscaler::headroom::buffers::ReadyReplicas;
use crate::autoscaler::headroom::policy::{self as headroom, PolicyError};
use crate::autoscaler::leaving::action::LeavingHandling;
use crate::autoscaler::scaledown::act::actuation::Pacing;
use crate::autoscaler::scaledown::plan::drainability::Rules;
use crate::autoscaler::scaledown::settings::{
    ConsolidationMode as Mode, ConsolidationSettings, MinSaving, ScaleDownSettings,
};
use crate::autoscaler::scaleup::expander::{self, ChainError, Expander, ExpanderError, Strategy};
use crate::autoscaler::scaleup::limits::ClusterLimits;
use crate::autoscaler::settings::HealthSettings;
use crate::autoscaler::settings::Settings;
use crate::model::Invalid;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[derive(Args, Debug)]
pub struct ProviderArgs {
    /// The provider's gRPC address (host:port), as cluster-autoscaler's cloud-config `address`.
    #[arg(long, value_name = "ADDR")]
    pub provider: String,
    /// Client certificate (PEM) for TLS to the provider.
    #[arg(long, value_name = "FILE", requires = "provider_tls_key")]
    pub provider_tls_cert: Option<PathBuf>,
    #[arg(long, value_name = "FILE", requires = "provider_tls_cert")]
    pub provider_tls_key: Option<PathBuf>,
    /// CA (PEM) that signed the provider's certificate.
    #[arg(long, value_name = "FILE")]
    pub provider_tls_ca: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct DecisionArgs {
    /// A strategy or a comma-separated chain: least-waste, most-pods, least-nodes, price, priority, random.
    #[arg(long, default_value = "least-waste", value_delimiter = ',', value_parser = Strategy::from_str)]
    pub expander: Vec<Strategy>,
    /// The priority expander's `{priority: [regex, ...]}` YAML (cluster-autoscaler's ConfigMap value).
    #[arg(long, value_name = "FILE")]
    pub expander_priority_config: Option<PathBuf>,
    /// Headroom to keep free ahead of demand: a YAML file with a `headroom:` list of policies (as in the
    /// demo script; see README).
    #[arg(long, value_name = "FILE")]
    pub headroom_config: Option<PathBuf>,
    /// Disruption control per node group: budgets (with maintenance windows), expireAfter and
    /// terminationGracePeriod, in Karpenter's words (see README). With `run`, the ConfigMap
    /// `ekscale-disruption` in --namespace is read over it.
    #[arg(long, value_name = "FILE")]
    pub disruption_config: Option<PathBuf>,
    /// Most nodes in all node groups together; 0 means no limit.
    #[arg(long, default_value_t = 0)]
    pub max_nodes_total: u64,
    /// MIN:MAX cores in the cluster.
    #[arg(long, default_value = "0:320000", value_parser = min_max)]
    pub cores_total: (u64, u64),
    /// MIN:MAX GiB of memory in the cluster.
    #[arg(long, default_value = "0:6400000", value_parser = min_max)]
    pub memory_total: (u64, u64),
    #[arg(long, default_value_t = 1000)]
    pub max_nodes_per_scaleup: u64,
    /// How long a loop's binpacking may take: every node group's estimate and every search together.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub max_nodegroup_binpacking_duration: Duration,
    /// Split scale-ups across node groups that look alike (zones of one shape, say).
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub balance_similar_node_groups: bool,
    /// Whether to enable CapacityQuota CRD support: every valid quota's limits kept wherever nodes are
    /// added (on by default, unlike upstream's flag; false ignores quotas).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub capacity_quotas_enabled: bool,
    /// Whether to reconcile CapacityBuffers' `status.readyReplicas`: the chunks that fit on the nodes the
    /// cluster has (cluster-autoscaler 1.37's flag and default).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub capacity_buffer_ready_replicas_enabled: bool,
    /// `handle`: nodes going away (Spot interruptions, rebalance recommendations, scheduled events,
    /// unhealthy nodes) are no room and their pods are planned elsewhere ahead; `ignore`: they are room like
    /// any node and nothing is done ahead (the behaviour before), each still listed.
    #[arg(long, value_enum, default_value_t = LeavingHandling::Handle)]
    pub leaving_nodes: LeavingHandling,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub scale_down_enabled: bool,
    /// Nodes whose requests are at most this share of allocatable (cpu and memory) are candidates.
    #[arg(long, default_value_t = 0.5, value_parser = fraction)]
    pub scale_down_utilization_threshold: f64,
    /// The same for GPU nodes, over GPUs alone.
    #[arg(long, default_value_t = 0.5, value_parser = fraction)]
    pub scale_down_gpu_utilization_threshold: f64,
    /// How long a node must be unneeded before it is removed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub scale_down_unneeded_time: Duration,
    /// How long an unready node must be unneeded before it is removed.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20m")]
    pub scale_down_unready_time: Duration,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub scale_down_unready_enabled: bool,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub scale_down_delay_after_add: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub scale_down_delay_after_delete: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3m")]
    pub scale_down_delay_after_failure: Duration,
    /// Most node deletions in progress at once.
    #[arg(long, default_value_t = 10)]
    pub max_scale_down_parallelism: usize,
    /// Most deletions of nodes with pods to evict in progress at once.
    #[arg(long, default_value_t = 1)]
    pub max_drain_parallelism: usize,
    /// Most empty nodes whose deletion starts in one loop: a sudden jump of empty nodes (a view that lost
    /// its pods) cannot take more at once.
    #[arg(long, default_value_t = 10)]
    pub max_empty_bulk_delete: usize,
    /// The most grace an evicted pod gets, in seconds.
    #[arg(long, default_value_t = 600)]
    pub max_graceful_termination_sec: u64,
    /// How long refused evictions are retried before the node is given back.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2m")]
    pub max_pod_eviction_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5s")]
    pub node_delete_delay_after_taint: Duration,
    /// Leave DaemonSet (and mirror) pods out of utilization.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub ignore_daemonsets_utilization: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub skip_nodes_with_system_pods: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub skip_nodes_with_local_storage: bool,
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub skip_nodes_with_custom_controller_pods: bool,
    /// kube-system pods without a PDB older than this no longer keep their node (upstream's spelling).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "1h")]
    pub blocking_system_pod_distruption_timeout: Duration,
    /// Soft taints (DeletionCandidateOfClusterAutoscaler) added or removed per loop; 0 turns them off.
    #[arg(long, default_value_t = 10)]
    pub max_bulk_soft_taint_count: usize,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    pub max_node_provision_time: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    pub max_node_startup_time: Duration,
    /// The cluster is unhealthy (no scale-up, no scale-down) when more than this percentage of its nodes, and
    /// more than `--ok-total-unready-count` of them, are unready.
    #[arg(long, default_value_t = 45.0, value_parser = percentage)]
    pub max_total_unready_percentage: f64,
    #[arg(long, default_value_t = 3)]
    pub ok_total_unready_count: usize,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "5m")]
    pub initial_node_group_backoff_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "30m")]
    pub max_node_group_backoff_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "3h")]
    pub node_group_backoff_reset_timeout: Duration,
    /// Wait this long after a pod is created before adding a node for it (`run` only).
    #[arg(long, value_parser = humantime::parse_duration, default_value = "0s")]
    pub new_pod_scale_up_delay: Duration,
    /// Pods with a priority below this are expendable: never a reason to scale up.
    #[arg(long, default_value_t = -10, allow_negative_numbers = true)]
    pub expendable_pods_priority_cutoff: i32,
    /// `off` (upstream's behaviour) and `delete` remove nodes only (scale-down); `replace` also replaces
    /// nodes by one cheaper node that holds their pods.
    #[arg(long, value_enum, default_value_t = Mode::Off)]
    pub consolidation: Mode,
    /// What a replacement must save: a share of the price of what it replaces and dollars per hour, both
    /// (`20%,0.01`; a part left out keeps its default).
    #[arg(long, default_value = "20%,0.01", value_parser = MinSaving::from_str, allow_hyphen_values = true)]
    pub consolidation_min_saving: MinSaving,
    /// Most replacements in progress at once (at least 1).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub max_consolidation_parallelism: u16,
    /// How long a node must have had no pod scheduled to it before it is replaced.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub consolidation_stable_time: Duration,
    /// Graceful degradation (cluster-autoscaler 1.37): placing the pending pods on the nodes there are stops
    /// after --pending-pods-batching-timeout; the pods not tried wait for the next loop, with no scale-up for
    /// them in this one.
    #[arg(long, default_value_t = false, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    pub enable_graceful_degradation: bool,
    /// How long placing the pending pods may take in one loop, with --enable-graceful-degradation.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "4m")]
    pub pending_pods_batching_timeout: Duration,
}

/// cluster-autoscaler's `--address`: `host:port`, or `:port` for every interface.
fn listen_address(text: &str) -> Result<std::net::SocketAddr, Invalid> {
    let full = match text.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => text.to_string(),
    };
    full.parse()
        .map_err(|_| Invalid::value(format!("{text:?}: expected host:port or :port")))
}

/// A threshold between 0 and 1.
fn fraction(text: &str) -> Result<f64, Invalid> {
    let value: f64 = text
        .parse()
        .map_err(|_| Invalid::value(format!("{text:?} is not a number")))?;
    if !(0.0..=1.0).contains(&value) {
        return Err(Invalid::value(format!("{text} is not between 0 and 1")));
    }
    Ok(value)
}

fn min_max(text: &str) -> Result<(u64, u64), Invalid> {
    let (min, max) = text
        .split_once(':')
        .ok_or_else(|| Invalid::value(format!("{text:?}: expected MIN:MAX")))?;
    let number = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| Invalid::value(format!("{text:?}: {s:?} is not a whole number")))
    };
    let (min, max) = (number(min)?, number(max)?);
    if min > max {
        return Err(Invalid::value(format!("{text:?}: MIN is above MAX")));
    }
    Ok((min, max))
}

/// Why the decision flags do not make settings.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "--consolidation replace needs --scale-down-enabled=true: replacements drain and delete the nodes \
         they replace as scale-down does"
    )]
    ConsolidationWithoutScaleDown,
    #[error(transparent)]
    Expander(#[from] ChainError),
    #[error("--expander priority needs --expander-priority-config FILE")]
    NoPriorityConfig,
    #[error(transparent)]
    Priorities(#[from] ExpanderError),
    #[error(transparent)]
    Headroom(#[from] PolicyError),
    #[error("--disruption-config {path}: {source}")]
    Disruption {
        path: PathBuf,
        source: Box<DisruptionFileError>,
    },
}

/// Why a `--disruption-config` file was refused.
#[derive(Debug, thiserror::Error)]
pub enum DisruptionFileError {
    #[error(transparent)]
    Read(#[from] std::io::Error),
    #[error(transparent)]
    Config(#[from] DisruptionConfigError),
}

/// Reads and checks a `--disruption-config` file, refused whole when anything in it is wrong.
pub fn read_disruption(path: &Path) -> Result<DisruptionConfig, SettingsError> {
    let fail = |source: DisruptionFileError| SettingsError::Disruption {
        path: path.to_path_buf(),
        source: Box::new(source),
    };
    let text = std::fs::read_to_string(path).map_err(|e| fail(e.into()))?;
    DisruptionConfig::parse(&text).map_err(|e| fail(e.into()))
}

/// What the loop is run for, which decides how it treats time, actions and instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// One loop over a snapshot, as if time had passed; nothing is changed.
    Simulate,
    /// The controller's loop, waiting for new pods as upstream does.
    Run {
        /// Whether it acts (IncreaseSize, deletions) or only plans (`--dry-run`).
        acting: Acting,
        /// Whether the cluster is a live one, where requested nodes register (so those that never do are
        /// removed), or a static snapshot, where none ever does.
        cluster: Cluster,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acting {
    Act,
    DryRun,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cluster {
    Live,
    Snapshot,
}

impl DecisionArgs {
    /// Which pods hold a node from scale-down (upstream's drainability flags).
    fn drain_rules(&self) -> Rules {
        Rules {
            skip_system_pods: self.skip_nodes_with_system_pods,
            skip_local_storage: self.skip_nodes_with_local_storage,
            skip_custom_controllers: self.skip_nodes_with_custom_controller_pods,
            system_pod_timeout: self.blocking_system_pod_distruption_timeout,
            expendable_cutoff: self.expendable_pods_priority_cutoff,
        }
    }

    /// How a deletion paces itself: after the taint, the evictions, the pods' grace.
    fn pacing(&self) -> Pacing {
        Pacing {
            delay_after_taint: self.node_delete_delay_after_taint,
            max_pod_eviction_time: self.max_pod_eviction_time,
            max_graceful_termination: Duration::from_secs(self.max_graceful_termination_sec),
        }
    }

    /// The loop's settings for `command`.
    pub fn settings(&self, command: Command) -> Result<Settings, SettingsError> {
        let (live, act, cluster) = match command {
            Command::Simulate => (false, false, false),
            Command::Run { acting, cluster } => {
                (true, acting == Acting::Act, cluster == Cluster::Live)
            }
        };
        if self.consolidation == Mode::Replace && !self.scale_down_enabled {
            return Err(SettingsError::ConsolidationWithoutScaleDown);
        }
        let names: Vec<String> = self.expander.iter().map(|s| s.to_string()).collect();
        let expander = Expander {
            chain: expander::parse_chain(&names.join(","))?,
            priorities: self.expander_priority_config.clone(),
        };
        if expander.chain.contains(&Strategy::Priority) {
            let path = expander
                .priorities
                .as_ref()
                .ok_or(SettingsError::NoPriorityConfig)?;
            expander::read_priorities(path)?;
        }
        Ok(Settings {
            expander,
            limits: ClusterLimits {
                max_nodes_total: self.max_nodes_total,
                max_cores: self.cores_total.1,
                max_memory_gib: self.memory_total.1,
                min_cores: self.cores_total.0,
                min_memory_gib: self.memory_total.0,
                max_nodes_per_scaleup: self.max_nodes_per_scaleup,
                max_binpacking_duration: self.max_nodegroup_binpacking_duration,
                balance_similar_node_groups: self.balance_similar_node_groups,
            },
            expendable_pods_priority_cutoff: self.expendable_pods_priority_cutoff,
            max_node_provision_time: self.max_node_provision_time,
            max_node_startup_time: self.max_node_startup_time,
            health: HealthSettings {
                max_unready_percentage: self.max_total_unready_percentage,
                ok_unready_count: self.ok_total_unready_count,
            },
            backoff: BackoffSettings {
                initial: self.initial_node_group_backoff_duration,
                max: self.max_node_group_backoff_duration,
                reset: self.node_group_backoff_reset_timeout,
            },
            act,
            // Over a snapshot, requested nodes never register: nothing to remove.
            remove_unregistered: cluster,
            wait_for_new_pods: live,
            new_pod_scale_up_delay: self.new_pod_scale_up_delay,
            headroom: match &self.headroom_config {
                Some(path) => headroom::read(path)?,
                None => Vec::new(),
            },
            disruption: match &self.disruption_config {
                Some(path) => Some(Arc::new(read_disruption(path)?)),
                None => None,
            },
            capacity_quotas: self.capacity_quotas_enabled,
            capacity_buffer_ready_replicas: match self.capacity_buffer_ready_replicas_enabled {
                true => ReadyReplicas::Reconciled,
                false => ReadyReplicas::Left,
            },
            leaving_nodes: self.leaving_nodes,
            scale_down: ScaleDownSettings {
                enabled: self.scale_down_enabled,
                rules: self.drain_rules(),
                utilization_threshold: self.scale_down_utilization_threshold,
                gpu_utilization_threshold: self.scale_down_gpu_utilization_threshold,
                unneeded_time: self.scale_down_unneeded_time,
                unready_time: self.scale_down_unready_time,
                ignore_daemonsets_utilization: self.ignore_daemonsets_utilization,
                unready_enabled: self.scale_down_unready_enabled,
                delay_after_add: self.scale_down_delay_after_add,
                delay_after_delete: self.scale_down_delay_after_delete,
                delay_after_failure: self.scale_down_delay_after_failure,
                max_parallelism: self.max_scale_down_parallelism,
                max_drain_parallelism: self.max_drain_parallelism,
                max_empty_bulk_delete: self.max_empty_bulk_delete,
                pacing: self.pacing(),
                max_soft_taints: self.max_bulk_soft_taint_count,
                // `simulate` lists every node that would go; `run` paces itself.
                timers_elapsed: !live,
            },
            consolidation: ConsolidationSettings {
                mode: self.consolidation,
                min_saving: self.consolidation_min_saving,
                max_parallelism: usize::from(self.max_consolidation_parallelism),
                stable_time: self.consolidation_stable_time,
            },
            pending_pods_batching_timeout: (self.enable_graceful_degradation)
                .then_some(self.pending_pods_batching_timeout),
        })
    }
}

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub provider: ProviderArgs,
    #[command(flatten)]
    pub decisions: DecisionArgs,
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub scan_interval: Duration,
    /// Address of /metrics, /health-check and /snapshotz (`:8085` is every interface).
    #[arg(long, default_value = ":8085", value_parser = listen_address)]
    pub address: std::net::SocketAddr,
    /// /health-check fails when no loop ran for this long...
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10m")]
    pub max_inactivity: Duration,
    /// ...or no loop succeeded for this long...
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15m")]
    pub max_failing_time: Duration,
    /// ...or, before the first success, since the start.
    #[arg(long, value_parser = humantime::parse_duration, default_value = "20m")]
    pub max_startup_time: Duration,
    /// Hold a Lease so that one replica acts (default: on with a live cluster, off with --snapshot).
    #[arg(long, action = clap::ArgAction::Set)]
    pub leader_elect: Option<bool>,
    /// Requests per second to the API server, on average...
    #[arg(long, default_value_t = 5.0)]
    pub kube_client_qps: f64,
    /// ...and at once.
    #[arg(long, default_value_t = 10)]
    pub kube_client_burst: u32,
    /// Where the status ConfigMap (`ekscale-autoscaler-status`) is written.
    #[arg(long, default_value = "kube-system")]
    pub namespace: String,
    #[arg(long, default_value = "ekscale-autoscaler")]
    pub leader_elect_resource_name: String,
    #[arg(long, default_value = "kube-system")]
    pub leader_elect_resource_namespace: String,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "15s")]
    pub leader_elect_lease_duration: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "10s")]
    pub leader_elect_renew_deadline: Duration,
    #[arg(long, value_parser = humantime::parse_duration, default_value = "2s")]
    pub leader_elect_retry_period: Duration,
    /// Use a `kubectl get nodes,pods,pdb -A -o json` snapshot as the cluster.
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Plan and report, never act.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    #[command(flatten)]
    pub provider: ProviderArgs,
    #[command(flatten)]
    pub decisions: DecisionArgs,
    #[arg(long, value_name = "FILE")]
    pub snapshot: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// The moment the loop plans at (RFC 3339 with its zone, e.g. 2026-12-01T09:30:00Z): schedules, Capacity
    /// Block windows and ages are evaluated then. Without it, the snapshot's newest timestamp.
    #[arg(long, value_parser = now_flag)]
    pub now: Option<SystemTime>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    Table,
    Json,
}

impl ProviderArgs {
    pub fn client(&self) -> Result<ProviderClient, ClientError> {
        let config = ProviderConfig {
            identity: self
                .provider_tls_cert
                .clone()
                .zip(self.provider_tls_key.clone()),
            ca: self.provider_tls_ca.clone(),
            ..ProviderConfig::plaintext(&self.provider)
        };
        ProviderClient::new(&config)
    }
}

/// `--now`: one instant, strictly (a time without its zone is refused).
fn now_flag(text: &str) -> Result<SystemTime, Invalid> {
    crate::model::rfc3339("--now", text)
}

/// A percentage, 0 to 100.
fn percentage(text: &str) -> Result<f64, Invalid> {
    let value: f64 = text
        .parse()
        .map_err(|_| Invalid::value(format!("{text:?} is not a number")))?;
    if (0.0..=100.0).contains(&value) {
        Ok(value)
    } else {
        Err(Invalid::value(format!(
            "{value} is not a percentage between 0 and 100"
        )))
    }
}
