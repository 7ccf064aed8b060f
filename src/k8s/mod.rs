//! Conversions at the edge between Kubernetes' wire formats and our own types.

pub mod objects;
pub mod pod;
pub mod quantity;
pub mod snapshot;
