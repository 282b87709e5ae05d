//! hcpx-registry: shipping packs through OCI registries (docs/distribution.md). `hcpx publish` builds a pack's
//! artifact and pushes it, signed in cosign's format; `hcpx install oci://…` pulls it, checks the signature
//! against the keys trusted for its registry prefix and every byte against the digests, then installs it
//! exactly as a directory install does, recording where it came from. Verified blobs are cached by digest, so
//! a pack named by digest installs again with no registry at all.
//!
//! May use: hcpx-model, hcpx-pack and hcpx-store (it installs into the store), and the network to the registry
//! a reference names. Must never: run a pack's code, install what its signature, digests or review do not
//! allow, or hold `unsafe` code.

#![forbid(unsafe_code)]

// The modules name the layers below as they did in one crate.
use hcpx_model as model;
use hcpx_pack::{lint, pack};
use hcpx_store as store;

pub mod artifact;
pub mod auth;
pub mod cache;
pub mod lock;
pub mod locked;
pub mod reference;
pub mod registry;
pub mod sign;
pub mod trust;
pub mod update;

use std::path::{Path, PathBuf};

pub use reference::PackRef;
pub use registry::Options;

use crate::store::packs::{InstallError, Installed, Origin, Replace};
use crate::store::{Store, StoreError};
use artifact::{Descriptor, PackConfig};
use sign::{PrivateKey, SIGNATURE_ANNOTATION, SIMPLE_SIGNING};

/// Why a publish or a registry install failed.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    #[error("{reference:?} is not a pack reference: {reason}")]
    Reference { reference: String, reason: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{0}")]
    Artifact(String),
    #[error("registry {registry}: {reason}")]
    Registry { registry: String, reason: String },
    #[error("registry {registry} did not finish the {what} request within {ms} ms; check the registry, or raise --registry-timeout")]
    Timeout { registry: String, what: String, ms: u64 },
    #[error("{what} has digest {got}, not {want}: the registry served other bytes than the manifest names; nothing was installed")]
    Digest { what: String, want: String, got: String },
    #[error("blob {digest} declares {declared} bytes but the registry sent {got}; it is refused and nothing was installed")]
    Size { digest: String, declared: u64, got: u64 },
    #[error("signature: {0}")]
    Signature(String),
    #[error("key: {0}")]
    Key(String),
    #[error("credentials for {registry}: {reason}")]
    Auth { registry: String, reason: String },
    #[error("{0}")]
    Trust(String),
    #[error("{reference} ({digest}) is not signed by any key; install it only if you trust its source: hcpx install {reference} --allow-unsigned (written to the audit log)")]
    Unsigned { reference: String, digest: String },
    #[error("{reference} ({digest}) is signed only by keys not trusted for {name} ({keys}); trust the publisher's key with hcpx trust add NAME KEY.pem --prefix {name}, or pass --allow-unsigned")]
    Untrusted { reference: String, digest: String, name: String, keys: String },
    #[error("{reference} is not in the registry (no such tag or digest); check the reference, or publish it with hcpx publish DIR {reference}")]
    NotFound { reference: String },
    #[error("{reference} was resolved to {got}, but {expected} is required ({why}); nothing was installed")]
    Pinned { reference: String, expected: String, got: String, why: String },
    /// A tag no trusted signature of the build names (`signed_for`).
    #[error("{0}")]
    TagNotSigned(String),
    #[error("{to} was signed before the build of {id} that is installed ({from}): a registry can serve any build it once had, so a move to an older one is refused and nothing was installed; if this rollback is wanted, run again with --allow-downgrade")]
    Downgrade { id: String, from: String, to: String },
    #[error("pack {id} is installed from {from}; {to} holds other content ({changes}), so nothing was installed: review it, then run again with --yes")]
    Review { id: String, from: String, to: String, changes: String },
    #[error("{0}")]
    Lock(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Install(#[from] InstallError),
}

/// What `publish` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    pub reference: PackRef,
    pub digest: String,
    pub id: String,
    /// The fingerprint of the key that signed it.
    pub signed_by: Option<String>,
}

/// The bins a wrap pack runs from PATH (the artifact never carries them).
fn bins(pack: &crate::pack::Pack) -> Vec<String> {
    match pack.wrap.as_ref().map(|w| &w.bin) {
        Some(crate::pack::Bin::Name(n)) => vec![n.clone()],
        _ => Vec::new(),
    }
}

/// Builds the artifact of the (linted) pack at `dir` and pushes it as `r`; signs it with `key` when given.
pub fn publish(
    dir: &Path,
    r: &PackRef,
    key: Option<&PrivateKey>,
    opts: &Options,
) -> Result<Published, DistError> {
    let staged = tempfile::tempdir().map_err(|e| DistError::Io { path: "temp dir".into(), source: e })?;
    let root = staged.path().join("pack");
    crate::store::packs::copy_pack(dir, &root)?;
    let pack =
        crate::pack::Pack::load(&root).map_err(|e| DistError::Artifact(format!("{}: {e}", dir.display())))?;
    let config = PackConfig { id: pack.id.clone(), kind: pack.kind.as_str().to_string(), bins: bins(&pack) };
    let art = artifact::build(&root, &config, pack.component.as_deref())?;
    let reg = registry::Registry::new(r, opts)?;
    let mut blobs: Vec<(&Descriptor, &[u8])> = vec![(&art.config.descriptor, &art.config.bytes)];
    blobs.extend(art.layers.iter().map(|l| (&l.descriptor, l.bytes.as_slice())));
    let target = match &r.tag {
        Some(t) => r.at_tag(t),
        None => r.at_digest(&art.digest),
    };
    reg.push(&target, &blobs, &art.manifest)?;
    let signed_by = match key {
        Some(k) => {
            push_signature(&reg, r, &art.digest, k)?;
            Some(k.public().fingerprint())
        }
        None => None,
    };
    Ok(Published { reference: r.clone(), digest: art.digest, id: pack.id, signed_by })
}

/// The tag cosign stores the signatures of manifest `digest` under.
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replacen(':', "-", 1))
}

