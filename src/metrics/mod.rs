//! Prometheus metrics: the provider's (`ekscale_provider_*`) and the companion's (`ekscale_*`, named after
//! cluster-autoscaler's `cluster_autoscaler_*` so that existing dashboards carry over).

pub mod autoscaler; // the companion's loop: pods, nodes, scale-ups and -downs, durations, activity
pub mod provider; // the provider's RPCs, instances and AWS calls

pub use autoscaler::AutoscalerMetrics;
pub use provider::ProviderMetrics;
