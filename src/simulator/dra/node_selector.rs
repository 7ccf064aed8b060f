//! Where an allocation is usable (`createNodeSelector` of the allocator, `ClaimAvailableOnNode` of
//! cluster-autoscaler): pinned to the node by name when any device is node-local, else the node selectors
//! of its devices merged into one term, else (all devices reachable from every node) anywhere.

use super::pools::PooledDevice;
use crate::model::{
    Allocation, NODE_NAME_FIELD, Node, NodeScope, NodeSelector, NodeSelectorTerm, Operator,
    Requirement,
};

/// The node selector of an allocation of `devices` made for `node`.
pub(crate) fn allocation_node_selector<'a>(
    devices: impl IntoIterator<Item = &'a PooledDevice>,
    node: &Node,
) -> Option<NodeSelector> {
    let mut merged = NodeSelectorTerm::default();
    let mut any_selector = false;
    for device in devices {
        match &device.scope {
            NodeScope::Node(_) => {
                return Some(NodeSelector {
                    terms: vec![NodeSelectorTerm {
                        expressions: Vec::new(),
                        fields: vec![Requirement {
                            key: NODE_NAME_FIELD.to_string(),
                            operator: Operator::In,
                            values: vec![node.name.clone()],
                        }],
                    }],
                });
            }
            NodeScope::Selector(selector) => {
                any_selector = true;
                for term in &selector.terms {
                    for r in &term.expressions {
                        if !merged.expressions.contains(r) {
                            merged.expressions.push(r.clone());
                        }
                    }
                    for r in &term.fields {
                        if !merged.fields.contains(r) {
                            merged.fields.push(r.clone());
                        }
                    }
                }
            }
            NodeScope::All | NodeScope::PerDevice => {}
        }
    }
    any_selector.then(|| NodeSelector {
        terms: vec![merged],
    })
}

/// Whether an allocated claim can be used by a pod on `node`: no node selector, or one the node matches.
pub fn allocation_usable_on(allocation: &Allocation, node: &Node) -> bool {
    (allocation.node_selector.as_ref()).is_none_or(|s| s.matches(&node.name, &node.labels))
}
