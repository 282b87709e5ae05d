//! The registry connection: oci-client over rustls, plain HTTP only for a loopback registry (as docker does) or
//! one the operator marked insecure, every call under a deadline, and every blob read bounded by the size its
//! manifest declares and checked against its digest as it streams, so a layer bomb is cut at its declared size.

use futures_util::StreamExt as _;
use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::{Client, RegistryOperation};
use sha2::{Digest as _, Sha256};
use std::future::Future;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use super::artifact::{Descriptor, MANIFEST, MAX_MANIFEST_BYTES};
use super::auth::Auth;
use super::reference::PackRef;
use super::DistError;

/// A self-signed certificate whose private key was thrown away when it was made (`openssl req -x509 -newkey ec
/// -keyout /dev/null`): the only TLS anchor of a loopback registry's client, so it trusts no server at all.
const NO_ANCHOR: &str = include_str!("no-anchor.pem");

/// How a registry is reached.
#[derive(Debug, Clone)]
pub struct Options {
    /// Allow plain HTTP to a registry that is not on loopback.
    pub insecure: bool,
    /// The deadline of each registry call (a stalled registry fails with a clear error).
    pub timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options { insecure: false, timeout: Duration::from_secs(30) }
    }
}

/// One registry, with its credentials and a runtime to drive the async client.
pub struct Registry {
    client: Client,
    auth: Auth,
    registry: String,
    timeout: Duration,
    rt: tokio::runtime::Runtime,
}