/// Signs `digest` and adds the signature layer to the `sha256-<hex>.sig` image (keeping others' signatures).
fn push_signature(
    reg: &registry::Registry,
    r: &PackRef,
    digest: &str,
    key: &PrivateKey,
) -> Result<(), DistError> {
    // The signature covers the tag the build is published under and when it was signed (sign::Claims).
    let claims = sign::Claims { tag: r.tag.clone(), signed_at: Some(crate::store::approvals::now_ms()) };
    let payload = sign::payload(&r.name(), digest, &claims)?;
    let signature = key.sign(&payload);
    let sig_ref = r.at_tag(&signature_tag(digest));
    let mut layers: Vec<Descriptor> = match reg.manifest(&sig_ref)? {
        Some((bytes, _)) => {
            serde_json::from_slice::<artifact::Manifest>(&bytes).map(|m| m.layers).unwrap_or_default()
        }
        None => Vec::new(),
    };
    let layer = Descriptor {
        media_type: SIMPLE_SIGNING.to_string(),
        digest: format!("sha256:{}", crate::model::digest::sha256_hex(&payload)),
        size: payload.len() as i64,
        annotations: [(SIGNATURE_ANNOTATION.to_string(), signature)].into_iter().collect(),
    };
    layers.retain(|l| l.annotations.get(SIGNATURE_ANNOTATION) != layer.annotations.get(SIGNATURE_ANNOTATION));
    layers.push(layer.clone());
    // cosign's signature image: an image config naming the payloads as its layers.
    let diff_ids: Vec<&str> = layers.iter().map(|l| l.digest.as_str()).collect();
    let config = serde_json::to_vec(&serde_json::json!({
        "architecture": "", "os": "", "config": {},
        "rootfs": { "type": "layers", "diff_ids": diff_ids },
    }))
    .map_err(|e| DistError::Signature(e.to_string()))?;
    let config_desc = Descriptor {
        media_type: "application/vnd.oci.image.config.v1+json".to_string(),
        digest: format!("sha256:{}", crate::model::digest::sha256_hex(&config)),
        size: config.len() as i64,
        annotations: Default::default(),
    };
    let manifest = artifact::Manifest {
        schema_version: 2,
        media_type: artifact::MANIFEST.to_string(),
        artifact_type: None,
        config: config_desc.clone(),
        layers,
        annotations: Default::default(),
    };
    let manifest = serde_json::to_vec(&manifest).map_err(|e| DistError::Signature(e.to_string()))?;
    reg.push(&sig_ref, &[(&config_desc, &config), (&layer, &payload)], &manifest)
}

