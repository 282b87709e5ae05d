//! Installed packs: install (lint, then copy only the pack), uninstall, activate, deactivate, list.

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::{Store, StoreError};
use crate::lint::{lint_dir, LintIssue};
use crate::model::naming::is_pack_id;
use crate::pack::Pack;

/// Most files and directories one pack may hold.
pub const MAX_PACK_ENTRIES: usize = 10_000;
/// Most bytes one pack may hold.
pub const MAX_PACK_BYTES: u64 = 256 * 1024 * 1024;

pub(crate) const STATE: &str = "state.json";

/// `$HCP_HOME/state.json`: what is installed and activated.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    #[serde(default)]
    pub packs: IndexMap<String, PackState>,
}

/// One installed pack's record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackState {
    pub source: String,
    pub installed_at: String,
    pub activated: bool,
    /// SHA-256 of a composite's component at install; exec refuses other bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_sha256: Option<String>,
    /// SHA-256 over the installed pack's own files (manifest, Policy, Skill, evals); a pack whose files
    /// changed after install (a wrap rewriting its own policy.json, say) is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files_sha256: Option<String>,
    /// Per-tenant activation, overriding `activated` for the tenants it names (`hcpx activate ID --tenant T`):
    /// a hosted runtime shares one install between tenants that each choose what they run.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tenants: BTreeMap<String, bool>,
    /// The manifest digest of a pack installed from an OCI registry (`source` is then its `oci://` reference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The trusted key that signed it: its name and fingerprint; absent for a directory or unsigned install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// When its signature was made (milliseconds since the Unix epoch, the signature's `signed_at` claim): an
    /// update to a build signed earlier is a downgrade.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_at: Option<u64>,
}

impl PackState {
    /// Whether the pack is activated for `tenant`: its own choice where it made one, else the store's.
    pub fn activated_for(&self, tenant: &str) -> bool {
        self.tenants.get(tenant).copied().unwrap_or(self.activated)
    }

    /// Whether the pack is activated for any tenant: store-wide, or by a tenant's own choice.
    pub fn activated_for_any(&self) -> bool {
        self.activated || self.tenants.values().any(|on| *on)
    }
}

/// Where an installed pack came from, as the store records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The directory (canonical) or the `oci://` reference.
    pub source: String,
    /// The registry manifest digest.
    pub digest: Option<String>,
    /// The signer's name and fingerprint.
    pub signer: Option<String>,
    /// When the signature was made (ms).
    pub signed_at: Option<u64>,
}

/// At most this many bytes of an installed pack are hashed; past it the digest cannot match.
const MAX_DIGEST_BYTES: u64 = 512 << 20;
/// At most this many entries of an installed pack are hashed; past it the digest cannot match.
const MAX_DIGEST_ENTRIES: usize = 20_000;

/// The digest of every entry of an installed pack (path, kind, executable bit and bytes, in path order), so a
/// changed manifest, Policy, Skill or bin, and an added or removed file, are all seen. Links, FIFOs and devices
/// are recorded by kind and never opened; files are opened without following links and without blocking.
pub fn pack_files_digest(dir: &Path) -> String {
    use crate::model::digest::Digest;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut entries = Vec::new();
    let whole = crate::pack::tree::walk(dir, MAX_DIGEST_ENTRIES, usize::MAX, &|_| true, &mut |rel, m| {
        entries.push((PathBuf::from(rel), m.file_type()))
    });
    if !whole {
        return "too-many-entries".into();
    }
    // In path order (component by component), as every recorded digest was made.
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let mut h = Digest::new();
    let mut total = 0u64;
    for (rel, t) in entries {
        h.update(rel.as_os_str().as_encoded_bytes());
        h.update([0u8]);
        if t.is_dir() {
            h.update(b"d");
            continue;
        }
        if !t.is_file() {
            h.update(if t.is_symlink() { b"l" } else { b"o" });
            continue;
        }
        let opened = fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join(&rel));
        let Ok(mut f) = opened else {
            h.update(b"?");
            continue;
        };
        let meta = f.metadata().ok().filter(|m| m.is_file());
        let Some(meta) = meta else {
            h.update(b"o");
            continue;
        };
        total += meta.len();
        if total > MAX_DIGEST_BYTES {
            return "too-large".into();
        }
        h.update(if meta.permissions().mode() & 0o111 != 0 { b"x" } else { b"f" });
        // The length first, as it was always recorded, then the bytes streamed through a small buffer (a
        // component is tens of MiB: never all in memory at once). A file that grew while it was read is cut at
        // the length recorded, and one that shrank or failed reads as `?`, which no recorded digest holds.
        h.update(meta.len().to_le_bytes());
        if !hash_exactly(&mut f, meta.len(), &mut h) {
            h.update(b"?");
        }
    }
    h.finish()
}

