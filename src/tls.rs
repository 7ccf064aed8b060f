//! Process-wide TLS setup shared by both binaries.

/// rustls 0.23 panics at the first TLS configuration when more than one crypto backend is compiled in
/// and none was chosen; with the `aws` feature the AWS SDK brings aws-lc-rs beside our ring, so we choose
/// ring, once, at start-up.
pub fn install_crypto_provider() {
    // An error means a provider is already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