/// How an install from a registry runs.
#[derive(Debug, Clone, Default)]
pub struct PullOptions {
    pub registry: Options,
    /// Install a pack no trusted key signed (the caller writes it to the audit log).
    pub allow_unsigned: bool,
    /// The digest the pack must have (a lock file's pin).
    pub expect_digest: Option<String>,
    /// The key fingerprint that must have signed it (a lock file's or an update's pin).
    pub expect_signer: Option<String>,
    /// Move an installed pack to a build signed before the installed one (`--allow-downgrade`).
    pub allow_downgrade: bool,
    /// The review of other content for an installed pack was seen and accepted (`--yes`).
    pub reviewed: bool,
}

/// Who signed a pulled pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The trusted key's name.
    pub name: String,
    pub fingerprint: String,
}

/// A pack pulled, verified and laid out in a temp directory, ready for [`Store::install_origin`].
#[derive(Debug)]
pub struct Pulled {
    pub reference: PackRef,
    pub digest: String,
    pub signer: Option<Signer>,
    /// When the signature naming the tag (or, by digest, the newest trusted one) was signed, in ms.
    pub signed_at: Option<u64>,
    /// Where the pack's files are (removed with `_temp`).
    pub dir: PathBuf,
    /// Served entirely from the cache (no registry was asked).
    pub from_cache: bool,
    _temp: tempfile::TempDir,
}

/// Resolves `r` to a manifest digest, checks its signature and every layer, and lays the pack out.
pub fn pull(store: &Store, r: &PackRef, opts: &PullOptions) -> Result<Pulled, DistError> {
    let cache = cache::Cache::new(store);
    let mut reg = Lazy { r, opts: &opts.registry, reg: None };
    // The manifest: from the cache when the reference pins a digest we hold, else from the registry; a pinned
    // (locked) install whose registry cannot be reached uses the pinned manifest when the cache holds it.
    let cached = r.digest.as_ref().and_then(|d| cache.manifest(d));
    let (manifest_bytes, digest, from_cache) = match cached {
        Some((b, d)) => (b, d, true),
        None => match reg.get().and_then(|g| resolve(g, &cache, r)) {
            Ok(Some((b, d))) => (b, d, false),
            Ok(None) => return Err(DistError::NotFound { reference: r.to_string() }),
            Err(e @ (DistError::Registry { .. } | DistError::Timeout { .. })) => {
                match opts.expect_digest.as_ref().and_then(|d| cache.manifest(d)) {
                    Some((b, d)) => (b, d, true),
                    None => return Err(e),
                }
            }
            Err(e) => return Err(e),
        },
    };
    if let Some(want) = &opts.expect_digest {
        if *want != digest {
            return Err(DistError::Pinned {
                reference: r.to_string(),
                expected: want.clone(),
                got: digest,
                why: "the lock file pins that digest; if the change is wanted, review it and run hcpx lock again".into(),
            });
        }
    }
    let manifest = artifact::parse_manifest(&manifest_bytes)?;
    // The signature, before any layer is fetched.
    let mut sigs = cache.signatures(&digest);
    let mut verified = verify(store, r, &digest, &sigs)?;
    if verified.is_none() && !(from_cache && opts.allow_unsigned) {
        match reg.get().and_then(|reg| fetch_signatures(reg, r, &digest)) {
            Ok(found) => {
                sigs = found;
                cache.put_signatures(&digest, &sigs)?;
                verified = verify(store, r, &digest, &sigs)?;
            }
            Err(e) if !from_cache => return Err(e),
            Err(_) => {}
        }
    }
    let (signer, claims) = match verified {
        Some((s, c)) => (Some(s), c),
        None => (None, Vec::new()),
    };
    if let Some(want) = &opts.expect_signer {
        if signer.as_ref().map(|s| &s.fingerprint) != Some(want) {
            return Err(DistError::Pinned {
                reference: r.to_string(),
                expected: format!("a signature by {want}"),
                got: signer.map_or("no trusted signature".into(), |s| {
                    format!("a signature by {} ({})", s.name, s.fingerprint)
                }),
                why: "the pack must keep its signer".into(),
            });
        }
    }
    if signer.is_none() && !opts.allow_unsigned {
        let r_digest = r.at_digest(&digest).to_string();
        // A signature whose payload names another manifest (one copied from an older version) signs nothing here.
        let naming = sigs.iter().filter(|s| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD
                .decode(&s.payload)
                .is_ok_and(|p| sign::payload_names(&p, &digest))
        });
        if naming.count() == 0 {
            return Err(DistError::Unsigned { reference: r_digest, digest });
        }
        let keys: Vec<String> = sigs.iter().filter_map(|s| s.key_hint.clone()).collect();
        return Err(DistError::Untrusted {
            reference: r_digest,
            digest,
            name: r.name(),
            keys: if keys.is_empty() {
                format!("{} signature(s) by other keys", sigs.len())
            } else {
                keys.join(", ")
            },
        });
    }
    let signed_at = signed_for(r, &digest, signer.as_ref(), &claims, opts)?;
    // The layers: each from the cache or streamed (bounded, digest-checked) into it, then laid out.
    let temp = tempfile::Builder::new()
        .prefix("pull-")
        .tempdir_in(cache.tmp()?)
        .map_err(|e| DistError::Io { path: "temp dir".into(), source: e })?;
    let dir = temp.path().join("pack");
    std::fs::create_dir_all(&dir)
        .map_err(|e| DistError::Io { path: dir.display().to_string(), source: e })?;
    let at = r.at_digest(&digest);
    for layer in &manifest.layers {
        let blob = match cache.blob(&layer.digest, layer.size) {
            Some(p) => p,
            None => cache.fetch_blob(reg.get()?, &at, layer)?,
        };
        let title = layer.annotations.get(artifact::TITLE).map(String::as_str).unwrap_or_default();
        artifact::check_title(title)?;
        let dst = dir.join(title);
        lay_out(&blob, &dst, layer.annotations.get(artifact::EXECUTABLE).is_some_and(|v| v == "true"))?;
    }
    Ok(Pulled { reference: r.clone(), digest, signer, signed_at, dir, from_cache, _temp: temp })
}

