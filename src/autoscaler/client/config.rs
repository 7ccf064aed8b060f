//! Where the provider is and how to reach it: its address, and TLS with an optional client certificate.

use std::path::PathBuf;
use std::time::Duration;

/// How to reach the provider: cluster-autoscaler's cloud-config, as flags.
#[derive(Clone, Debug)]
pub struct ProviderConfig {
    /// `host:port`, never a URL.
    pub address: String,
    /// Client certificate and key, offered to a provider that asks (mutual TLS).
    pub identity: Option<(PathBuf, PathBuf)>,
    /// CA that signed the provider's certificate; TLS is on when this or an identity is given.
    pub ca: Option<PathBuf>,
    /// Deadline of every call (cluster-autoscaler's `grpc_timeout`, 5 s by default).
    pub timeout: Duration,
}

impl ProviderConfig {
    pub fn plaintext(address: impl Into<String>) -> ProviderConfig {
        ProviderConfig {
            address: address.into(),
            identity: None,
            ca: None,
            timeout: Duration::from_secs(5),
        }
    }
}
