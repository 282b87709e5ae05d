//! A certificate authority made at test time, and TLS server configurations of its leaves: the one source of the
//! egress tests' HTTPS servers (no key or certificate is committed).

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA made at test time: its PEM and an issuer for leaves.
pub(crate) struct TestCa {
    pub(crate) pem: String,
    der: Vec<u8>,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A new CA named `name` (its own name: OpenSSL takes a leaf whose subject is its issuer's for self-signed).
pub(crate) fn test_ca(name: &str) -> TestCa {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let cert = params.self_signed(&key).unwrap();
    TestCa { pem: cert.pem(), der: cert.der().to_vec(), issuer: rcgen::Issuer::new(params, key) }
}

impl TestCa {
    /// A server configuration whose leaf names `names` (the first its common name), signed by this CA; the
    /// chain sent includes the CA when `with_ca`.
    pub(crate) fn server(&self, names: &[&str], with_ca: bool) -> Arc<rustls::ServerConfig> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut leaf =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        leaf.distinguished_name.push(rcgen::DnType::CommonName, names[0]);
        let leaf = leaf.signed_by(&key, &self.issuer).unwrap();
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let mut chain = vec![leaf.der().clone()];
        if with_ca {
            chain.push(CertificateDer::from(self.der.clone()));
        }
        let config =
            rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(chain, der)
                .unwrap();
        Arc::new(config)
    }

    /// A leaf naming `names` (host names or IP addresses), signed by this CA, as PEM: (certificate chain with the
    /// CA, private key), for a server in another process (the OpenID provider of tests/integration/oauth.rs).
    pub(crate) fn leaf_pem(&self, names: &[&str]) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut leaf =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        leaf.distinguished_name.push(rcgen::DnType::CommonName, names[0]);
        let leaf = leaf.signed_by(&key, &self.issuer).unwrap();
        (format!("{}{}", leaf.pem(), self.pem), key.serialize_pem())
    }
}
