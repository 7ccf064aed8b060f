//! Disruption as one stage, in Karpenter's words: each reason a node is disrupted for is a [`Method`]
//! (`method.rs`), and the stage (`stage.rs`) finds the nodes each method disrupts now and decides each within
//! its group's disruption budgets (`budgets/`): removed when its pods fit elsewhere, replaced surge-first when
//! they do not (or always, for a rebalance or a repair), or held. A new reason is a file here and one line in
//! the stage's list of methods.

pub(crate) mod drift; // a node whose image is not the one its group's new nodes get
pub(crate) mod expiration; // a node older than its group's expireAfter
pub(crate) mod method; // what a reason for disruption says: which nodes, and why each goes
pub(crate) mod rebalance; // a Spot node EC2 recommends rebalancing, its group not rebalancing itself
pub(crate) mod scheduled; // a node over its group's scheduled max: removed, its pods moved where they fit
pub(crate) mod stage; // the stage: candidates of every method, each removed, replaced or held within the budgets
pub(crate) mod unhealthy; // ekscale's node repair: a node whose problem lasted its wait, its group's repair off
