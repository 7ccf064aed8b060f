//! The companion's metrics, `ekscale_*`, mirroring cluster-autoscaler's names and labels where the meaning is
//! the same: the families registered and set from each loop, and the label sets they are keyed by.

mod capacity; // capacity paid for ahead: each reservation's instances used and available
mod families; // the registry of every family, grouped, and what one loop (or a failed one) sets them to
mod labels; // the label sets the families are keyed by
mod leaving; // leaving nodes: by reason, how their pods were planned for, how long until none was pending
mod sizes;
mod skipped; // graceful degradation: the pending pods a loop left untried past its batching timeout // the node groups' target, min and max sizes, and the sizes a scheduled window holds them to

pub use families::AutoscalerMetrics;
