//! The wire: code generated from `proto/` (the externalgrpc protocol, every generation's fields, and the
//! `ekscale.v1` extension services), and the options both sides read and write in every generation's fields.

mod capacity; // capacity reservations, both sides of ekscale.v1
mod generated; // tonic-prost-build's output, by package
mod leaving; // leaving instances and node repair configs, both sides of ekscale.v1
mod options; // NodeGroupAutoscalingOptions as plain values, both generations' fields

pub use generated::{FILE_DESCRIPTOR_SET, ekscale, externalgrpc};
pub use options::k8s_duration;
