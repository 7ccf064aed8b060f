//! Consolidation (`--consolidation replace`): nodes replaced by one cheaper node. The search finds the
//! replacements over the world scale-down leaves; the consolidator launches their new nodes and hands the old
//! ones to scale-down's deletions once the new node is Ready; the replacements in progress keep their timers.

pub(crate) mod consolidator; // this loop's replacements: planned, launched, handed over
pub(crate) mod replacement; // replacements in progress: launch, wait for Ready, drain the old nodes, or abandon
pub(crate) mod search; // candidates, one new node for their pods, savings

pub use search::{
    Ask, ConsolidationPlan as Plan, NotConsolidatedBecause as Reason, ReplacementTarget as Target,
    plan,
};
