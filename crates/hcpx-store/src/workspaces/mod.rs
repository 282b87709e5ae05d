//! One workspace on every replica (#38 point 3). On the PostgreSQL store a `workspace`-mode pack's directory
//! is kept in the database (`hcpx_workspaces`: one archive per tenant and pack, with a version and a digest)
//! and each replica's `$HCP_HOME/[tenants/T/]workspaces/<pack>` is only a copy of it. Under the workspace's
//! turn (`turns.rs`, which every call of such a pack takes), a call first brings the local copy to the stored
//! version ([`Store::workspace_checkout`]), runs, then stores the directory as the next version in one
//! transaction if it changed ([`Store::workspace_checkin`]).
//!
//! Crash safety: the row only changes in a committed transaction, and the local copy is trusted only while a
//! marker beside it (`.<pack>.version`, written after the commit) names the stored version; the marker says
//! `writing` while a call runs, so a replica killed mid-call throws its copy away and takes the stored one, and
//! names the machine's boot, so after a crash of the machine (when what reached the disk is uncertain) every
//! copy is taken from the database again.
//! The file store keeps its one directory and none of this runs.

pub mod archive;

use std::fs;
use std::path::{Path, PathBuf};

use crate::model::digest::sha256_hex;
use crate::{Store, StoreError};

/// A stored workspace's head: which version it is at, its archive's digest and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub version: i64,
    pub digest: String,
    pub size: i64,
}

/// A stored workspace as listed: whose, and how large.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub tenant: String,
    pub pack: String,
    pub size: i64,
}

/// A workspace brought to its stored version for one call; handed back to [`Store::workspace_checkin`].
#[derive(Debug)]
pub struct Checkout {
    tenant: String,
    pack: String,
    dir: PathBuf,
    /// The version (0: none stored) and digest the call started from.
    version: i64,
    digest: String,
}

/// Why a call's workspace was not kept.
#[derive(Debug, thiserror::Error)]
pub enum CheckinError {
    /// Past the cap (`max_workspace_mb`): the stored state stays the one before the call.
    #[error("pack {pack}'s workspace would hold more than max_workspace_mb ({cap_mb} MiB) in sandbox.json after this call, the most a workspace kept in the database may hold, so its changes were not kept (the workspace is as it was before the call); remove what the pack no longer needs, or raise max_workspace_mb")]
    TooLarge { pack: String, cap_mb: u64 },
    /// The directory holds what an archive cannot (a link, a device) or too many entries.
    #[error("pack {pack}'s workspace cannot be kept in the database: {why}; its changes were not kept (the workspace is as it was before the call)")]
    NotStorable { pack: String, why: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What the marker beside a local copy says.
#[derive(Debug, PartialEq, Eq)]
enum Marker {
    /// No marker: a copy from before workspaces were kept in the database (or none at all).
    Absent,
    /// A call was running in it (it may be half written).
    Writing,
    /// The copy is stored version `.0`, digest `.1`.
    At(i64, String),
}

/// The digest of the empty workspace: what a workspace with no stored row holds.
fn empty_digest() -> String {
    sha256_hex(&archive::empty())
}

fn marker_path(dir: &Path) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    dir.with_file_name(format!(".{name}.version"))
}

/// This boot of the machine (`/proc/sys/kernel/random/boot_id`): a marker written in another boot is not
/// trusted, because what the call wrote before the machine stopped may have reached the disk in part and the
/// marker not. Within one boot every process sees what another wrote, even unsynced, so no marker needs an
/// fsync; without the boot id, `writing` is synced before the call instead.
fn boot_id() -> Option<&'static str> {
    static BOOT: std::sync::LazyLock<Option<String>> = std::sync::LazyLock::new(|| {
        fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty() && !s.contains(char::is_whitespace))
    });
    BOOT.as_deref()
}