fn install_tls_provider() {
    // reqwest's rustls needs a process-wide provider; a second install is refused and harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl Registry {
    /// Connects (lazily) to the registry of `r`.
    pub fn new(r: &PackRef, opts: &Options) -> Result<Registry, DistError> {
        install_tls_provider();
        let plain = r.is_loopback() || opts.insecure;
        let config = ClientConfig {
            protocol: if plain {
                ClientProtocol::HttpsExcept(vec![r.registry.clone()])
            } else {
                ClientProtocol::Https
            },
            // A loopback registry is spoken to in plain HTTP only: its client trusts one anchor nobody holds the
            // key of, instead of loading the system's ~150 root certificates (most of a cached install's time),
            // so a TLS connection it were sent to (a redirect) fails closed.
            tls_certs_only: if r.is_loopback() {
                vec![Certificate { encoding: CertificateEncoding::Pem, data: NO_ANCHOR.as_bytes().to_vec() }]
            } else {
                Vec::new()
            },
            read_timeout: Some(opts.timeout),
            connect_timeout: Some(opts.timeout),
            ..Default::default()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| DistError::Io { path: "tokio runtime".into(), source: e })?;
        // `Client::new` would fall back to a default client on a bad config; refuse instead.
        let client = Client::try_from(config).map_err(|e| registry_error(&r.registry, e))?;
        Ok(Registry {
            client,
            auth: super::auth::for_registry(&r.registry)?,
            registry: r.registry.clone(),
            timeout: opts.timeout,
            rt,
        })
    }

    fn run<T>(&self, what: &str, f: impl Future<Output = Result<T, DistError>>) -> Result<T, DistError> {
        let timeout = self.timeout;
        let registry = self.registry.clone();
        self.rt.block_on(async move {
            match tokio::time::timeout(timeout, f).await {
                Ok(r) => r,
                Err(_) => Err(DistError::Timeout {
                    registry,
                    what: what.to_string(),
                    ms: timeout.as_millis() as u64,
                }),
            }
        })
    }

    fn err(&self, e: oci_client::errors::OciDistributionError) -> DistError {
        if let oci_client::errors::OciDistributionError::RequestError(r) = &e {
            if r.is_timeout() {
                let what = r.url().map_or("registry".to_string(), |u| u.path().to_string());
                return DistError::Timeout {
                    registry: self.registry.clone(),
                    what,
                    ms: self.timeout.as_millis() as u64,
                };
            }
        }
        registry_error(&self.registry, e)
    }

    async fn login(&self, r: &PackRef, op: RegistryOperation) -> Result<(), DistError> {
        self.client.auth(&r.client_ref(), &self.auth.client(), op).await.map(|_| ()).map_err(|e| self.err(e))
    }

    /// Pushes blobs (skipping those the registry has) and then the manifest, tagged as `r` says.
    pub fn push(
        &self,
        r: &PackRef,
        blobs: &[(&Descriptor, &[u8])],
        manifest: &[u8],
    ) -> Result<(), DistError> {
        self.run("push", async {
            self.login(r, RegistryOperation::Push).await?;
            let cref = r.client_ref();
            for (d, bytes) in blobs {
                let have = self.client.blob_exists(&cref, &d.digest).await.unwrap_or(false);
                if !have {
                    self.client.push_blob(&cref, bytes.to_vec(), &d.digest).await.map_err(|e| self.err(e))?;
                }
            }
            let ct = http::HeaderValue::from_static(MANIFEST);
            self.client.push_manifest_raw(&cref, manifest.to_vec(), ct).await.map_err(|e| self.err(e))?;
            Ok(())
        })
    }

    /// The manifest bytes `r` names, and their digest (computed here, and checked against `r`'s digest).
    /// `Ok(None)` when the registry has no such manifest.
    pub fn manifest(&self, r: &PackRef) -> Result<Option<(Vec<u8>, String)>, DistError> {
        let got = self.run("manifest", async {
            self.login(r, RegistryOperation::Pull).await?;
            match self.client.pull_manifest_raw(&r.client_ref(), &self.auth.client(), &[MANIFEST]).await {
                Ok((bytes, _)) => Ok(Some(bytes.to_vec())),
                Err(e) if is_not_found(&e) => Ok(None),
                Err(e) => Err(self.err(e)),
            }
        })?;
        let Some(bytes) = got else { return Ok(None) };
        if bytes.len() > MAX_MANIFEST_BYTES {
            return Err(DistError::Artifact(format!(
                "the manifest of {r} is {} bytes, past the {MAX_MANIFEST_BYTES} a pack's manifest may have",
                bytes.len()
            )));
        }
        let digest = format!("sha256:{}", crate::model::digest::sha256_hex(&bytes));
        if let Some(want) = &r.digest {
            if *want != digest {
                return Err(DistError::Digest {
                    what: format!("the manifest of {r}"),
                    want: want.clone(),
                    got: digest,
                });
            }
        }
        Ok(Some((bytes, digest)))
    }

    /// The digest the registry names for `r` (a HEAD of its manifest: no body), `Ok(None)` when it has no such
    /// manifest. Only a hint: it is trusted only to pick a manifest already verified and cached under that digest,
    /// whose bytes are checked against it again; anything else is fetched with [`Registry::manifest`].
    pub fn digest_of(&self, r: &PackRef) -> Result<Option<String>, DistError> {
        self.run("manifest", async {
            self.login(r, RegistryOperation::Pull).await?;
            match self.client.fetch_manifest_digest(&r.client_ref(), &self.auth.client()).await {
                Ok(d) => Ok(Some(d)),
                Err(e) if is_not_found(&e) => Ok(None),
                Err(e) => Err(self.err(e)),
            }
        })
    }

    /// Streams blob `d` of repository `r` into `dst` (created new), refusing more bytes than `d.size` declares
    /// the moment they arrive, fewer at the end, and any digest other than `d.digest`.
    pub fn blob_to(&self, r: &PackRef, d: &Descriptor, dst: &Path) -> Result<(), DistError> {
        let declared = u64::try_from(d.size)
            .map_err(|_| DistError::Artifact(format!("blob {} has a negative size", d.digest)))?;
        let io = |e: std::io::Error| DistError::Io { path: dst.display().to_string(), source: e };
        let mut out = std::fs::OpenOptions::new().write(true).create_new(true).open(dst).map_err(io)?;
        let desc = OciDescriptor {
            media_type: d.media_type.clone(),
            digest: d.digest.clone(),
            size: d.size,
            ..Default::default()
        };
        let hash = self.run("blob", async {
            self.login(r, RegistryOperation::Pull).await?;
            let mut stream =
                self.client.pull_blob_stream(&r.client_ref(), &desc).await.map_err(|e| self.err(e))?;
            if stream.content_length.is_some_and(|n| n > declared) {
                return Err(DistError::Size {
                    digest: d.digest.clone(),
                    declared,
                    got: stream.content_length.unwrap_or(0),
                });
            }
            let mut h = Sha256::new();
            let mut n: u64 = 0;
            while let Some(chunk) = stream.stream.next().await {
                let chunk = match chunk {
                    Ok(c) => c,
                    // The client checks the digest at the end of the stream: every declared byte came, and
                    // they are other bytes.
                    Err(_) if n == declared => {
                        return Err(DistError::Digest {
                            what: format!("blob {}", d.digest),
                            want: d.digest.clone(),
                            got: format!("sha256:{}", hex(&h.finalize())),
                        })
                    }
                    Err(e) => {
                        return Err(DistError::Registry {
                            registry: self.registry.clone(),
                            reason: format!("reading blob {}: {e}", d.digest),
                        })
                    }
                };
                n = n.saturating_add(chunk.len() as u64);
                if n > declared {
                    return Err(DistError::Size { digest: d.digest.clone(), declared, got: n });
                }
                h.update(&chunk);
                out.write_all(&chunk).map_err(io)?;
            }
            if n != declared {
                return Err(DistError::Size { digest: d.digest.clone(), declared, got: n });
            }
            Ok(h.finalize())
        })?;
        let got = format!("sha256:{}", hex(&hash));
        if got != d.digest {
            return Err(DistError::Digest {
                what: format!("blob {}", d.digest),
                want: d.digest.clone(),
                got,
            });
        }
        out.sync_all().map_err(io)?;
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn is_not_found(e: &oci_client::errors::OciDistributionError) -> bool {
    use oci_client::errors::{OciDistributionError as E, OciErrorCode as C};
    match e {
        E::ImageManifestNotFoundError(_) => true,
        E::ServerError { code, .. } => *code == 404,
        E::RegistryError { envelope, .. } => envelope
            .errors
            .iter()
            .any(|x| matches!(x.code, C::ManifestUnknown | C::NotFound | C::NameUnknown)),
        _ => false,
    }
}

fn registry_error(registry: &str, e: oci_client::errors::OciDistributionError) -> DistError {
    use oci_client::errors::OciDistributionError as E;
    let reason = match &e {
        E::UnauthorizedError { .. } | E::AuthenticationFailure(_) => format!(
            "{e}; log in to {registry} so the docker config (~/.docker/config.json) holds its credentials"
        ),
        E::RequestError(r) if r.is_connect() => {
            format!("cannot connect ({e}); check the registry is up and the address is right")
        }
        _ => {
            // The error chain, so a TLS or connection failure names its cause.
            let mut s = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(x) = src {
                s.push_str(&format!(": {x}"));
                src = x.source();
            }
            s
        }
    };
    DistError::Registry { registry: registry.to_string(), reason }
}
