//! Consolidation (`--consolidation replace`): nodes replaced by one cheaper node. The planner finds the
//! replacements over the world scale-down leaves; the consolidator launches their new nodes and hands the old
//! ones to scale-down's deletions once the new node is Ready; the replacements in progress keep their timers.

pub mod consolidator; // this loop's replacements: planned, launched, handed over
pub mod planner; // candidates, one new node for their pods, savings
pub mod replacement; // replacements in progress: launch, wait for Ready, drain the old nodes, or abandon
