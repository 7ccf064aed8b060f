//! The companion autoscaler. It reaches the cloud only through an externalgrpc provider, over gRPC.

pub mod actuation; // carries out a scale-down: taint, evict, delete, one step per loop
pub mod backoff; // node group backoff after failed scale-ups
pub mod balance; // similar node groups, and a scale-up spread over them
pub mod binpack; // the estimator: first-fit decreasing, several orderings, the tightest kept
pub mod buffers; // the CapacityBuffer controller: each buffer's spec into a chunk and a count, and its conditions
pub mod classify; // pods by what the loop does with them; batching of new pods
pub mod client; // the provider client, with cluster-autoscaler's caching rules
pub mod cluster; // where the cluster is read from: the ClusterSource trait, snapshots
pub mod cluster_snapshot; // the world the loop plans in: nodes, templates, upcoming nodes; pods that already fit
pub mod cluster_state; // node groups, instances, what is coming, backoff: what the provider says this loop
pub mod consolidation; // replacing nodes with cheaper ones: candidates, one new node for their pods, savings
pub mod controller; // the commands: `simulate` once, `run` as the controller (loop, endpoints, Lease, events)
pub mod drain; // what each pod on a node means for removing it (upstream's drainability rules)
pub mod events; // Events and the status ConfigMap, as cluster-autoscaler writes them
pub mod expander; // least-waste, most-pods, least-nodes, price, priority, random
pub mod fargate; // Fargate pods set aside, matched to profiles here, MatchPod once per pod shape
pub mod flags; // the companion's flags, as cluster-autoscaler names them, into the loop's settings
pub mod headroom; // capacity kept free ahead of demand, as virtual pending pods
pub mod health; // cluster and node group health: unready nodes stop the loop or a group's scale-up
pub mod http; // /metrics, /health-check, /snapshotz
pub mod kube; // the live cluster: reflector caches, an unschedulable-pod trigger, taints and evictions
pub mod kube_buffers; // CapacityBuffers, PodTemplates and scalable objects watched; buffer status written
pub mod last_loop; // what /health-check and /snapshotz serve: liveness and the last decisions
pub mod leader; // leader election on a Lease: one replica acts, and stops at once when it loses
pub mod metrics; // ekscale_* metrics, named after cluster-autoscaler's
pub mod pricing; // node and pod prices for the price expander, pod prices kept by demand
pub mod removal; // scale-down's removal simulation: pods moved off a node, undone when one fits nowhere
pub mod replacement; // replacements in progress: launch, wait for Ready, drain the old nodes, or abandon
pub mod runonce; // one loop: read, count what is coming, place, plan, act, record
pub mod scaledown; // finds unneeded nodes: utilization, drainability, removal simulation
pub mod scaledown_policy; // around the planner: unneeded timers, cooldowns, budgets, soft taints, deletions
pub mod scaleup; // plans expansions for all pending pods, limits, balancing
pub mod status; // what a loop decided and why: JSON and a table
pub mod zones; // multi-zone node groups: a template per zone, where the next node launches
