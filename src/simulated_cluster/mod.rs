//! The simulated Kubernetes cluster: the Kubernetes side that `demo`, tests and benchmarks run the companion
//! on when there is no API server. Nodes register when the provider's instances run and leave when they are
//! gone; a scheduler binds pending pods by kube-scheduler's filters and the DRA allocator written plainly
//! (`crate::oracle`), not by the predicates the companion plans with, and reports where those disagree.

mod claims; // DRA: slices nodes publish, claims made from templates, allocations the scheduler writes
mod cluster; // nodes, pods and the objects the companion reads; faults to inject
mod extended; // KEP-5004: claims the scheduler makes for extended resources devices serve
mod fargate; // pods a Fargate profile takes, each on a node of its own
mod names; // generated names and uids
mod plain; // the binding decision by the plain rules, and where the companion's placement disagrees
mod scheduler; // binding and preemption

pub use cluster::{Broken, Budget, OnDisagreement, SimulatedCluster};
pub use plain::{Disagreement, DisagreementKind};
