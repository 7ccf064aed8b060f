//! EKS managed node groups on AWS: read through EKS, acted on through their Auto Scaling groups.

mod atomic; // all-or-nothing increases, kept until whole or set back
mod backend; // the handle the provider serves from
mod calls; // the SDK clients, each call counted and timed
mod config; // the backend's configuration file
mod discovery; // refresh: EKS node groups and their Auto Scaling groups read into the view
mod instance_types; // instance types from EC2, remembered
mod interruption; // the interruption queue: Spot warnings, rebalances, scheduled and state changes
mod launch_templates; // the AMI of each group's launch template version, from EC2, remembered
mod state; // what the backend keeps, and the calls that change an Auto Scaling group
mod view; // the node groups as last read

pub use backend::AwsBackend;
pub use calls::Calls;
pub use config::{AwsConfig, AwsConfigError};
