//! Capacity paid for ahead in the simulated EKS: the scenario's reservations (Capacity Blocks, ODCRs) read and
//! checked, and lived on the simulated clock (instances filling them, a block's window and its end).

mod keys; // the scenario's reservations, read and checked against the group's capacity type
mod live; // their counts, a Capacity Block's window, EKS's scale-in and EC2's termination at its end

pub use keys::{ReservationFile, read_reservations};
pub use live::GroupReservations;
