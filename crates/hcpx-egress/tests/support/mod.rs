//! Real parts for the proxy's tests and bench: a test CA made at start, a TLS server and a plain HTTP server on
//! loopback, TLS clients that trust only that CA, and the events a proxy reports, collected in order.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hcpx_egress::EgressEvent;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::client::Resumption;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::{TlsAcceptor, TlsConnector};

/// The names the test server's certificate covers.
pub const CERT_NAMES: [&str; 2] = ["api.test", "other.test"];

/// A test CA and a server certificate it signed; clients trust this CA alone, and never resume a session (each
/// request is a full handshake).
pub struct Pki {
    pub acceptor: TlsAcceptor,
    pub connector: TlsConnector,
    /// The same client with SNI turned off: its ClientHello names no server.
    pub no_sni: TlsConnector,
    /// The test CA's certificate, PEM (for a process that trusts it through `SSL_CERT_FILE`).
    pub ca_pem: String,
}

pub fn pki() -> Pki {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let names: Vec<String> = CERT_NAMES.iter().map(|n| n.to_string()).collect();
    let leaf = CertificateParams::new(names).unwrap().signed_by(&leaf_key, &issuer).unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), ca_cert.der().clone()], key)
        .unwrap();
    let mut roots = RootCertStore::empty();
    roots.add(CertificateDer::from(ca_cert.der().to_vec())).unwrap();
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.resumption = Resumption::disabled();
    let mut no_sni = client.clone();
    no_sni.enable_sni = false;
    Pki {
        acceptor: TlsAcceptor::from(Arc::new(server)),
        connector: TlsConnector::from(Arc::new(client)),
        no_sni: TlsConnector::from(Arc::new(no_sni)),
        ca_pem: ca_cert.pem(),
    }
}

/// Reads up to the end of an HTTP head (or EOF).
pub async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> String {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte).await {
            Ok(1) => buf.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

async fn respond<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, greeting: &'static str) {
    let head = read_head(&mut s).await;
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let body = match path.as_str() {
        "/echo" => head.into_bytes(),
        "/big" => vec![b'x'; 1 << 20],
        _ => greeting.as_bytes().to_vec(),
    };
    let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    let _ = s.write_all(reply.as_bytes()).await;
    let _ = s.write_all(&body).await;
    let _ = s.shutdown().await;
}

/// A TLS server on loopback answering every request with a small body (`/echo`: the request head, `/big`: 1 MiB).
pub async fn tls_server(acceptor: TlsAcceptor) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(tls) = acceptor.accept(tcp).await {
                    respond(tls, "hello over tls").await;
                }
            });
        }
    });
    addr
}

/// A plain HTTP server on loopback, answering as `tls_server` does.
pub async fn http_server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { continue };
            tokio::spawn(respond(tcp, "hello over http"));
        }
    });
    addr
}

/// Sends `CONNECT host:port` to the proxy; the stream and the proxy's answer head.
pub async fn connect_via(proxy: SocketAddr, target: &str) -> (TcpStream, String) {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.set_nodelay(true).unwrap();
    let req = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let head = read_head(&mut s).await;
    (s, head)
}

/// One HTTPS GET over `tcp` with `sni` as the TLS name; the whole response, or the TLS error.
pub async fn https_get(connector: &TlsConnector, tcp: TcpStream, sni: &str) -> std::io::Result<String> {
    let name = ServerName::try_from(sni.to_string()).unwrap();
    let mut tls = connector.connect(name, tcp).await?;
    let req = format!("GET / HTTP/1.1\r\nHost: {sni}\r\nConnection: close\r\n\r\n");
    tls.write_all(req.as_bytes()).await?;
    let mut out = Vec::new();
    tls.read_to_end(&mut out).await?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Sends `request` as is to the proxy and reads everything it answers.
pub async fn raw(proxy: SocketAddr, request: &str) -> Vec<u8> {
    let mut s = TcpStream::connect(proxy).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    out
}

/// The events a proxy reports, in order.
pub struct Events(mpsc::UnboundedReceiver<EgressEvent>);

pub fn events() -> (impl Fn(EgressEvent) + Send + Sync + 'static, Events) {
    let (tx, rx) = mpsc::unbounded_channel();
    (move |e| drop(tx.send(e)), Events(rx))
}

impl Events {
    /// The next event (within five seconds).
    pub async fn next(&mut self) -> EgressEvent {
        tokio::time::timeout(Duration::from_secs(5), self.0.recv()).await.expect("an event in 5s").unwrap()
    }

    /// An event already reported, if any.
    pub fn try_next(&mut self) -> Option<EgressEvent> {
        self.0.try_recv().ok()
    }

    /// The one event of one request: the next, and no other after it.
    pub async fn only(&mut self) -> EgressEvent {
        let e = self.next().await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(self.0.try_recv().is_err(), "exactly one event per request");
        e
    }
}
