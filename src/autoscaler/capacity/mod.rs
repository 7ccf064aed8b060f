//! Capacity paid for ahead (issue 61): EC2 Capacity Blocks for ML and On-Demand Capacity Reservations, as the
//! provider says them per group (`model::Reservation`). It touches three stages, so it has a folder: a
//! Capacity Block group is scaled up only inside its window and only into its available instances, the
//! prepaid room priced 0/h for the expander (`blocks.rs`, before scale-up); its nodes become leaving nodes
//! `drainLead` before EKS scales the group in (`blocks.rs`, read by `autoscaler/leaving/`); and nodes on
//! reserved capacity are no scale-down candidates while paid for (`reserved.rs`, read by scale-down).

pub(crate) mod blocks; // a group's Capacity Blocks at an instant: open, not yet, ending, closed; the scale-up gate
pub(crate) mod reserved; // nodes on reserved capacity: kept from scale-down while their reservation is paid for
#[cfg(test)]
mod tests;

pub use blocks::{BlockEnding, endings, gate};
pub use reserved::reserved_nodes;
