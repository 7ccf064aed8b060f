//! Why the demo stopped.

use crate::autoscaler::ClientError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("starting the provider: {0}")]
    Provider(String),
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the loop failed: {0}")]
    Loop(String),
    #[error("the simulated EKS: {0}")]
    Cloud(String),
    #[error("writing the report {path}: {source}")]
    Report {
        path: PathBuf,
        source: std::io::Error,
    },
}
