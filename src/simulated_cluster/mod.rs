//! The simulated Kubernetes cluster: the Kubernetes side that `demo`, tests and benchmarks run the companion
//! on when there is no API server. Nodes register when the provider's instances run and leave when they are
//! gone; a scheduler binds pending pods with the same predicates the autoscaler simulates with, so the two
//! never disagree about what fits (devices claimed through DRA included).

mod claims; // DRA: slices nodes publish, claims made from templates, allocations the scheduler writes
mod cluster; // nodes, pods and the objects the companion reads; faults to inject
mod extended; // KEP-5004: claims the scheduler makes for extended resources devices serve
mod fargate; // pods a Fargate profile takes, each on a node of its own
mod names; // generated names and uids
mod scheduler; // binding and preemption, with the autoscaler's own predicates

pub use cluster::{Broken, Budget, SimulatedCluster};
