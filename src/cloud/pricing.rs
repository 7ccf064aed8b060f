//! What nodes and pods cost, from the backend's node groups and list prices.

use super::backend::NodeGroupBackend;
use super::node_group::NodeGroupSpec;
use super::template::GPU_LABEL;
use crate::model::{INSTANCE_TYPE_LABEL, NODE_GROUP_LABEL, Resources};
use std::collections::HashMap;
use std::sync::Arc;

/// Spot capacity costs this fraction of the on-demand price unless `pricePerHour` says otherwise.
pub const DEFAULT_SPOT_PRICE_RATIO: f64 = 0.35;

/// Why a price could not be given.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PriceError {
    #[error("node {0:?} belongs to no node group and has no instance-type label")]
    UnknownNode(String),
    #[error("no price is known for {0}")]
    NoPrice(String),
    #[error("no node group can fit a pod requesting {0}")]
    NothingFits(String),
}

/// Hourly price of a node: of its node group when its providerID or labels name one, else the list price
/// of its instance type.
pub fn node_price_per_hour(
    backend: &dyn NodeGroupBackend,
    name: &str,
    provider_id: &str,
    labels: &HashMap<String, String>,
) -> Result<f64, PriceError> {
    let group = backend
        .node_group_of(provider_id)
        .or_else(|| labels.get(NODE_GROUP_LABEL).cloned())
        .and_then(|id| backend.node_group(&id));
    if let Some(group) = group {
        return group
            .price_per_hour
            .ok_or_else(|| PriceError::NoPrice(format!("node group {}", group.id)));
    }
    let instance_type = labels
        .get(INSTANCE_TYPE_LABEL)
        .ok_or_else(|| PriceError::UnknownNode(name.into()))?;
    backend
        .price_of_instance_type(instance_type)
        .ok_or_else(|| PriceError::NoPrice(format!("instance type {instance_type}")))
}

/// Hourly price of a pod: its share of the cheapest node group that fits it, by its largest resource
/// share (a pod taking half a node's memory costs half the node, whatever CPU it leaves).
pub fn pod_price_per_hour(
    backend: &dyn NodeGroupBackend,
    demand: &Resources,
) -> Result<f64, PriceError> {
    let priced = |group: &Arc<NodeGroupSpec>| {
        let per_hour = group.price_per_hour?;
        let gpu_group = group
            .template
            .metadata
            .as_ref()
            .is_some_and(|m| m.labels.contains_key(GPU_LABEL));
        // A pod that needs no GPU is not priced on GPU nodes: nobody would buy one for it.
        if !group.allocatable.fits(demand) || (gpu_group && demand.gpus == 0) {
            return None;
        }
        Some(per_hour * group.allocatable.largest_share(demand))
    };
    backend
        .node_groups()
        .iter()
        .filter_map(priced)
        .min_by(f64::total_cmp)
        .ok_or_else(|| {
            PriceError::NothingFits(format!(
                "cpu {}m, memory {} bytes, gpus {}",
                demand.cpu_millis, demand.memory_bytes, demand.gpus
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::cloud::Scenario;
    use crate::cloud::SimulatedEks;

    fn sim() -> SimulatedEks {
        SimulatedEks::new(Scenario::built_in(), Clock::manual())
    }

    #[test]
    fn nodes_are_priced_by_group_then_instance_type() {
        let sim = sim();
        let id = sim.instances("general").unwrap()[0].id.clone();
        let none = HashMap::new();
        assert_eq!(node_price_per_hour(&sim, "n", &id, &none), Ok(0.096));
        let template = HashMap::from([(NODE_GROUP_LABEL.to_string(), "gpu".to_string())]);
        assert_eq!(node_price_per_hour(&sim, "t", "", &template), Ok(0.526));
        let typed = HashMap::from([(INSTANCE_TYPE_LABEL.to_string(), "r5.large".to_string())]);
        assert_eq!(node_price_per_hour(&sim, "r", "", &typed), Ok(0.126));
        assert!(matches!(
            node_price_per_hour(&sim, "x", "", &none),
            Err(PriceError::UnknownNode(_))
        ));
        let unknown = HashMap::from([(INSTANCE_TYPE_LABEL.to_string(), "z9.mega".to_string())]);
        assert!(matches!(
            node_price_per_hour(&sim, "z", "", &unknown),
            Err(PriceError::NoPrice(_))
        ));
    }

    #[test]
    fn pods_pay_their_largest_share_of_the_cheapest_fitting_group() {
        let sim = sim();
        let small = Resources {
            cpu_millis: 965,
            memory_bytes: 1 << 30,
            pods: 1,
            ..Default::default()
        };
        // general (m5.large, 1930m allocatable, $0.096) -> half the CPU -> $0.048; spot m5.xlarge is
        // cheaper per share: 965/3920 of 0.0672.
        let spot = 0.192 * crate::cloud::pricing::DEFAULT_SPOT_PRICE_RATIO * 965.0 / 3920.0;
        assert!((pod_price_per_hour(&sim, &small).unwrap() - spot).abs() < 1e-9);
        let gpu = Resources { gpus: 1, ..small };
        assert!((pod_price_per_hour(&sim, &gpu).unwrap() - 0.526).abs() < 1e-9);
        let huge = Resources {
            cpu_millis: 64_000,
            ..small
        };
        assert!(matches!(
            pod_price_per_hour(&sim, &huge),
            Err(PriceError::NothingFits(_))
        ));
    }
}
