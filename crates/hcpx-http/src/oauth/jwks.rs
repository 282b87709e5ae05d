//! An issuer's signing keys: found through its metadata (`/.well-known/oauth-authorization-server`, else
//! `/.well-known/openid-configuration`) → `jwks_uri`, fetched over HTTPS with the workspace's TLS (the system
//! roots, which honour `SSL_CERT_FILE`), bounded in size and time, and cached. A key set is kept for [`TTL`]; a
//! token whose `kid` the set lacks (the issuer rotated its keys) makes one refetch at most every
//! [`MISS_INTERVAL`] per issuer, then is refused. A request never waits on more fetches than that.

use bytes::Bytes;
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use super::jws::{parse_jwks, Jwk};
use crate::store::issuers::HttpUrl;

/// How long a fetched key set is trusted before it is fetched again.
pub const TTL: Duration = Duration::from_secs(600);
/// The least time between two fetches made because a token named a `kid` the set lacks, per issuer.
pub const MISS_INTERVAL: Duration = Duration::from_secs(30);
/// The least time between two attempts after a fetch failed, per issuer.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(10);
/// How long a key set may still be used after its TTL while its issuer cannot be reached.
pub const MAX_STALE: Duration = Duration::from_secs(3600);
/// The largest metadata document or key set read.
pub const MAX_BODY: usize = 256 * 1024;
/// The longest one fetch (metadata and key set together) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The keys of one issuer as last fetched.
#[derive(Debug)]
pub struct KeySet {
    pub keys: Vec<Jwk>,
    fetched: Instant,
}

impl KeySet {
    pub fn new(keys: Vec<Jwk>) -> KeySet {
        KeySet { keys, fetched: Instant::now() }
    }

    fn fresh(&self) -> bool {
        self.fetched.elapsed() < TTL
    }

    fn usable(&self) -> bool {
        self.fetched.elapsed() < MAX_STALE
    }

    /// The key a token names: by `kid`, or the one key there is when the token names none.
    pub fn find(&self, kid: Option<&str>) -> Option<&Jwk> {
        match kid {
            Some(k) => self.keys.iter().find(|j| j.kid.as_deref() == Some(k)),
            None if self.keys.len() == 1 => self.keys.first(),
            None => None,
        }
    }
}

/// Why no key could be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The issuer's key set has no key for this token (after the refetch a rotation allows).
    Unknown(String),
    /// The key set could not be fetched and none recent enough is held: the caller may retry.
    Unavailable(String),
}

#[derive(Default)]
struct Attempts {
    last: Option<Instant>,
    last_failed: bool,
    last_miss: Option<Instant>,
}

#[derive(Default)]
struct Slot {
    current: RwLock<Option<Arc<KeySet>>>,
    fetching: tokio::sync::Mutex<Attempts>,
}

/// Every issuer's keys, shared by the server's requests.
#[derive(Default)]
pub struct KeyCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl KeyCache {
    fn slot(&self, issuer: &str) -> Arc<Slot> {
        let mut map = self.slots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(issuer.to_string()).or_default().clone()
    }

    /// The key set held for `issuer` while it is fresh.
    pub fn current(&self, issuer: &str) -> Option<Arc<KeySet>> {
        let slot = self.slot(issuer);
        let held = slot.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        held.filter(|s| s.fresh())
    }

    /// Puts `keys` in the cache for `issuer` as if just fetched (benchmarks, and tests of the verifier).
    pub fn insert(&self, issuer: &str, keys: Vec<Jwk>) {
        let slot = self.slot(issuer);
        *slot.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            Some(Arc::new(KeySet::new(keys)));
    }

    /// The key set holding the key a token names (`kid`), fetching it where the rules above allow.
    pub async fn keys(
        &self,
        issuer: &HttpUrl,
        issuer_id: &str,
        kid: Option<&str>,
    ) -> Result<Arc<KeySet>, KeyError> {
        let slot = self.slot(issuer_id);
        let held = || slot.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        if let Some(set) = held().filter(|s| s.fresh() && s.find(kid).is_some()) {
            return Ok(set);
        }
        let mut tries = slot.fetching.lock().await;
        // Another request may have fetched while this one waited.
        let set = held();
        if let Some(s) = set.as_ref().filter(|s| s.fresh() && s.find(kid).is_some()) {
            return Ok(s.clone());
        }
        let fresh = set.as_ref().is_some_and(|s| s.fresh());
        let now = Instant::now();
        let may = if tries.last_failed {
            tries.last.is_none_or(|t| now.duration_since(t) >= RETRY_INTERVAL)
        } else if fresh {
            // A kid the fresh set lacks: the issuer may have rotated.
            tries.last_miss.is_none_or(|t| now.duration_since(t) >= MISS_INTERVAL)
        } else {
            true
        };
        let unknown = || {
            KeyError::Unknown(format!(
                "no key {} in the key set of issuer {issuer_id} (a key that rotated out, or never its own)",
                kid.unwrap_or("(the token names none, and the set has several)")
            ))
        };
        if !may {
            return match set.filter(|s| s.usable()) {
                Some(s) if s.find(kid).is_some() => Ok(s),
                Some(_) => Err(unknown()),
                None => Err(KeyError::Unavailable(format!(
                    "the keys of issuer {issuer_id} could not be fetched lately; retry shortly"
                ))),
            };
        }
        tries.last = Some(now);
        if fresh {
            tries.last_miss = Some(now);
        }
        match tokio::time::timeout(FETCH_TIMEOUT, fetch_keys(issuer, issuer_id)).await {
            Ok(Ok(keys)) => {
                tries.last_failed = false;
                let set = Arc::new(KeySet::new(keys));
                *slot.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(set.clone());
                if set.find(kid).is_some() {
                    Ok(set)
                } else {
                    Err(unknown())
                }
            }
            failed => {
                tries.last_failed = true;
                let why = match failed {
                    Ok(Err(e)) => e,
                    _ => format!("no answer in {}s", FETCH_TIMEOUT.as_secs()),
                };
                match set.filter(|s| s.usable()) {
                    Some(s) if s.find(kid).is_some() => Ok(s),
                    _ => Err(KeyError::Unavailable(format!(
                        "the keys of issuer {issuer_id} could not be fetched: {why}; retry shortly"
                    ))),
                }
            }
        }
    }
}