fn read_marker(dir: &Path) -> Marker {
    let text = match fs::read_to_string(marker_path(dir)) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Marker::Absent,
        Err(_) => return Marker::Writing,
    };
    // Only a whole line of this boot names a version (a torn one, or one from before the machine last stopped,
    // reads as `writing`).
    let mut words = text.trim_end().split(' ');
    if let (Some(v), Some(d), boot, None) = (words.next(), words.next(), words.next(), words.next()) {
        if let (Some(Ok(v)), 64, true) = (v.strip_prefix('v').map(str::parse), d.len(), boot == boot_id()) {
            return Marker::At(v, d.to_string());
        }
    }
    Marker::Writing
}

/// A marker's length: every one is padded to it, so one is rewritten in place without truncating the file (a
/// truncate then write makes ext4 start writing the file back on close, milliseconds on a busy disk).
const MARKER_LEN: usize = 160;

/// Writes the marker in place, with no fsync where the boot id makes one needless (above).
fn write_marker(dir: &Path, m: &Marker) -> Result<(), StoreError> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let line = match (m, boot_id()) {
        (Marker::At(v, d), Some(boot)) => format!("v{v} {d} {boot}"),
        (Marker::At(v, d), None) => format!("v{v} {d}"),
        _ => "writing".to_string(),
    };
    let text = format!("{line:<width$}\n", width = MARKER_LEN - 1);
    let p = marker_path(dir);
    let created = !p.exists();
    let f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&p)
        .map_err(|e| StoreError::io(&p, e))?;
    f.write_all_at(text.as_bytes(), 0).map_err(|e| StoreError::io(&p, e))?;
    if f.metadata().map_err(|e| StoreError::io(&p, e))?.len() != text.len() as u64 {
        f.set_len(text.len() as u64).map_err(|e| StoreError::io(&p, e))?;
    }
    if matches!(m, Marker::Writing) && boot_id().is_none() {
        f.sync_data().map_err(|e| StoreError::io(&p, e))?;
        if let (true, Some(parent)) = (created, p.parent()) {
            fs::File::open(parent).and_then(|d| d.sync_all()).map_err(|e| StoreError::io(parent, e))?;
        }
    }
    Ok(())
}