/// Feeds exactly `len` bytes of `f` to `h`; false when fewer could be read.
fn hash_exactly(f: &mut fs::File, len: u64, h: &mut crate::model::digest::Digest) -> bool {
    let mut buf = vec![0u8; 256 * 1024];
    let mut left = len;
    while left > 0 {
        let want = usize::try_from(left.min(buf.len() as u64)).unwrap_or(buf.len());
        match f.read(&mut buf[..want]) {
            Ok(0) | Err(_) => return false,
            Ok(n) => {
                h.update(&buf[..n]);
                left -= n as u64;
            }
        }
    }
    true
}

/// [`pack_files_digest`] through `memo`: a tree whose every entry is as the kernel said when it was last hashed
/// (inode, mode, size, change time: see [`super::memo`]) is not read again.
pub fn pack_files_digest_memo(dir: &Path, memo: &super::memo::Memo) -> String {
    let mut fp = super::memo::Fingerprint::new();
    let mut entries = Vec::new();
    if !crate::pack::tree::walk(dir, MAX_DIGEST_ENTRIES, usize::MAX, &|_| true, &mut |rel, m| {
        entries.push((rel.to_string(), m.clone()))
    }) {
        return "too-many-entries".into();
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (rel, m) in &entries {
        fp.add(rel.as_bytes(), m);
    }
    // The directory itself too: its mode, and a change time that moves when an entry is added or removed.
    if let Ok(m) = fs::symlink_metadata(dir) {
        fp.add(b".", &m);
    }
    memo.digest(dir, fp, || pack_files_digest(dir))
}

/// Whether an install may replace a pack of the same id from another source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    No,
    Yes { keep_workspace: bool },
}

/// What an install did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    pub id: String,
    /// A copy was there before (same or other source).
    pub replaced: bool,
    /// The source of the pack it replaced, when that was another one.
    pub replaced_other: Option<String>,
    /// The replaced pack was active and the new one is not.
    pub deactivated: bool,
    pub workspace_removed: bool,
}

/// Why an install was refused.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("pack {dir} fails lint with {} issue(s); fix them and install again", .issues.len())]
    Lint { dir: String, issues: Vec<LintIssue> },
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The install check (`Store::with_install_check`: the CLI compiles a composite's component) refused the
    /// staged pack; nothing was installed.
    #[error("{message}")]
    Check { id: String, message: String },
}

impl Store {
    /// The store's state (empty when nothing was installed yet).
    pub fn state(&self) -> Result<std::sync::Arc<State>, StoreError> {
        Ok(self.read_json_cached(STATE)?.unwrap_or_default())
    }

    /// The state read straight from disk, for read-modify-write under the store lock.
    fn state_locked(&self) -> Result<State, StoreError> {
        Ok(self.read_json(STATE)?.unwrap_or_default())
    }

    /// Built-in pack `id` (`hcp-cli`), which the store holds beside the installed packs: nothing to install,
    /// activated for every tenant (`built_in.rs`).
    pub fn built_in(&self, id: &str) -> Option<std::sync::Arc<Pack>> {
        crate::built_in::pack(id)
    }

