//! First fit over the cluster's places in log time, for placing pending pods where nodes are
//! (upstream's FilterOutSchedulable): equivalence groups of pods that only take room, and groups whose
//! replicas keep apart by hostname, placed without offering every node to every group.

pub(crate) mod first_fit; // what is free on each place, and the groups placed by it

#[cfg(test)]
mod tests; // the same places as the plain predicate path, on generated small clusters

pub use first_fit::Rooms;
