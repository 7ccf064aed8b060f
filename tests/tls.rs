//! §5 case 36: TLS and mutual TLS with certificates made here (rcgen), as cluster-autoscaler connects:
//! server name checked against the certificate, client certificate always offered, ALPN h2.

mod common;

use common::{SCENARIO, Server};
use ekscale::proto::externalgrpc::NodeGroupsRequest;
use ekscale::proto::externalgrpc::cloud_provider_client::CloudProviderClient;
use ekscale::provider::TlsFiles;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    SanType,
};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

struct Pki {
    ca: CertifiedIssuer<'static, KeyPair>,
}

struct Pem {
    cert: String,
    key: String,
}

impl Pki {
    fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        Pki {
            ca: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    fn leaf(&self, names: &[&str], usage: ExtendedKeyUsagePurpose) -> Pem {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca).unwrap();
        Pem {
            cert: cert.pem(),
            key: key.serialize_pem(),
        }
    }

    fn ca_pem(&self) -> String {
        self.ca.pem()
    }
}

/// Replaces the file whole (written aside, then renamed), as a Secret volume is updated: the reloader never
/// reads half a file.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let aside = dir.join(format!(".{name}.new"));
    std::fs::write(&aside, text).unwrap();
    std::fs::rename(&aside, &path).unwrap();
    path
}

/// A provider serving mTLS with a server certificate for "localhost" and 127.0.0.1.
async fn mtls_server(dir: &Path, pki: &Pki) -> Server {
    let server = pki.leaf(&["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let tls = TlsFiles {
        cert: write(dir, "server.crt", &server.cert),
        key: write(dir, "server.key", &server.key),
        client_ca: Some(write(dir, "ca.crt", &pki.ca_pem())),
        reload_interval: Duration::from_millis(100),
    };
    Server::start_with(SCENARIO, Some(tls)).await
}

async fn node_groups(server: &Server, tls: ClientTlsConfig) -> Result<usize, String> {
    let endpoint = Endpoint::from_shared(format!("https://{}", server.addr))
        .unwrap()
        .timeout(Duration::from_secs(5))
        .tls_config(tls)
        .map_err(|e| e.to_string())?;
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| format!("connect: {e:?}"))?;
    let response = CloudProviderClient::new(channel)
        .node_groups(NodeGroupsRequest {})
        .await;
    response
        .map(|r| r.into_inner().node_groups.len())
        .map_err(|e| format!("rpc: {e:?}"))
}

fn client_tls(ca: &str, identity: Option<&Pem>) -> ClientTlsConfig {
    let config = ClientTlsConfig::new()
        .ca_certificate(Certificate::from_pem(ca))
        .domain_name("localhost");
    match identity {
        Some(pem) => config.identity(Identity::from_pem(&pem.cert, &pem.key)),
        None => config,
    }
}

#[tokio::test]
async fn a_client_certificate_from_the_ca_is_served() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let client = pki.leaf(&["cluster-autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    assert_eq!(
        node_groups(&server, client_tls(&pki.ca_pem(), Some(&client))).await,
        Ok(5)
    );
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    assert!(
        node_groups(&server, client_tls(&pki.ca_pem(), None))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_client_certificate_from_another_ca_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let stranger =
        Pki::new("some other CA").leaf(&["intruder"], ExtendedKeyUsagePurpose::ClientAuth);
    assert!(
        node_groups(&server, client_tls(&pki.ca_pem(), Some(&stranger)))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_server_name_the_certificate_does_not_carry_is_refused_by_the_client() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let client = pki.leaf(&["cluster-autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    let wrong_name = client_tls(&pki.ca_pem(), Some(&client)).domain_name("provider.example.com");
    assert!(node_groups(&server, wrong_name).await.is_err());
}

#[tokio::test]
async fn tls_without_client_ca_serves_any_client() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let cert = pki.leaf(&["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    let tls = TlsFiles {
        cert: write(dir.path(), "server.crt", &cert.cert),
        key: write(dir.path(), "server.key", &cert.key),
        client_ca: None,
        reload_interval: Duration::from_secs(10),
    };
    let server = Server::start_with(SCENARIO, Some(tls)).await;
    assert_eq!(
        node_groups(&server, client_tls(&pki.ca_pem(), None)).await,
        Ok(5)
    );
}

/// grpc-go (cluster-autoscaler 1.33+) refuses a TLS server that does not negotiate ALPN "h2".
#[tokio::test]
async fn the_server_negotiates_alpn_h2() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let client = pki.leaf(&["cluster-autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    let addr = server.addr;
    let ca = pki.ca_pem();
    let alpn = tokio::task::spawn_blocking(move || {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
        use std::io::{Read, Write};
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca.as_bytes()).unwrap())
            .unwrap();
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(client.cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(client.key.as_bytes()).unwrap(),
            )
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let name = ServerName::try_from("localhost").unwrap();
        let mut conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
        let mut sock = std::net::TcpStream::connect(addr).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut stream = rustls::Stream::new(&mut conn, &mut sock);
        // The HTTP/2 preface completes the handshake; the server's SETTINGS frame comes back.
        stream
            .write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            .unwrap();
        let mut frame_header = [0u8; 9];
        stream.read_exact(&mut frame_header).unwrap();
        assert_eq!(frame_header[3], 0x4, "a SETTINGS frame");
        conn.alpn_protocol().map(|p| p.to_vec())
    })
    .await
    .unwrap();
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]));
}