    /// Where pack `id` is installed.
    pub fn pack_dir(&self, id: &str) -> PathBuf {
        self.path("packs").join(id)
    }

    /// Loads installed pack `id`: `Ok(None)` when it is not installed.
    pub fn load_pack(&self, id: &str) -> Result<Option<Pack>, StoreError> {
        if !is_pack_id(id) {
            return Ok(None);
        }
        let Some(record) = self.state()?.packs.get(id).cloned() else { return Ok(None) };
        let dir = self.pack_dir(id);
        // Fail closed: a record without its digest (edited, or from an older hcpx) is refused, not trusted.
        let Some(want) = &record.files_sha256 else {
            return Err(StoreError::Refused(format!(
                "installed pack {id} has no digest of its files in state.json, so it cannot be checked; it is not loaded: reinstall it with `hcpx install DIR`"
            )));
        };
        let memo = self.digest_memo();
        let mut have = pack_files_digest_memo(&dir, &memo);
        if have != *want && self.backend.pack_fetch(id, want)? {
            have = pack_files_digest_memo(&dir, &memo);
        }
        if have != *want {
            return Err(StoreError::Refused(format!(
                "the files of installed pack {id} changed since install; it is not loaded: reinstall it with `hcpx install DIR`"
            )));
        }
        Pack::load(&dir).map(Some).map_err(|e| {
            StoreError::Refused(format!(
                "installed pack {id} no longer loads ({e}); reinstall it with `hcpx install DIR`"
            ))
        })
    }

    /// Lints `src`, copies only the pack into the store and records it. A reinstall from the same source keeps
    /// the activation; a pack from another source under an installed id is refused (see [`Store::install_with`]).
    pub fn install(&self, src: &Path) -> Result<(String, bool), InstallError> {
        self.install_with(src, Replace::No).map(|o| (o.id, o.replaced))
    }

    /// Installs as [`Store::install`] does. A pack from a different source than the installed one of the same id
    /// is refused under [`Replace::No`]: it would silently inherit that pack's activation and workspace. Under
    /// `Replace::Yes` it replaces it deactivated, its workspace removed unless `keep_workspace`.
    pub fn install_with(&self, src: &Path, replace: Replace) -> Result<Installed, InstallError> {
        let source = fs::canonicalize(src).unwrap_or_else(|_| src.to_path_buf()).display().to_string();
        self.install_origin(src, Origin { source, digest: None, signer: None, signed_at: None }, replace)
    }

