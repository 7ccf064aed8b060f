//! Conversions at the edge between Kubernetes' wire formats and our own types.

pub mod pod;
pub mod quantity;