/// When the build was signed for this reference: a tag resolved without a pin must be named by a trusted
/// signature (the signature covers the tag, so an older signed build served under it is refused); by digest or
/// pinned by a lock, the digest is what was asked for.
fn signed_for(
    r: &PackRef,
    digest: &str,
    signer: Option<&Signer>,
    claims: &[sign::Claims],
    opts: &PullOptions,
) -> Result<Option<u64>, DistError> {
    let (Some(signer), Some(tag), None, None) = (signer, &r.tag, &r.digest, &opts.expect_digest) else {
        return Ok(newest(claims));
    };
    let naming: Vec<&sign::Claims> =
        claims.iter().filter(|c| c.tag.as_deref() == Some(tag.as_str())).collect();
    if naming.is_empty() {
        let mut tags: Vec<String> = claims.iter().filter_map(|c| c.tag.clone()).collect();
        tags.dedup();
        let signed = if tags.is_empty() { "no tag".into() } else { format!("tag {}", tags.join(", ")) };
        return Err(DistError::TagNotSigned(format!(
            "{r} resolves to {digest}, signed by {} ({}), but no signature names tag {tag} (it was signed for {signed}): a registry can serve any signed build under any tag, so nothing was installed. Install the build you mean by digest ({}), or ask the publisher to sign the tag (hcpx publish --sign, or cosign sign -a tag={tag})",
            signer.name,
            signer.fingerprint,
            r.at_digest(digest)
        )));
    }
    Ok(newest(naming))
}

/// When the newest of `claims` was signed.
fn newest<'a>(claims: impl IntoIterator<Item = &'a sign::Claims>) -> Option<u64> {
    claims.into_iter().filter_map(|c| c.signed_at).max()
}

/// `Downgrade` when `pulled` (other content than the installed build `rec` of pack `id`) was signed before it,
/// unless `allow` (`--allow-downgrade`).
pub(crate) fn refuse_downgrade(
    id: &str,
    rec: &crate::store::packs::PackState,
    r: &PackRef,
    pulled: &Pulled,
    allow: bool,
) -> Result<(), DistError> {
    if allow
        || !older(rec.signed_at, pulled.signed_at)
        || rec.digest.as_deref() == Some(pulled.digest.as_str())
    {
        return Ok(());
    }
    let from = format!("{} ({})", rec.source, rec.digest.as_deref().unwrap_or("no digest"));
    Err(DistError::Downgrade { id: id.to_string(), from, to: format!("{r} ({})", pulled.digest) })
}