/// The issuer's metadata, then its key set.
async fn fetch_keys(issuer: &HttpUrl, issuer_id: &str) -> Result<Vec<Jwk>, String> {
    let path = issuer.trimmed_path();
    // RFC 8414 §3.1 puts the well-known segment before the issuer's path; OpenID Connect Discovery after it.
    let candidates = [
        format!("/.well-known/oauth-authorization-server{path}"),
        format!("{path}/.well-known/openid-configuration"),
    ];
    let mut last = String::new();
    for where_ in &candidates {
        match get(issuer, where_).await {
            Ok(Some(body)) => {
                let meta: Value = serde_json::from_slice(&body)
                    .map_err(|_| format!("its metadata at {}{where_} is not JSON", issuer.origin()))?;
                if meta.get("issuer").and_then(Value::as_str) != Some(issuer_id) {
                    return Err(format!(
                        "its metadata at {}{where_} names another issuer; the issuer URL must be exactly the one its metadata gives",
                        issuer.origin()
                    ));
                }
                let uri =
                    meta.get("jwks_uri").and_then(Value::as_str).ok_or("its metadata has no jwks_uri")?;
                let jwks_url = HttpUrl::parse(uri).map_err(|e| format!("its jwks_uri: {e}"))?;
                if !jwks_url.https {
                    return Err(format!("its jwks_uri {uri} is not https"));
                }
                let body = get(&jwks_url, &jwks_url.path)
                    .await?
                    .ok_or_else(|| format!("its jwks_uri {uri} is not found"))?;
                return parse_jwks(&body).map_err(|e| format!("{uri}: {e}"));
            }
            Ok(None) => last = format!("no metadata at {}{where_}", issuer.origin()),
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// `GET https://host/path` → the body of a 200 (`None` for a 404), at most [`MAX_BODY`] bytes; no redirect is
/// followed.
async fn get(url: &HttpUrl, path: &str) -> Result<Option<Bytes>, String> {
    let name = url.host.trim_start_matches('[').trim_end_matches(']').to_string();
    let addrs: Vec<std::net::SocketAddr> = tokio::net::lookup_host((name.as_str(), url.port))
        .await
        .map_err(|e| format!("{} does not resolve ({e})", url.host))?
        .collect();
    let tcp = hcpx_egress::upstream::connect(&addrs, &url.host, url.port, Duration::from_secs(5))
        .await
        .map_err(|r| r.to_string())?;
    let tls = hcpx_egress::upstream::tls(tcp, &name).await.map_err(|f| match f {
        hcpx_egress::upstream::TlsFailure::Refused(r) => r.to_string(),
        hcpx_egress::upstream::TlsFailure::Handshake { error, certificate: true } => {
            format!(
                "{}'s certificate is not trusted ({error}); an operator's private CA goes in SSL_CERT_FILE",
                url.host
            )
        }
        hcpx_egress::upstream::TlsFailure::Handshake { error, .. } => {
            format!("tls with {} failed ({error})", url.host)
        }
    })?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| format!("http with {} failed ({e})", url.host))?;
    let driver = tokio::spawn(conn);
    let authority = url.origin().split_once("://").map(|(_, a)| a.to_string()).unwrap_or_default();
    let req = http::Request::get(if path.is_empty() { "/" } else { path })
        .header(http::header::HOST, authority)
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "hcpx")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("bad request ({e})"))?;
    let resp = send.send_request(req).await.map_err(|e| format!("{} did not answer ({e})", url.host))?;
    let status = resp.status();
    let out = if status == http::StatusCode::NOT_FOUND {
        Ok(None)
    } else if status != http::StatusCode::OK {
        Err(format!("{}{path} answered {status}", url.origin()))
    } else {
        Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map(|b| Some(b.to_bytes()))
            .map_err(|_| format!("{}{path} sent more than {MAX_BODY} bytes, or broke off", url.origin()))
    };
    driver.abort();
    out
}
