//! One loop, as cluster-autoscaler's core runs it: what the provider says of the groups this loop (cluster
//! state), whether the cluster is healthy enough to act, the pods sorted by what the loop does with them, the
//! snapshot the stages plan in, and RunOnce, which runs the stages in order and assembles the report.

pub mod classify; // pods by what the loop does with them; batching of new pods
pub mod cluster_snapshot; // the world the loop plans in: nodes, templates, upcoming nodes; pods that already fit
pub mod cluster_state; // node groups, instances, what is coming, backoff: what the provider says this loop
pub mod health; // cluster and node group health: unready nodes stop the loop or a group's scale-up
pub mod increase; // more nodes asked of the provider, plainly or all or nothing; a refusal backs the group off
pub mod runonce; // one iteration: the stages in order, each returning its decisions and its part of the report