/// Whether a build signed at `new` is older than the installed one signed at `installed` (a build whose time is
/// unknown is taken as older than one whose time is known).
pub fn older(installed: Option<u64>, new: Option<u64>) -> bool {
    match (installed, new) {
        (Some(a), Some(b)) => b < a,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The manifest `r` names at the registry, and its digest. A tag is resolved with a HEAD first: when the
/// digest it names is a manifest already verified and cached, that is used (the tag was still asked, so a moved
/// tag is seen); otherwise, or by digest, the manifest is fetched and its bytes hashed.
fn resolve(
    reg: &registry::Registry,
    cache: &cache::Cache,
    r: &PackRef,
) -> Result<Option<(Vec<u8>, String)>, DistError> {
    if r.digest.is_none() {
        match reg.digest_of(r)? {
            None => return Ok(None),
            Some(d) => {
                if let Some(hit) = cache.manifest(&d) {
                    return Ok(Some(hit));
                }
            }
        }
    }
    let got = reg.manifest(r)?;
    if let Some((b, d)) = &got {
        cache.put_manifest(d, b)?;
    }
    Ok(got)
}

/// The registry, connected on first use (a pull served from the cache never connects).
struct Lazy<'a> {
    r: &'a PackRef,
    opts: &'a Options,
    reg: Option<registry::Registry>,
}

impl Lazy<'_> {
    fn get(&mut self) -> Result<&registry::Registry, DistError> {
        if self.reg.is_none() {
            self.reg = Some(registry::Registry::new(self.r, self.opts)?);
        }
        self.reg.as_ref().ok_or_else(|| DistError::Artifact("no registry".into()))
    }
}

fn lay_out(blob: &Path, dst: &Path, executable: bool) -> Result<(), DistError> {
    use std::os::unix::fs::PermissionsExt;
    let io = |e: std::io::Error| DistError::Io { path: dst.display().to_string(), source: e };
    if let Some(parent) = dst.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    std::fs::copy(blob, dst).map_err(io)?;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(dst, std::fs::Permissions::from_mode(mode)).map_err(io)
}

/// One signature found for a manifest.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FoundSignature {
    /// The payload, base64.
    pub payload: String,
    /// The signature annotation (base64 DER).
    pub signature: String,
    /// Not stored: a hint for messages.
    #[serde(skip)]
    pub key_hint: Option<String>,
}

fn fetch_signatures(
    reg: &registry::Registry,
    r: &PackRef,
    digest: &str,
) -> Result<Vec<FoundSignature>, DistError> {
    use base64::Engine as _;
    let sig_ref = r.at_tag(&signature_tag(digest));
    let Some((bytes, sig_digest)) = reg.manifest(&sig_ref)? else { return Ok(Vec::new()) };
    let m: artifact::Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        DistError::Signature(format!("the signature image of {digest} is not a manifest: {e}"))
    })?;
    let mut out = Vec::new();
    let dir = tempfile::tempdir().map_err(|e| DistError::Io { path: "temp dir".into(), source: e })?;
    for (i, l) in m.layers.iter().enumerate().take(64) {
        let Some(sig) = l.annotations.get(SIGNATURE_ANNOTATION) else { continue };
        if l.media_type != SIMPLE_SIGNING || l.size < 0 || l.size as u64 > sign::MAX_PAYLOAD_BYTES {
            continue;
        }
        let path = dir.path().join(i.to_string());
        reg.blob_to(&sig_ref.at_digest(&sig_digest), l, &path)?;
        let payload = std::fs::read(&path)
            .map_err(|e| DistError::Io { path: path.display().to_string(), source: e })?;
        out.push(FoundSignature {
            payload: base64::engine::general_purpose::STANDARD.encode(&payload),
            signature: sig.clone(),
            key_hint: None,
        });
    }
    Ok(out)
}

/// The first trusted key for `r` that signed `digest` among `sigs`, and what every trusted signature of it
/// claims (its tag and time).
fn verify(
    store: &Store,
    r: &PackRef,
    digest: &str,
    sigs: &[FoundSignature],
) -> Result<Option<(Signer, Vec<sign::Claims>)>, DistError> {
    use base64::Engine as _;
    let keys = trust::keys_for(store, &r.name())?;
    let (mut signer, mut claims) = (None, Vec::new());
    for s in sigs {
        let Ok(payload) = base64::engine::general_purpose::STANDARD.decode(&s.payload) else { continue };
        if !sign::payload_names(&payload, digest) {
            continue;
        }
        if let Some((k, _)) = keys.iter().find(|(_, pk)| pk.verifies(&payload, &s.signature)) {
            signer.get_or_insert_with(|| Signer { name: k.name.clone(), fingerprint: k.fingerprint.clone() });
            claims.push(sign::claims_of(&payload));
        }
    }
    Ok(signer.map(|s| (s, claims)))
}