    /// Installs the pack at `src` as [`Store::install_with`] does, recording `origin` as where it came from (a
    /// registry install lays the pulled pack out in a temp directory and names its reference here).
    pub fn install_origin(
        &self,
        src: &Path,
        origin: Origin,
        replace: Replace,
    ) -> Result<Installed, InstallError> {
        let report = lint_dir(src);
        let id = match (report.ok, report.pack_id) {
            (true, Some(id)) => id,
            _ => return Err(InstallError::Lint { dir: src.display().to_string(), issues: report.issues }),
        };
        if crate::built_in::is_built_in(&id) {
            return Err(StoreError::Refused(format!(
                "pack id {id} is built into the runtime and cannot be installed; give the pack in {} another `id` in its surface.json",
                src.display()
            ))
            .into());
        }
        let staged = self.temp_path(&format!("install-{id}"));
        let copied = copy_pack(src, &staged);
        let recheck = copied.map(|_| lint_dir(&staged));
        match recheck {
            Ok(r) if r.ok && r.pack_id.as_deref() == Some(id.as_str()) => {}
            Ok(r) if r.ok => {
                let _ = fs::remove_dir_all(&staged);
                return Err(StoreError::Refused(format!(
                    "pack {} changed while it was being installed; install it again",
                    src.display()
                ))
                .into());
            }
            Ok(r) => {
                let _ = fs::remove_dir_all(&staged);
                return Err(InstallError::Lint { dir: src.display().to_string(), issues: r.issues });
            }
            Err(e) => {
                let _ = fs::remove_dir_all(&staged);
                return Err(e.into());
            }
        }
        // A composite's component is compiled here (the CLI's check): one that does not compile is refused with
        // nothing installed, and one that does is in the compile cache before any call.
        if let Some(check) = &self.install_check {
            let checked =
                Pack::load(&staged).map_err(|e| e.to_string()).and_then(|p| check.run(&p, &self.layout()));
            if let Err(message) = checked {
                let _ = fs::remove_dir_all(&staged);
                return Err(InstallError::Check { id, message });
            }
        }
        let _lock = self.lock()?;
        let mut state = self.state_locked()?;
        let source = origin.source.clone();
        let other =
            state.packs.get(&id).filter(|p| !same_source(&p.source, &source)).map(|p| p.source.clone());
        if let (Some(old), Replace::No) = (&other, replace) {
            let _ = fs::remove_dir_all(&staged);
            return Err(StoreError::Refused(format!(
                "pack {id} is already installed from {old}; installing {source} under the same id would give it that pack's activation and workspace. To replace it, run hcpx install {} --replace (it is then deactivated, and its workspace removed unless you add --keep-workspace)",
                if origin.digest.is_some() { source.clone() } else { src.display().to_string() }
            ))
            .into());
        }
        let target = self.pack_dir(&id);
        let replaced = target.exists();
        let trash = self.temp_path(&format!("old-{id}"));
        if replaced {
            fs::rename(&target, &trash).map_err(|e| StoreError::io(&target, e))?;
        }
        if let Err(e) = fs::rename(&staged, &target) {
            if replaced {
                let _ = fs::rename(&trash, &target);
            }
            let _ = fs::remove_dir_all(&staged);
            return Err(StoreError::io(&target, e).into());
        }
        // A pack from another source starts deactivated, and without the old pack's workspace unless asked.
        // Each tenant's own choice goes with the activation: kept for the same source, gone for another.
        let before = state.packs.get(&id);
        let deactivated = other.is_some() && before.is_some_and(PackState::activated_for_any);
        let activated = other.is_none() && before.is_some_and(|p| p.activated);
        let tenants = if other.is_none() {
            before.map(|p| p.tenants.clone()).unwrap_or_default()
        } else {
            BTreeMap::new()
        };
        let mut workspace_removed = false;
        if other.is_some() && !matches!(replace, Replace::Yes { keep_workspace: true }) {
            let ws = self.path("workspaces").join(&id);
            if ws.exists() {
                let gone = self.temp_path(&format!("old-workspace-{id}"));
                workspace_removed = fs::rename(&ws, &gone).is_ok();
                let _ = fs::remove_dir_all(&gone);
            }
            // Kept in the database, every tenant's copy goes with it (each replica's copy follows at its next call).
            if self.backend.keeps_workspaces() {
                workspace_removed |= !self.backend.workspace_list(Some(&id))?.is_empty();
                self.backend.workspace_forget(&id)?;
            }
        }
        let component_sha256 = match Pack::load(&target).map(|p| p.component) {
            Ok(Some(rel)) => fs::read(target.join(rel)).ok().map(|b| crate::model::digest::sha256_hex(&b)),
            _ => None,
        };
        let files_sha256 = pack_files_digest(&target);
        // In the database the files go in before the record that names them, so no replica ever finds a record
        // whose files are not there; the files of the install it replaces go once the record moved on.
        self.backend.pack_publish(&id, &files_sha256, &target)?;
        state.packs.insert(
            id.clone(),
            PackState {
                source,
                installed_at: crate::model::clock::now_rfc3339(),
                activated,
                component_sha256,
                files_sha256: Some(files_sha256.clone()),
                tenants,
                digest: origin.digest,
                signer: origin.signer,
                signed_at: origin.signed_at,
            },
        );
        self.write_json(STATE, &state)?;
        self.backend.pack_retire(&id, Some(&files_sha256))?;
        if replaced {
            let _ = fs::remove_dir_all(&trash);
        }
        Ok(Installed { id, replaced, replaced_other: other, deactivated, workspace_removed })
    }

