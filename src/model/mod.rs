//! The internal model: compact integer types the decisions are made on, converted once at the edge.

pub mod node;
pub mod pdb;
pub mod pod;
pub mod resources;
pub mod selector;
pub mod taint;

pub use node::Node;
pub use pod::Pod;
pub use resources::Resources;
pub use selector::Labels;
pub use taint::{Taint, TaintEffect, Toleration};

/// The resource name of NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
