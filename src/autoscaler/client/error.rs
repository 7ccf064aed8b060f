//! Why a call to the provider failed, by what the caller does about it.

use std::path::PathBuf;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("provider address {0:?}: expected host:port")]
    Address(String),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("provider TLS: {0}")]
    Tls(tonic::transport::Error),
    #[error("{method}: {code:?}: {message}")]
    Rpc {
        method: &'static str,
        code: Code,
        message: String,
    },
    #[error("{method}: the provider sent a template that is not a v1.Node: {source}")]
    Template {
        method: &'static str,
        source: prost::DecodeError,
    },
    #[error("DescribeNodeGroups: node group {group:?}: {field}: {rule}", field = .invalid.field, rule = .invalid.rule)]
    Described {
        group: String,
        invalid: crate::model::Invalid,
    },
    #[error("{method}: the provider sent a ResourceSlice that cannot be read: {source}")]
    Slice {
        method: &'static str,
        source: crate::k8s::ObjectError,
    },
}

impl ClientError {
    pub(super) fn rpc(method: &'static str, status: Status) -> ClientError {
        ClientError::Rpc {
            method,
            code: status.code(),
            message: status.message().to_string(),
        }
    }

    /// The gRPC code, for errors that came from the provider.
    pub fn code(&self) -> Option<Code> {
        match self {
            ClientError::Rpc { code, .. } => Some(*code),
            _ => None,
        }
    }
}
