//! Every budget scale-down and disruption take from, in one place: the parallelism caps of the deletions a
//! loop may start (cluster-autoscaler's scale-down budgets) and each group's disruption budgets this loop
//! (Karpenter's, from `--disruption-config`), shared by every stage and every reason.

pub(crate) mod groups; // each group's disruption budgets this loop, shared by every stage
pub(crate) mod parallelism; // the deletions a loop may start: parallelism, drains, empty nodes, zero-or-max groups whole