/// What an install from a registry did.
#[derive(Debug)]
pub struct RegistryInstall {
    pub installed: Installed,
    pub reference: PackRef,
    pub digest: String,
    pub signer: Option<Signer>,
    pub from_cache: bool,
}

/// Pulls `r` and installs it as a directory install does, recording the reference, digest and signer; an
/// unsigned install (`allow_unsigned`) is written to the audit log.
pub fn install(
    store: &Store,
    r: &PackRef,
    opts: &PullOptions,
    replace: Replace,
) -> Result<RegistryInstall, DistError> {
    let pulled = pull(store, r, opts)?;
    review_reinstall(store, r, &pulled, opts)?;
    install_pulled(store, r, pulled, replace)
}

/// An install of a pack already installed from the same repository with other content is an update: refused
/// when the build is older than the installed one (unless `allow_downgrade`), and applied only once its review
/// was seen (`reviewed`, `--yes`); a lock's pin is the review.
fn review_reinstall(
    store: &Store,
    r: &PackRef,
    pulled: &Pulled,
    opts: &PullOptions,
) -> Result<(), DistError> {
    let new = crate::pack::Pack::load(&pulled.dir).map_err(|e| DistError::Artifact(format!("{r}: {e}")))?;
    let state = store.state()?;
    let Some(rec) = state.packs.get(&new.id) else { return Ok(()) };
    let same_repository = PackRef::parse(&rec.source).is_ok_and(|old| old.name() == r.name());
    let (Some(from_digest), true) = (&rec.digest, same_repository) else { return Ok(()) };
    if *from_digest == pulled.digest || opts.expect_digest.is_some() {
        return Ok(());
    }
    refuse_downgrade(&new.id, rec, r, pulled, opts.allow_downgrade)?;
    if opts.reviewed {
        return Ok(());
    }
    let old = store.load_pack(&new.id)?;
    let changes = old.map(|o| update::policy_changes(&o, &new)).unwrap_or_default();
    let changes = if changes.is_empty() {
        "no change widens its reach".to_string()
    } else {
        changes.iter().map(update::PolicyChange::describe).collect::<Vec<_>>().join("; ")
    };
    let from = format!("{} ({from_digest})", rec.source);
    Err(DistError::Review { id: new.id, from, to: format!("{r} ({})", pulled.digest), changes })
}

/// Installs a pulled and verified pack (see [`install`]).
pub(crate) fn install_pulled(
    store: &Store,
    r: &PackRef,
    pulled: Pulled,
    replace: Replace,
) -> Result<RegistryInstall, DistError> {
    let origin = Origin {
        source: r.to_string(),
        digest: Some(pulled.digest.clone()),
        signer: pulled.signer.as_ref().map(|s| format!("{} {}", s.name, s.fingerprint)),
        signed_at: pulled.signed_at,
    };
    let installed = store.install_origin(&pulled.dir, origin, replace)?;
    if pulled.signer.is_none() {
        let rec = crate::store::audit::AuditRecord {
            at: crate::model::clock::now_rfc3339(),
            principal: crate::store::principals::LOCAL_TENANT.to_string(),
            tenant: crate::store::principals::LOCAL_TENANT.to_string(),
            invoker: crate::model::Invoker::Cli,
            pack_id: installed.id.clone(),
            verb_key: "hcpx.install.unsigned".to_string(),
            operation: crate::pack::Operation::Write,
            ok: true,
            code: None,
            args_sha256: crate::model::digest::sha256_hex(r.at_digest(&pulled.digest).to_string().as_bytes()),
            project_dir: None,
            approval: None,
            decision: None,
            outcome: None,
            egress: None,
            action: None,
            setting: None,
            prev: None,
        };
        store.append_audit(&rec)?;
    }
    Ok(RegistryInstall {
        installed,
        reference: pulled.reference.clone(),
        digest: pulled.digest.clone(),
        signer: pulled.signer.clone(),
        from_cache: pulled.from_cache,
    })
}
