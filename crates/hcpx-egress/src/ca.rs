//! The certificate authority of one call whose HTTPS the proxy terminates (issue #36 point 5): made when the call
//! starts, its key only ever in this process's memory, its certificate given to the call's child alone (a PEM in
//! the child's private TMPDIR, named by `SSL_CERT_FILE` and the common variables). A leaf for each CONNECT host is
//! minted on first use and kept for the call, so a child that trusts this CA trusts nothing else hcpx signs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::ServerConfig;

use crate::refusal::{Refusal, RefusalKind};

/// A per-call CA: its certificate as PEM, and a server configuration per host it has minted a leaf for.
pub struct CallCa {
    issuer: Issuer<'static, KeyPair>,
    der: CertificateDer<'static>,
    pem: String,
    leaves: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

impl std::fmt::Debug for CallCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallCa").finish_non_exhaustive()
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> Refusal {
    Refusal::new(
        RefusalKind::ConnectFailed,
        format!("the call's certificate authority could not {what}: {e}"),
    )
}

/// From an hour ago to two days on: a call lasts far less, and nothing this CA signs outlives it in use.
fn validity(params: &mut CertificateParams) {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let epoch = rcgen::date_time_ymd(1970, 1, 1);
    params.not_before = epoch + now.saturating_sub(Duration::from_secs(3600));
    params.not_after = epoch + now + Duration::from_secs(2 * 24 * 3600);
}

impl CallCa {
    /// A fresh CA (an ECDSA P-256 key made now, never written anywhere).
    pub fn new() -> Result<CallCa, Refusal> {
        let key = KeyPair::generate().map_err(|e| failed("make its key", e))?;
        let mut params =
            CertificateParams::new(Vec::<String>::new()).map_err(|e| failed("be described", e))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        validity(&mut params);
        params.distinguished_name.push(DnType::CommonName, "hcpx egress call ca");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params.self_signed(&key).map_err(|e| failed("sign itself", e))?;
        Ok(CallCa {
            pem: cert.pem(),
            der: cert.der().clone(),
            issuer: Issuer::new(params, key),
            leaves: Mutex::new(HashMap::new()),
        })
    }

    /// The CA's certificate (never its key), PEM, for the child to trust.
    pub fn cert_pem(&self) -> &str {
        &self.pem
    }

    /// The TLS server configuration for `host` (a normalized DNS name): a leaf for exactly that name, signed by
    /// this CA, offering HTTP/1.1 only.
    pub fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, Refusal> {
        let mut leaves = self.leaves.lock().map_err(|_| failed("be read", "a lock was poisoned"))?;
        if let Some(c) = leaves.get(host) {
            return Ok(c.clone());
        }
        let key = KeyPair::generate().map_err(|e| failed("make a key", e))?;
        let mut params =
            CertificateParams::new(vec![host.to_string()]).map_err(|e| failed(&format!("name {host}"), e))?;
        params.distinguished_name.push(DnType::CommonName, host);
        validity(&mut params);
        let leaf = params.signed_by(&key, &self.issuer).map_err(|e| failed(&format!("sign {host}"), e))?;
        let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| failed("configure tls", e))?
            .with_no_client_auth()
            .with_single_cert(vec![leaf.der().clone(), self.der.clone()], der)
            .map_err(|e| failed("configure tls", e))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        leaves.insert(host.to_string(), config.clone());
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_leaf_per_host_for_the_call() {
        let ca = CallCa::new().unwrap();
        assert!(ca.cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(!ca.cert_pem().contains("PRIVATE KEY"));
        let a = ca.server_config("api.test").unwrap();
        assert!(Arc::ptr_eq(&a, &ca.server_config("api.test").unwrap()));
        assert!(!Arc::ptr_eq(&a, &ca.server_config("other.test").unwrap()));
        assert_eq!(a.alpn_protocols, vec![b"http/1.1".to_vec()]);
        assert_ne!(CallCa::new().unwrap().cert_pem(), ca.cert_pem());
    }
}
