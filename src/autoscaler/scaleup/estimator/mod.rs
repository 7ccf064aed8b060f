//! The estimator: how many nodes of one node group the pending equivalence groups need.
//!
//! cluster-autoscaler's binpacking estimator orders equivalence groups by `cpu/allocatable +
//! memory/allocatable`, decreasing; each pod first tries the nodes this estimation added, in a rotating
//! search that starts after the node the last pod went to, and then only the node added last before a new
//! one is added. We run that search exactly ([`Ordering::Upstream`]), first-fit decreasing in four
//! orderings, and, when every pod's fit depends on its requests alone, best-fit decreasing and two searches
//! that fill one node at a time with the pods that suit its room ([`Ordering::NodeDotProduct`],
//! [`Ordering::NodeL2Norm`]); we keep whichever places the most pods on the fewest nodes: never more
//! nodes than upstream's search. Upstream's own estimator sees the nodes in a random order, so it varies run
//! to run; the node-by-node searches are what keep ours below its lucky runs on mixed shapes. An estimate
//! that places every pod on as few nodes as the pods' total requests allow cannot be beaten, and ends the
//! search. All are fast because pods of an equivalence group are identical: for pods whose constraints do
//! not depend on other pods, how many fit on a node is computed in closed form instead of pod by pod, and
//! the first node with room (or the one with the least room, for best fit) is found in a tree
//! ([`FreeTree`]), not by a scan.
//!
//! Pods that each need a node of their own (required anti-affinity by hostname on their own kind, a highly
//! available Deployment's replicas) are packed first once more, as slots the other pods fill: taken by size,
//! bigger pods fill nodes first and leave them no room (`estimate`'s `slots_first`).
//!
//! No search moves a pod it placed. When pods with required pod affinity are left out, the best plan is
//! repaired first (`repair`): their partners placed differently (moved to a node of the pod's zones, or
//! packed after it), kept when more pods are placed. On plans of a few pods, pods the repair still leaves
//! out are searched for exhaustively (`exact`): every pod onto every node or a new one, branch and bound.
//! The best packing is then improved ([`improve`]): the least-full planned nodes are drained into the
//! others' free room, pods exchanged for smaller ones where that makes room, within the binpacking time
//! budget and a bound on its work. It runs on plans whose pods all fit by their requests alone and may go on
//! any of the group's zones; the improved plan is taken again through the searches' predicates, and kept
//! only when every step holds.
//!
//! A group that spans several zones gets its new nodes where its Auto Scaling group would launch them:
//! in the zone with the fewest of the group's nodes first ([`Templates`]).

mod affinity; // pods their pod affinity refused, offered the plan again
mod by_requests; // best fit and node by node, for pods that depend on their requests alone
mod drain; // the improvement's local search: nodes drained into the others' room, pods exchanged
mod estimate; // the searches run in turn, the best kept
mod exact; // after the repair, on small plans: every placement searched for pods their affinity left out
mod first_fit; // upstream's search and first fit, demands in an order
mod improve; // after the searches: the best packing improved, pods that may move moved, nodes taken off
mod packing; // one estimation in progress: the nodes added, their indexes, the steps
mod plan; // what an estimation takes and gives
mod repair; // after the searches: pods their pod affinity left out, placed by moving a partner
mod replan; // a changed plan made whole: its steps taken again, the pods left out packed after them
mod replay; // a plan's steps taken again through the predicates: the check of an improved plan

#[cfg(test)]
mod tests;

pub use estimate::{estimate, pack, search};
pub use improve::improve;
pub use plan::{Demand, Estimate, EstimateLimits, ORDERINGS, Ordering, PlanStep, Stop, Templates};
