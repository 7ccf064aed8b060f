//! kube-scheduler's rules written out plainly, from Kubernetes' rules and nothing of `simulator/`: its
//! filters, and the stable DRA allocator as a search over every assignment. Slow on purpose, sharing no index,
//! count or shortcut with what they check; only the model's types are common. The tests that hold the
//! estimator, the scale-down planner and the allocator to exhaustive searches ask them, and so does the
//! simulated cluster's scheduler, so that the end-to-end simulations bind pods by rules the companion's
//! predicates do not share.

mod dra; // the stable allocator (firstAvailable, All, admin access, taints, counters, matchAttribute) by brute force
mod filters; // NodeUnschedulable, NodeAffinity, TaintToleration, NodeResourcesFit, NodePorts, InterPodAffinity, PodTopologySpread

pub(crate) use dra::{Ask, MAX_TRIES, Reached, Verdict, allocate, reach};
pub(crate) use filters::{Cluster, admits, node_affinity};
