//! Why a Kubernetes object could not be read into the model; what every reader of objects returns.

use crate::k8s::pod::PodError;

/// Why an object could not be read; it names the object.
#[derive(Debug, thiserror::Error)]
pub enum ObjectError {
    #[error(transparent)]
    Pod(#[from] PodError),
    #[error("{object}: {reason}")]
    Invalid { object: String, reason: String },
}

pub(super) fn invalid(object: &str, reason: impl Into<String>) -> ObjectError {
    ObjectError::Invalid {
        object: object.to_string(),
        reason: reason.into(),
    }
}