    /// Removes pack `id` from the store. Its workspace (user data) is kept.
    pub fn uninstall(&self, id: &str) -> Result<(), StoreError> {
        check_id(id)?;
        let _lock = self.lock()?;
        let mut state = self.state_locked()?;
        if state.packs.shift_remove(id).is_none() {
            return Err(not_installed(id, &state));
        }
        let target = self.pack_dir(id);
        let trash = self.temp_path(&format!("old-{id}"));
        if target.exists() {
            fs::rename(&target, &trash).map_err(|e| StoreError::io(&target, e))?;
        }
        self.write_json(STATE, &state)?;
        self.backend.pack_retire(id, None)?;
        let _ = fs::remove_dir_all(&trash);
        Ok(())
    }

    /// The digests this store remembers by the kernel's word on its files (`cache/digests`).
    pub fn digest_memo(&self) -> super::memo::Memo {
        super::memo::Memo::new(self.path("cache/digests"))
    }

    /// Sets the activation of every pack in `ids`, for every tenant without a choice of its own (`tenant`
    /// `None`) or for one tenant, which must be `local` or the tenant of a Principal; all packs must be
    /// installed, or nothing changes.
    pub fn set_activated(
        &self,
        ids: &[String],
        activated: bool,
        tenant: Option<&str>,
    ) -> Result<(), StoreError> {
        for id in ids {
            check_id(id)?;
        }
        if let Some(t) = tenant {
            self.check_tenant(t)?;
        }
        let _lock = self.lock()?;
        let mut state = self.state_locked()?;
        if let Some(missing) = ids.iter().find(|id| !state.packs.contains_key(*id)) {
            return Err(not_installed(missing, &state));
        }
        // A workspace kept in the database past its cap is said now, not at the first call.
        if activated {
            self.check_workspace_caps(ids, tenant)?;
        }
        for id in ids {
            if let Some(p) = state.packs.get_mut(id) {
                match tenant {
                    None => p.activated = activated,
                    Some(t) => {
                        p.tenants.insert(t.to_string(), activated);
                    }
                }
            }
        }
        self.write_json(STATE, &state)
    }

    /// A tenant an activation may name: `local` (the CLI's), one a Principal belongs to or one an OAuth issuer
    /// speaks for (`issuers.json`), so a typo is refused
    /// rather than recorded for nobody.
    pub(crate) fn check_tenant(&self, tenant: &str) -> Result<(), StoreError> {
        use super::principals::LOCAL_TENANT;
        if tenant == LOCAL_TENANT {
            return Ok(());
        }
        let principals = self.principals()?;
        let mut known: Vec<&str> = vec![LOCAL_TENANT];
        if let Some(list) = principals.as_deref() {
            known.extend(list.rows().iter().map(|r| r.tenant.as_str()));
        }
        // The tenants an OAuth issuer speaks for are as real as a Principal's.
        let issuers = self.issuers()?;
        if let Some(list) = issuers.as_deref() {
            for i in list.list() {
                known.extend(i.row.tenant.as_deref());
                known.extend(i.row.tenants.iter().map(String::as_str));
            }
        }
        if known.contains(&tenant) {
            return Ok(());
        }
        let near = crate::model::suggest::closest(tenant, known.iter().copied())
            .map(|n| format!("did you mean `{n}`? "))
            .unwrap_or_default();
        Err(StoreError::Refused(format!(
            "no Principal belongs to tenant {tenant:?}; {near}add one first with `hcpx principal add NAME --tenant {tenant}` (or an issuer with `hcpx auth issuer add … --tenant {tenant}`)"
        )))
    }
}