/// Replaces `dir` with `archive`'s content: written beside it, then swapped in, so `dir` is never half of one
/// and half of the other.
fn materialise(dir: &Path, archive: &[u8]) -> Result<(), StoreError> {
    let parent =
        dir.parent().ok_or_else(|| StoreError::Refused(format!("{} has no parent", dir.display())))?;
    fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
    let name = dir.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
    // What a replica killed in the middle of this left beside it (under the turn, nothing else writes here).
    if let Ok(entries) = fs::read_dir(parent) {
        let stale = [format!(".{name}.incoming-"), format!(".{name}.old-")];
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if stale.iter().any(|p| n.starts_with(p.as_str())) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
    let incoming = parent.join(crate::unique_name(&format!(".{name}.incoming")));
    archive::unpack(archive, &incoming).inspect_err(|_| {
        let _ = fs::remove_dir_all(&incoming);
    })?;
    let old = parent.join(crate::unique_name(&format!(".{name}.old")));
    if dir.exists() {
        fs::rename(dir, &old).map_err(|e| StoreError::io(dir, e))?;
    }
    fs::rename(&incoming, dir).map_err(|e| StoreError::io(dir, e))?;
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

impl Store {
    /// Whether this store keeps workspaces itself (PostgreSQL), so a call's directory is a copy of them.
    pub fn keeps_workspaces(&self) -> bool {
        self.backend.keeps_workspaces()
    }

    /// Under the workspace's turn, before a call: brings `tenant`'s directory of `pack` in `workspaces` to the
    /// stored version and marks it as being written. `None` on the file store (its directory is the workspace).
    pub fn workspace_checkout(
        &self,
        workspaces: &Path,
        tenant: &str,
        pack: &str,
    ) -> Result<Option<Checkout>, StoreError> {
        if !self.keeps_workspaces() {
            return Ok(None);
        }
        let dir = workspaces.join(pack);
        let head = self.backend.workspace_head(tenant, pack)?;
        let (version, digest) = match &head {
            Some(s) => (s.version, s.digest.clone()),
            None => (0, empty_digest()),
        };
        match (read_marker(&dir), &head) {
            (Marker::At(v, d), _) if v == version && d == digest && dir.is_dir() => {}
            // A copy from before workspaces were kept in the database, and nothing stored yet: it is adopted,
            // stored by this call's checkin as the first version.
            (Marker::Absent, None) => {}
            (_, None) => materialise(&dir, &archive::empty())?,
            (_, Some(_)) => {
                let Some((s, bytes)) = self.backend.workspace_get(tenant, pack)? else {
                    return Err(StoreError::Refused(format!(
                        "the workspace of pack {pack} (tenant {tenant}) went away while it was being read; try the call again"
                    )));
                };
                if sha256_hex(&bytes) != s.digest {
                    return Err(StoreError::Corrupt {
                        path: format!("postgres:workspace {tenant}/{pack}"),
                        reason: "its archive does not match its digest".into(),
                    });
                }
                materialise(&dir, &bytes)?;
                fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
                return self.started(Checkout {
                    tenant: tenant.into(),
                    pack: pack.into(),
                    dir,
                    version: s.version,
                    digest: s.digest,
                });
            }
        }
        fs::create_dir_all(&dir).map_err(|e| StoreError::io(&dir, e))?;
        self.started(Checkout { tenant: tenant.into(), pack: pack.into(), dir, version, digest })
    }

    /// Marks the copy as being written before the call runs in it.
    fn started(&self, c: Checkout) -> Result<Option<Checkout>, StoreError> {
        write_marker(&c.dir, &Marker::Writing)?;
        Ok(Some(c))
    }

    /// After the call, still under its turn: stores the directory as the next version when it changed (at most
    /// `cap_mb` MiB), then marks the copy as that version. Refused, the stored state stays as it was and the
    /// copy is put back to it.
    pub fn workspace_checkin(&self, c: Checkout, cap_mb: u64) -> Result<(), CheckinError> {
        let cap = cap_mb.saturating_mul(1 << 20);
        let refused = |e: CheckinError| -> CheckinError {
            // Put the copy back to the stored state; failing that, the marker still says `writing`, so the next
            // call takes the stored one.
            if let Ok(Some((s, bytes))) = self.backend.workspace_get(&c.tenant, &c.pack) {
                if materialise(&c.dir, &bytes).is_ok() {
                    let _ = write_marker(&c.dir, &Marker::At(s.version, s.digest));
                }
            } else if c.version == 0 && materialise(&c.dir, &archive::empty()).is_ok() {
                let _ = write_marker(&c.dir, &Marker::At(0, empty_digest()));
            }
            e
        };
        let bytes = match archive::pack(&c.dir, cap) {
            Ok(b) => b,
            Err(archive::ArchiveError::TooBig { what: "bytes", .. }) => {
                return Err(refused(CheckinError::TooLarge { pack: c.pack.clone(), cap_mb }))
            }
            Err(archive::ArchiveError::Store(e)) => return Err(e.into()),
            Err(e) => {
                return Err(refused(CheckinError::NotStorable { pack: c.pack.clone(), why: e.to_string() }))
            }
        };
        let digest = sha256_hex(&bytes);
        if digest == c.digest {
            write_marker(&c.dir, &Marker::At(c.version, digest))?;
            return Ok(());
        }
        let version = self.backend.workspace_put(&c.tenant, &c.pack, c.version, bytes, &digest)?;
        write_marker(&c.dir, &Marker::At(version, digest))?;
        Ok(())
    }

    /// The stored workspaces (of pack `pack`, or all), with their sizes.
    pub fn stored_workspaces(&self, pack: Option<&str>) -> Result<Vec<Listed>, StoreError> {
        self.backend.workspace_list(pack)
    }

    /// Refuses to activate `ids` (for `tenant`, or every tenant) while a stored workspace of one of them is
    /// past `max_workspace_mb`: every call of it would be refused, so it is said now, not at the first call.
    pub fn check_workspace_caps(&self, ids: &[String], tenant: Option<&str>) -> Result<(), StoreError> {
        if !self.keeps_workspaces() {
            return Ok(());
        }
        let cap_mb = self.sandbox()?.limits().max_workspace_mb;
        for id in ids {
            if let Some(w) = self.workspace_past(Some(id), tenant, cap_mb)? {
                return Err(StoreError::Refused(too_large_to_activate(&w, cap_mb)));
            }
        }
        Ok(())
    }

    /// The first stored workspace (of `pack`, or any pack; of `tenant`, or any tenant) holding more than
    /// `cap_mb` MiB.
    pub fn workspace_past(
        &self,
        pack: Option<&str>,
        tenant: Option<&str>,
        cap_mb: u64,
    ) -> Result<Option<Listed>, StoreError> {
        let cap = cap_mb.saturating_mul(1 << 20);
        Ok(self
            .stored_workspaces(pack)?
            .into_iter()
            .find(|w| tenant.is_none_or(|t| t == w.tenant) && w.size as u64 > cap))
    }
}

impl Listed {
    /// The least `max_workspace_mb` that holds it.
    pub fn mib_needed(&self) -> u64 {
        (self.size as u64).div_ceil(1 << 20)
    }
}

/// What the files under `dir` hold, in bytes (links and what cannot be read count nothing).
pub fn dir_size(dir: &Path) -> i64 {
    let mut total = 0i64;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > archive::MAX_ENTRIES {
                return total;
            }
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map(|m| m.len() as i64).unwrap_or(0),
                _ => {}
            }
        }
    }
    total
}

