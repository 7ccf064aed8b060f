//! Process-wide TLS setup shared by both binaries.

/// rustls 0.23 panics at the first TLS configuration when more than one crypto backend is compiled in
/// and none was chosen; the AWS SDK brings aws-lc-rs, so we choose it, once, at start-up.
pub fn install_crypto_provider() {
    // An error means a provider is already installed, which is all we need.
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}
