//! The internal model: compact integer types the decisions are made on, converted once at the edge.

pub mod resources;

pub use resources::Resources;