/// The refusal of an activation (or an import) whose workspace is past the cap.
pub fn too_large_to_activate(w: &Listed, cap_mb: u64) -> String {
    format!(
        "pack {}'s workspace of tenant {} holds {} KiB, past max_workspace_mb ({cap_mb} MiB) in sandbox.json, so every call that leaves it that large would be refused; raise max_workspace_mb in sandbox.json to at least {} MiB first",
        w.pack,
        w.tenant,
        w.size / 1024,
        w.mib_needed()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_says_what_the_copy_is() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ledger");
        assert_eq!(read_marker(&dir), Marker::Absent);
        let digest = "a".repeat(64);
        write_marker(&dir, &Marker::At(3, digest.clone())).unwrap();
        assert_eq!(read_marker(&dir), Marker::At(3, digest.clone()));
        // Torn: a prefix of a version line is no version.
        fs::write(t.path().join(".ledger.version"), format!("v3 {}", &digest[..20])).unwrap();
        assert_eq!(read_marker(&dir), Marker::Writing);
        // Written in another boot of the machine: not trusted.
        if boot_id().is_some() {
            fs::write(t.path().join(".ledger.version"), format!("v3 {digest} another-boot\n")).unwrap();
            assert_eq!(read_marker(&dir), Marker::Writing);
        }
        assert!(t.path().join(".ledger.version").is_file(), "beside the directory, not in it");
        write_marker(&dir, &Marker::Writing).unwrap();
        assert_eq!(read_marker(&dir), Marker::Writing);
    }

    #[test]
    fn materialising_replaces_the_whole_directory() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("ws");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stale"), b"x").unwrap();
        let src = t.path().join("src");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("fresh"), b"y").unwrap();
        // Left by a replica killed while it materialised.
        fs::create_dir_all(t.path().join(".ws.incoming-1-2-3/x")).unwrap();
        fs::create_dir_all(t.path().join(".ws.old-1-2-3")).unwrap();
        materialise(&dir, &archive::pack(&src, u64::MAX).unwrap()).unwrap();
        assert!(dir.join("fresh").is_file() && !dir.join("stale").exists());
        let left: Vec<_> = fs::read_dir(t.path()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(left.len(), 2, "nothing left beside it: {left:?}");
    }
}
