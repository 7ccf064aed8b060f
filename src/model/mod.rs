//! The internal model: compact integer types the decisions are made on, converted once at the edge.

pub mod fargate; // which Fargate profile takes a pod, as EKS matches
pub mod fast_map; // the hash maps of the hot paths
pub mod node; // what a node offers and demands of pods
pub mod node_group; // node groups, their instances and options, as a provider says them
pub mod pdb; // disruption budgets
pub mod pod; // what a pod needs and where it may run
pub mod pod_names; // pods' names packed into one string, as the view reads them and a scale-up lists them
pub mod pods; // the view's pods and a loop's virtual ones, as one list
pub mod resources; // integer resources and a pod's demand
pub mod selector; // label selectors and node selector terms
pub mod taint; // taints and tolerations

pub use fast_map::{FastMap, FastSet};
pub use node::{GPU_LABEL, Node};
pub use node_group::{GroupOptions, Instance, InstanceState, NodeGroup};
pub use pod::Pod;
pub use pod_names::PodNames;
pub use pods::PodList;
pub use resources::{GPU_RESOURCE, Resources};
pub use selector::Labels;
pub use taint::{Taint, TaintEffect, Toleration};
