//! What the nodes each CapacityQuota matches hold of the resources it limits, summed without matching every
//! quota against every node: nodes that agree on the values of every label key some quota's selector reads
//! are matched by the same quotas, and a loop's nodes fall in few such sets. Each node's amounts are read
//! once (per resource any quota limits) into its set's sums, and each quota adds up the sums of the sets it
//! matches. The enforcement's book, the status and the metrics all count so.

use crate::model::{FastMap, Labels, Node, QuotaSpec, VIRTUAL_KUBELET_LABEL};
use std::sync::Arc;

/// For each of `specs`, per resource it limits (in the order of its `limits`), the sum over the nodes its
/// selector matches of `amount(node, resource)`, added up with `add`.
pub fn usage_by_quota<T: Copy + Default>(
    specs: &[&QuotaSpec],
    nodes: &[Arc<Node>],
    amount: impl Fn(&Node, &str) -> T,
    add: impl Fn(T, T) -> T,
) -> Vec<Vec<T>> {
    let mut resources: Vec<&str> = (specs.iter())
        .flat_map(|s| s.limits.keys().map(String::as_str))
        .collect();
    resources.sort_unstable();
    resources.dedup();
    let index = |r: &str| {
        resources
            .binary_search(&r)
            .expect("a resource some quota limits")
    };
    let mut sets = LabelSets::new(specs);
    let mut sums: Vec<Vec<T>> = Vec::new();
    for node in nodes {
        let set = sets.set_of(&node.labels);
        if set == sums.len() {
            sums.push(vec![T::default(); resources.len()]);
        }
        for (sum, r) in sums[set].iter_mut().zip(&resources) {
            *sum = add(*sum, amount(node, r));
        }
    }
    let mut usage: Vec<Vec<T>> = (specs.iter())
        .map(|s| vec![T::default(); s.limits.len()])
        .collect();
    for (set, sums) in sums.iter().enumerate() {
        for &q in &sets.quotas[set] {
            for (used, r) in usage[q].iter_mut().zip(specs[q].limits.keys()) {
                *used = add(*used, sums[index(r)]);
            }
        }
    }
    usage
}

/// The distinct sets of values of the label keys any quota's selector reads, each with the quotas matching
/// it: each selector runs once per set, not once per node.
struct LabelSets<'q, 'n> {
    specs: &'q [&'q QuotaSpec],
    keys: Vec<&'q str>,
    seen: FastMap<Vec<Option<&'n str>>, usize>,
    /// By set, in the order the sets were first seen: the indexes in `specs` of the quotas matching it.
    quotas: Vec<Vec<usize>>,
    values: Vec<Option<&'n str>>,
}

impl<'q, 'n> LabelSets<'q, 'n> {
    fn new(specs: &'q [&'q QuotaSpec]) -> LabelSets<'q, 'n> {
        let mut keys: Vec<&str> = (specs.iter())
            .filter_map(|spec| spec.selector.as_ref())
            .flat_map(|s| s.keys())
            .chain([VIRTUAL_KUBELET_LABEL.0])
            .collect();
        keys.sort_unstable();
        keys.dedup();
        LabelSets {
            specs,
            keys,
            seen: FastMap::default(),
            quotas: Vec::new(),
            values: Vec::new(),
        }
    }

    /// The set `labels` fall in (numbered from 0 as sets are first seen).
    fn set_of(&mut self, labels: &'n Labels) -> usize {
        self.values.clear();
        (self.values).extend(self.keys.iter().map(|k| labels.get(*k).map(String::as_str)));
        if let Some(&set) = self.seen.get(self.values.as_slice()) {
            return set;
        }
        let set = self.quotas.len();
        let matching = (self.specs.iter().enumerate())
            .filter(|(_, spec)| spec.matches(labels))
            .map(|(q, _)| q)
            .collect();
        self.quotas.push(matching);
        self.seen.insert(self.values.clone(), set);
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::quota_from_value;
    use crate::model::{CapacityQuota, Resources};
    use serde_json::json;

    fn node(pool: &str, zone: &str, cores: u64) -> Arc<Node> {
        Arc::new(Node {
            labels: [("pool", pool), ("zone", zone)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            capacity: Resources {
                cpu_millis: cores * 1000,
                ..Resources::default()
            },
            ..Node::default()
        })
    }

    fn quota(selector: serde_json::Value) -> CapacityQuota {
        quota_from_value(json!({
            "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityQuota",
            "metadata": {"name": "q"},
            "spec": {"selector": selector, "limits": {"resources": {"cpu": 100, "nodes": 10}}}}))
        .unwrap()
    }

    #[test]
    fn each_quota_sums_the_nodes_it_matches_as_matching_every_node_would() {
        let mut nodes: Vec<Arc<Node>> = (0..30)
            .map(|i| {
                node(
                    ["gpu", "cpu"][i % 2],
                    ["a", "b", "c"][i % 3],
                    1 + i as u64 % 4,
                )
            })
            .collect();
        // A virtual kubelet in the gpu pool: no quota counts it.
        let mut virtual_kubelet = (*node("gpu", "a", 64)).clone();
        let (key, value) = VIRTUAL_KUBELET_LABEL;
        virtual_kubelet.labels.insert(key.into(), value.into());
        nodes.push(Arc::new(virtual_kubelet));
        let quotas = [
            quota(json!({"matchLabels": {"pool": "gpu"}})),
            quota(json!({"matchLabels": {"pool": "cpu", "zone": "b"}})),
            quota(
                json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "c"]}]}),
            ),
            quota(json!({})),
        ];
        let specs: Vec<&QuotaSpec> = quotas.iter().map(|q| q.valid().unwrap()).collect();
        let amount = |n: &Node, r: &str| match r {
            "cpu" => n.capacity.cpu_millis,
            _ => 1,
        };
        let usage = usage_by_quota(&specs, &nodes, amount, u64::saturating_add);
        // The plain way: every quota against every node. Limits in key order: cpu, nodes.
        let plain: Vec<Vec<u64>> = (specs.iter())
            .map(|s| {
                let matched: Vec<&Arc<Node>> =
                    nodes.iter().filter(|n| s.matches(&n.labels)).collect();
                vec![
                    matched.iter().map(|n| n.capacity.cpu_millis).sum(),
                    matched.len() as u64,
                ]
            })
            .collect();
        assert_eq!(usage, plain);
        assert_eq!(
            usage[3],
            vec![73_000, 30],
            "the empty selector matches every node but the virtual kubelet"
        );
        assert_eq!(usage[1][1], 5, "cpu nodes in zone b: i = 1, 7, 13, 19, 25");
    }
}
