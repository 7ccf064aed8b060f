//! Capacity kept free ahead of demand, as virtual pending pods of the lowest priority: headroom policies
//! (`--headroom-config`) and CapacityBuffers. The loop adds their pods before scale-up and reads back where
//! they went.

pub(crate) mod buffers; // the CapacityBuffer controller: each buffer's spec into a chunk and a count, and its conditions
pub(crate) mod outcome; // this loop's virtual pods, and where they ended up: placed, in a scale-up, unmet
pub(crate) mod policy; // headroom policies: what each reserves, sized on the cluster as it is

pub use buffers::ReadyReplicas;
pub use policy::{Policy, PolicyError, PolicyFile, is_virtual, parse};
