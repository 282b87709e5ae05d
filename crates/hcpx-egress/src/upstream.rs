//! The origin side of a request hcpx makes or relays itself (issue #36 points 2 and 5): a TCP connection to the
//! addresses `resolve` pinned, and the TLS client configuration that verifies the real host. Both a composite's
//! outgoing HTTP and the proxy that terminates a wrap's TLS use these, so the two adapters trust the same roots.
//!
//! The roots are the system's, read once per process with `rustls-native-certs`, which honours `SSL_CERT_FILE`
//! and `SSL_CERT_DIR` of the hcpx process (an operator's private CA, the tests' CA). Never the child's or the
//! component's: nothing a pack ships decides what hcpx trusts.

use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::{ClientConfig, RootCertStore};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use crate::refusal::{Refusal, RefusalKind};

/// The system's trust anchors, loaded on first use. Certificates that do not parse are skipped (as every
/// client does with a system bundle); an empty store makes every TLS request fail closed with a message.
pub fn roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut store = RootCertStore::empty();
            let found = rustls_native_certs::load_native_certs();
            let _ = store.add_parsable_certificates(found.certs);
            Arc::new(store)
        })
        .clone()
}

/// A TLS client configuration over the system roots (ring, TLS 1.2 and 1.3), offering `alpn` (say
/// `[b"http/1.1"]`; empty offers none).
pub fn client_config(alpn: &[&[u8]]) -> Result<Arc<ClientConfig>, Refusal> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Refusal::new(RefusalKind::ConnectFailed, format!("tls client configuration: {e}")))?
        .with_root_certificates(roots())
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Connects to the first of the pinned addresses that answers within `each`, trying them in order. `host` and
/// `port` only name the origin in the refusal.
pub async fn connect(
    addrs: &[SocketAddr],
    host: &str,
    port: u16,
    each: Duration,
) -> Result<TcpStream, Refusal> {
    let mut last = String::from("no address");
    for addr in addrs {
        match tokio::time::timeout(each, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => {
                let _ = stream.set_nodelay(true);
                return Ok(stream);
            }
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: no answer in {}s", each.as_secs_f64()),
        }
    }
    let reason = format!("{host}:{port} did not accept a connection ({last}); check that it is up");
    Err(Refusal::new(RefusalKind::ConnectFailed, reason))
}

/// Why TLS to an origin failed: before the handshake (a refusal as it stands), or in it.
#[derive(Debug)]
pub enum TlsFailure {
    /// No client configuration, or a host that is no TLS server name; nothing was sent.
    Refused(Refusal),
    /// The handshake failed; `certificate` when it was the origin's certificate that did not verify.
    Handshake { error: std::io::Error, certificate: bool },
}

/// TLS to `host` over `tcp` (connected to the pinned addresses), offering HTTP/1.1 only, the origin verified
/// against the system roots for `host`. The caller bounds it in time and words the failure for its side.
pub async fn tls(tcp: TcpStream, host: &str) -> Result<TlsStream<TcpStream>, TlsFailure> {
    let config = client_config(&[b"http/1.1"]).map_err(TlsFailure::Refused)?;
    let name = rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| {
        TlsFailure::Refused(Refusal::new(
            RefusalKind::BadRequest,
            format!("host {host} is not a tls server name ({e})"),
        ))
    })?;
    tokio_rustls::TlsConnector::from(config).connect(name, tcp).await.map_err(|error| {
        let certificate = error
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<rustls::Error>())
            .is_some_and(|t| matches!(t, rustls::Error::InvalidCertificate(_)));
        TlsFailure::Handshake { error, certificate }
    })
}