/// The companion's client, with `--provider-tls-cert/-key/-ca`, against the same mTLS provider.
#[tokio::test]
async fn the_companions_client_speaks_mtls() {
    use ekscale::autoscaler::{ProviderClient, ProviderConfig};
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let client_cert = pki.leaf(&["ekscale-autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    let identity = (
        write(dir.path(), "client.crt", &client_cert.cert),
        write(dir.path(), "client.key", &client_cert.key),
    );
    let ca = write(dir.path(), "client-ca.crt", &pki.ca_pem());
    // The address's host is the name checked against the provider's certificate, as grpc-go does.
    let address = format!("localhost:{}", server.addr.port());
    let config = ProviderConfig {
        identity: Some(identity),
        ca: Some(ca.clone()),
        ..ProviderConfig::plaintext(address.clone())
    };
    let client = ProviderClient::new(&config).unwrap();
    assert_eq!(client.node_groups().await.unwrap().len(), 5);

    let without_identity = ProviderConfig {
        ca: Some(ca),
        ..ProviderConfig::plaintext(address)
    };
    assert!(
        ProviderClient::new(&without_identity)
            .unwrap()
            .node_groups()
            .await
            .is_err()
    );
}

/// Waits until `connects` says yes, for at most 5 s of reload intervals.
async fn eventually(server: &Server, tls: impl Fn() -> ClientTlsConfig) -> bool {
    for _ in 0..50 {
        if node_groups(server, tls()).await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn renewed_certificates_and_a_new_ca_are_taken_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let old = Pki::new("ekscale old CA");
    let server = mtls_server(dir.path(), &old).await;
    let old_client = old.leaf(&["autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    let old_tls = || client_tls(&old.ca_pem(), Some(&old_client));
    assert_eq!(node_groups(&server, old_tls()).await, Ok(5));

    // cert-manager rotates everything: a new CA, a server certificate from it, clients from it.
    let new = Pki::new("ekscale new CA");
    let renewed = new.leaf(&["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    write(dir.path(), "server.key", &renewed.key);
    write(dir.path(), "server.crt", &renewed.cert);
    write(dir.path(), "ca.crt", &new.ca_pem());
    let new_client = new.leaf(&["autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    assert!(
        eventually(&server, || client_tls(&new.ca_pem(), Some(&new_client))).await,
        "the new certificates were never served"
    );
    // The old client certificate is no longer from the CA the server trusts.
    let refused = node_groups(&server, client_tls(&new.ca_pem(), Some(&old_client))).await;
    assert!(refused.is_err(), "{refused:?}");
    // Nor does a client trusting only the old CA accept the new server certificate.
    assert!(node_groups(&server, old_tls()).await.is_err());
}

#[tokio::test]
async fn files_that_do_not_make_a_configuration_are_refused_and_the_old_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::new("ekscale test CA");
    let server = mtls_server(dir.path(), &pki).await;
    let client = pki.leaf(&["autoscaler"], ExtendedKeyUsagePurpose::ClientAuth);
    let tls = || client_tls(&pki.ca_pem(), Some(&client));
    assert_eq!(node_groups(&server, tls()).await, Ok(5));

    // Half a rotation: a key that does not go with the certificate, then no key at all. Each is read
    // (the reloader counts it refused) and the old files keep being served.
    let other = pki.leaf(&["localhost"], ExtendedKeyUsagePurpose::ServerAuth);
    write(dir.path(), "server.key", &other.key);
    assert!(
        reloads(&server, "refused", 1).await,
        "the mismatched key was never read"
    );
    assert_eq!(node_groups(&server, tls()).await, Ok(5));
    write(dir.path(), "server.key", "not a key");
    assert!(
        reloads(&server, "refused", 2).await,
        "the broken key was never read"
    );
    assert_eq!(node_groups(&server, tls()).await, Ok(5));
    assert!(reloads(&server, "reloaded", 0).await, "nothing was taken");

    // The rotation completes: served.
    write(dir.path(), "server.crt", &other.cert);
    write(dir.path(), "server.key", &other.key);
    assert!(eventually(&server, tls).await);
    assert!(reloads(&server, "reloaded", 1).await);
}

/// Waits (at most 5 s of reload intervals) until the reloader has counted `want` changed files with
/// `outcome`; false if it counted another number by then.
async fn reloads(server: &Server, outcome: &str, want: u64) -> bool {
    let line = format!("ekscale_provider_tls_reloads_total{{outcome=\"{outcome}\"}} ");
    let mut seen = 0;
    for _ in 0..50 {
        seen = server
            .metrics
            .encode(server.sim())
            .lines()
            .find_map(|l| l.strip_prefix(&line).map(|n| n.parse::<u64>().unwrap()))
            .unwrap_or(0);
        if seen == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!("{outcome}: {seen} reloads counted, {want} awaited");
    false
}
