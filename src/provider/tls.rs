//! TLS on the provider's port, from certificate files that are read again when they change.
//!
//! cert-manager renews certificates in place (a Secret volume swaps its files), so the provider must pick
//! up the new ones without a restart: every connection is accepted with the configuration of the moment,
//! and a watcher re-reads the files every `reload_interval`. New files that do not make a configuration
//! (a half-written key, a certificate that does not match it) are refused with a warning and the old
//! configuration stays.

use super::metrics::ProviderMetrics;
use futures::Stream;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Why the TLS files could not be taken: read, or parsed into a server configuration.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {reason}")]
    Tls { path: PathBuf, reason: String },
}

/// How long a client has to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the server's TLS material is.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// With a client CA, clients must present a certificate it signed.
    pub client_ca: Option<PathBuf>,
    /// How often the files are checked for changes.
    pub reload_interval: Duration,
}

impl TlsFiles {
    /// The files' bytes, in a fixed order: what a change is detected on.
    fn read(&self) -> Result<Vec<Vec<u8>>, TlsError> {
        let read = |path: &PathBuf| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.clone(),
                source,
            })
        };
        let mut contents = vec![read(&self.cert)?, read(&self.key)?];
        if let Some(ca) = &self.client_ca {
            contents.push(read(ca)?);
        }
        Ok(contents)
    }

    /// A server configuration from the files' `contents` (as [`TlsFiles::read`] returns them).
    fn config(&self, contents: &[Vec<u8>]) -> Result<ServerConfig, TlsError> {
        let bad = |path: &PathBuf, reason: String| TlsError::Tls {
            path: path.clone(),
            reason,
        };
        let certs = CertificateDer::pem_slice_iter(&contents[0])
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(&self.cert, e.to_string()))?;
        if certs.is_empty() {
            return Err(bad(&self.cert, "no certificate in it".into()));
        }
        let key = PrivateKeyDer::from_pem_slice(&contents[1])
            .map_err(|e| bad(&self.key, e.to_string()))?;
        let builder = ServerConfig::builder();
        let builder = match (&self.client_ca, contents.get(2)) {
            (Some(path), Some(pem)) => {
                let mut roots = RootCertStore::empty();
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| bad(path, e.to_string()))?;
                    roots.add(cert).map_err(|e| bad(path, e.to_string()))?;
                }
                // No allow_unauthenticated: a client without a certificate from this CA is refused.
                let verifier = WebPkiClientVerifier::builder(Arc::new(roots))
                    .build()
                    .map_err(|e| bad(path, e.to_string()))?;
                builder.with_client_cert_verifier(verifier)
            }
            _ => builder.with_no_client_auth(),
        };
        let mut config = builder
            .with_single_cert(certs, key)
            .map_err(|e| bad(&self.key, e.to_string()))?;
        // gRPC is HTTP/2 only; clients such as grpc-go insist on ALPN saying so.
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }
}

/// The configuration new connections are accepted with, and what it was made from.
pub struct Reloading {
    files: TlsFiles,
    current: RwLock<(Vec<Vec<u8>>, Arc<ServerConfig>)>,
    /// The files last refused: refused once, not again at every interval while a rotation is half done.
    refused: std::sync::Mutex<Option<Vec<Vec<u8>>>>,
}

impl Reloading {
    /// Reads the files once; an error here stops the server from starting.
    pub fn load(files: TlsFiles) -> Result<Reloading, TlsError> {
        let contents = files.read()?;
        let config = Arc::new(files.config(&contents)?);
        Ok(Reloading {
            files,
            current: RwLock::new((contents, config)),
            refused: std::sync::Mutex::new(None),
        })
    }

    fn acceptor(&self) -> TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        TlsAcceptor::from(current.1.clone())
    }

    /// Reads the files again and, when they changed and make a configuration, takes it. Returns whether it
    /// did; an error for files that changed into something unusable, once for the same contents.
    pub fn reload(&self) -> Result<bool, TlsError> {
        let contents = self.files.read()?;
        if self.current.read().unwrap_or_else(|p| p.into_inner()).0 == contents {
            return Ok(false);
        }
        let mut refused = self.refused.lock().unwrap_or_else(|p| p.into_inner());
        if refused.as_ref() == Some(&contents) {
            return Ok(false);
        }
        match self.files.config(&contents) {
            Ok(config) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) =
                    (contents, Arc::new(config));
                *refused = None;
                Ok(true)
            }
            Err(error) => {
                *refused = Some(contents);
                Err(error)
            }
        }
    }

    /// Checks the files every `reload_interval`, for as long as the server runs; counts each change it
    /// reads in `metrics`.
    async fn watch(self: Arc<Self>, metrics: Arc<ProviderMetrics>) {
        let mut every = tokio::time::interval(self.files.reload_interval);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        every.tick().await;
        loop {
            every.tick().await;
            match self.reload() {
                Ok(true) => {
                    metrics.observe_tls_reload("reloaded");
                    tracing::info!(cert = %self.files.cert.display(), "TLS certificates reloaded")
                }
                Ok(false) => {}
                Err(error) => {
                    metrics.observe_tls_reload("refused");
                    tracing::warn!(%error, "new TLS files refused; serving with the previous ones")
                }
            }
        }
    }

    /// TLS connections from `listener`, each handshaken in a task of its own (a slow client does not hold
    /// up the others), with the files watched meanwhile. Both tasks end when the stream is dropped.
    pub fn incoming(
        self: Arc<Self>,
        listener: TcpListener,
        metrics: Arc<ProviderMetrics>,
    ) -> impl Stream<Item = Result<TlsStream<TcpStream>, std::io::Error>> {
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let watcher = tokio::spawn(self.clone().watch(metrics));
        let acceptor = tokio::spawn(async move {
            loop {
                let (tcp, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors and the like: wait, as hyper's accept loop does.
                        tracing::warn!(%error, "accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let _ = tcp.set_nodelay(true);
                let tls = self.acceptor();
                let tx = tx.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(tcp)).await {
                        Ok(Ok(stream)) => {
                            let _ = tx.send(Ok(stream)).await;
                        }
                        Ok(Err(error)) => {
                            tracing::debug!(%peer, %error, "TLS handshake refused")
                        }
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        let stop = StopOnDrop([watcher, acceptor]);
        futures::stream::unfold((rx, stop), |(mut rx, stop)| async move {
            rx.recv().await.map(|item| (item, (rx, stop)))
        })
    }
}

/// Aborts the accept loop and the watcher when the server lets go of its incoming stream.
struct StopOnDrop([tokio::task::JoinHandle<()>; 2]);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