/// Whether two recorded sources are the same: the same directory, or the same registry repository (another
/// tag or digest of one repository is a new version of the same pack, not another pack).
fn same_source(a: &str, b: &str) -> bool {
    fn repo(s: &str) -> Option<&str> {
        let rest = s.strip_prefix("oci://")?;
        let name = rest.split('@').next().unwrap_or(rest);
        Some(match name.rsplit_once(':') {
            Some((r, t)) if !t.contains('/') => r,
            _ => name,
        })
    }
    match (repo(a), repo(b)) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn check_id(id: &str) -> Result<(), StoreError> {
    if is_pack_id(id) {
        Ok(())
    } else {
        Err(StoreError::Refused(format!(
            "{id:?} is not a pack id; pack ids are lower-case words like \"ledger\""
        )))
    }
}

pub(crate) fn not_installed(id: &str, state: &State) -> StoreError {
    StoreError::Refused(match crate::model::suggest::closest(id, state.packs.keys().map(String::as_str)) {
        Some(near) => {
            format!("pack {id} is not installed; did you mean `{near}`? otherwise install it with `hcpx install DIR`")
        }
        None => format!("pack {id} is not installed; install it with `hcpx install DIR`"),
    })
}

/// Copies the pack at `src` (or a directory of it, such as an eval fixture) into `dst` (which must not exist),
/// reading only beneath `src` and within a pack's bounds.
pub fn copy_pack(src: &Path, dst: &Path) -> Result<(), StoreError> {
    let root = Dir::open_ambient_dir(src, ambient_authority()).map_err(|e| StoreError::io(src, e))?;
    let mut budget = (MAX_PACK_ENTRIES, MAX_PACK_BYTES);
    copy_dir(&root, Path::new(""), dst, &mut budget)
}

fn copy_dir(root: &Dir, rel: &Path, dst: &Path, budget: &mut (usize, u64)) -> Result<(), StoreError> {
    let out = dst.join(rel);
    fs::create_dir_all(&out).map_err(|e| StoreError::io(&out, e))?;
    let dir = if rel.as_os_str().is_empty() {
        root.try_clone().map_err(|e| StoreError::io(dst, e))?
    } else {
        root.open_dir(rel).map_err(|e| StoreError::io(rel, e))?
    };
    let entries = dir.entries().map_err(|e| StoreError::io(rel, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(rel, e))?;
        let name = entry.file_name();
        if name == ".git" {
            continue;
        }
        let path = rel.join(&name);
        budget.0 = budget.0.checked_sub(1).ok_or_else(|| {
            StoreError::Refused(format!(
                "the pack holds more than {MAX_PACK_ENTRIES} files; a pack is a few small files"
            ))
        })?;
        // Follows links, but only while they stay inside the pack.
        let meta = root.metadata(&path).map_err(|_| {
            StoreError::Refused(format!(
                "{} is a link that leads out of the pack; replace it with the file itself",
                path.display()
            ))
        })?;
        if meta.is_dir() {
            copy_dir(root, &path, dst, budget)?;
        } else if meta.is_file() {
            budget.1 = budget.1.checked_sub(meta.len()).ok_or_else(|| {
                StoreError::Refused(format!("the pack is larger than {} MiB", MAX_PACK_BYTES / (1024 * 1024)))
            })?;
            let mut bytes = Vec::new();
            root.open(&path)
                .and_then(|f| f.take(meta.len() + 1).read_to_end(&mut bytes))
                .map_err(|e| StoreError::io(&path, e))?;
            let target = dst.join(&path);
            fs::write(&target, &bytes).map_err(|e| StoreError::io(&target, e))?;
            use cap_std::fs::PermissionsExt as _;
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o755;
            fs::set_permissions(&target, fs::Permissions::from_mode(mode))
                .map_err(|e| StoreError::io(&target, e))?;
        }
    }
    Ok(())
}
