//! `hcpx store export DIR` and `hcpx store import DIR`: a PostgreSQL store to a file store and back, so an
//! operator can move a one-machine runtime into the database (and take it out again) without losing a grant,
//! a credential, a pack, an audit line or a Sense event.
//!
//! Export writes a file store at DIR (credentials opened with the seal key and written owner-only, each named in
//! what it reports: a file store holds them so) plus each
//! tenant's audit chain verbatim as `audit/<tenant>.log` and `audit/<tenant>.head`, which `hcpx audit verify
//! --log` checks as the database did. Import refuses a non-empty database and a file store whose own chain is
//! broken; exported chains go back in verbatim, and the file store's own lines (one chain for every tenant)
//! are appended to their tenants' chains.

use serde::Serialize;
use std::path::Path;

use super::Db;
use crate::audit::AuditHead;
use crate::packs::{pack_files_digest, State};
use crate::principals::LOCAL_TENANT;
use crate::sense::SenseEvent;
use crate::{Store, StoreError};

/// What a transfer moved.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Moved {
    pub documents: usize,
    pub credentials: usize,
    pub packs: usize,
    pub audit_lines: usize,
    pub sense_events: usize,
    /// The credential documents an export wrote opened (the file store keeps credentials as owner-only files,
    /// not sealed): their paths, never their values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unsealed: Vec<String>,
    /// Workspaces of `workspace`-mode packs (`crate::workspaces`), each tenant's of each pack one.
    pub workspaces: usize,
}

fn write(dir: &Path, rel: &str, bytes: &[u8], mode: u32) -> Result<(), StoreError> {
    let target = dir.join(rel);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| StoreError::io(parent, e))?;
    }
    crate::write_atomic(&target, bytes, mode).map_err(|e| StoreError::io(&target, e))
}

/// Writes the database store `db` as a file store at `dir`, which must be missing or empty.
pub fn export(db: &Db, dir: &Path) -> Result<Moved, StoreError> {
    if std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(StoreError::Refused(format!(
            "{} is not empty; export into a new directory",
            dir.display()
        )));
    }
    let out = Store::open(dir)?;
    let mut moved = Moved::default();
    for path in db.doc_list("")? {
        let Some(text) = db.doc_text(&path)? else { continue };
        let secret = super::seal::is_secret(&path);
        // The request-state key and the approvals (their cards) are as private as the Principals.
        let private = secret
            || path.ends_with("principals.json")
            || path.ends_with(crate::issuers::ISSUERS_FILE)
            || path.ends_with("connections.json")
            || path == crate::REQUEST_STATE_KEY
            || path.starts_with(&format!("{}/", crate::approvals::APPROVALS_DIR));
        write(dir, &path, text.as_bytes(), if private { 0o600 } else { 0o644 })?;
        if secret {
            moved.credentials += 1;
            moved.unsealed.push(path.clone());
        } else {
            moved.documents += 1;
        }
    }
    let state: State = out.read_json("state.json")?.unwrap_or_default();
    for (id, record) in &state.packs {
        let Some(digest) = &record.files_sha256 else { continue };
        let target = out.pack_dir(id);
        db.pack_fetch(id, digest, &target)?;
        if pack_files_digest(&target) != *digest {
            return Err(StoreError::Refused(format!(
                "the files of pack {id} in the database do not match its recorded digest; it was not exported"
            )));
        }
        moved.packs += 1;
    }
    for chain in db.audit_chains(None)? {
        let mut text = chain.lines.join("\n");
        if !text.is_empty() {
            text.push('\n');
        }
        write(dir, &format!("audit/{}.log", chain.tenant), text.as_bytes(), 0o600)?;
        let head = serde_json::to_string_pretty(&chain.head)
            .map_err(|e| StoreError::Corrupt { path: "audit head".into(), reason: e.to_string() })?;
        write(dir, &format!("audit/{}.head", chain.tenant), head.as_bytes(), 0o600)?;
        moved.audit_lines += chain.lines.len();
    }
    for w in db.workspace_list(None)? {
        let Some((_, bytes)) = db.workspace_get(&w.tenant, &w.pack)? else { continue };
        let base = dir.join(crate::tenant_dir(&w.tenant)?).join("workspaces");
        std::fs::create_dir_all(&base).map_err(|e| StoreError::io(&base, e))?;
        crate::workspaces::archive::unpack(&bytes, &base.join(&w.pack))?;
        moved.workspaces += 1;
    }
    for tenant in db.sense_tenants()? {
        let events = db.sense_after(&tenant, 0)?;
        let mut text = String::new();
        for e in &events {
            let line = serde_json::to_string(e)
                .map_err(|x| StoreError::Corrupt { path: "sense".into(), reason: x.to_string() })?;
            text.push_str(&line);
            text.push('\n');
        }
        write(dir, &out.sense_log(&tenant)?.to_string_lossy(), text.as_bytes(), 0o600)?;
        moved.sense_events += events.len();
    }
    Ok(moved)
}

/// The store's JSON documents under `dir` (relative paths), leaving out packs, workspaces, temp files, caches,
/// audit and Sense logs.
fn documents(dir: &Path) -> Result<Vec<String>, StoreError> {
    let mut out = Vec::new();
    // MCP sessions are a replica's clients' and stay behind (their clients open new ones).
    let skip = ["packs", "workspaces", "tmp", "cache", "audit", "sense", crate::mcp_sessions::SESSIONS_DIR];
    let mut stack = vec![(dir.to_path_buf(), String::new(), 0usize)];
    while let Some((abs, rel, depth)) = stack.pop() {
        let entries = std::fs::read_dir(&abs).map_err(|e| StoreError::io(&abs, e))?;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && !skip.contains(&name.as_str()) && depth < 4 {
                stack.push((e.path(), child, depth + 1));
            } else if t.is_file() && name.ends_with(".json") && !name.starts_with('.') {
                out.push(child);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Loads the file store at `dir` into the database store `db`, which must be empty.
pub fn import(db: &Db, dir: &Path) -> Result<Moved, StoreError> {
    if !dir.join("state.json").exists()
        && !dir.join("principals.json").exists()
        && !dir.join("audit").exists()
    {
        return Err(StoreError::Refused(format!(
            "{} holds no store (no state.json, principals.json or audit/); name the HCP_HOME to import",
            dir.display()
        )));
    }
    if !db.is_empty()? {
        return Err(StoreError::Refused(format!(
            "the database {} already holds a store; import into an empty database (or export it first)",
            db.shown()
        )));
    }
    let src = Store::open(dir)?;
    // Nothing of a file store whose chain is broken is taken: the evidence would be laundered into the database.
    let verified = src.verify_audit(None)?;
    if let Some(b) = verified.broken {
        return Err(StoreError::Refused(format!(
            "the audit chain of {} is broken ({}: {}); nothing was imported",
            dir.display(),
            b.kind.as_str(),
            b.message
        )));
    }
    let mut exported = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir.join("audit")) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "log") {
                let v = crate::chain::verify_exported(&p, None)?;
                if let Some(b) = v.broken {
                    return Err(StoreError::Refused(format!(
                        "exported audit chain {} is broken ({}: {}); nothing was imported",
                        p.display(),
                        b.kind.as_str(),
                        b.message
                    )));
                }
                exported.push(p);
            }
        }
    }
    exported.sort();
    // Everything is read and checked before anything is written.
    let mut docs = Vec::new();
    for rel in documents(dir)? {
        let text = std::fs::read_to_string(dir.join(&rel)).map_err(|e| StoreError::io(&dir.join(&rel), e))?;
        serde_json::from_str::<serde_json::Value>(&text).map_err(|e| StoreError::Corrupt {
            path: dir.join(&rel).display().to_string(),
            reason: e.to_string(),
        })?;
        if super::seal::is_secret(&rel) && db.sealer().is_none() {
            return Err(StoreError::Refused(format!(
                "{rel} holds credentials, which the database keeps sealed, and HCP_SEAL_KEY_FILE is not set; nothing was imported"
            )));
        }
        docs.push((rel, text));
    }
    let state: State = src.read_json("state.json")?.unwrap_or_default();
    for (id, record) in &state.packs {
        if pack_files_digest(&src.pack_dir(id)) != record.files_sha256.clone().unwrap_or_default() {
            return Err(StoreError::Refused(format!(
                "installed pack {id} in {} does not match its recorded digest; reinstall it there, then import (nothing was imported)",
                dir.display()
            )));
        }
    }
    let workspaces = workspaces_of(&src, dir)?;
    let mut moved = Moved::default();
    for (id, record) in &state.packs {
        db.pack_upload(id, &record.files_sha256.clone().unwrap_or_default(), &src.pack_dir(id))?;
        moved.packs += 1;
    }
    for (rel, text) in docs {
        db.doc_put(&rel, text)?;
        if super::seal::is_secret(&rel) {
            moved.credentials += 1;
        } else {
            moved.documents += 1;
        }
    }
    for (tenant, pack, bytes) in workspaces {
        let digest = crate::model::digest::sha256_hex(&bytes);
        db.workspace_put(&tenant, &pack, 0, bytes, &digest)?;
        moved.workspaces += 1;
    }
    for p in &exported {
        let tenant = p.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let head_text = std::fs::read_to_string(p.with_extension("head"))
            .map_err(|e| StoreError::io(&p.with_extension("head"), e))?;
        let head: AuditHead = serde_json::from_str(&head_text).map_err(|e| StoreError::Corrupt {
            path: p.with_extension("head").display().to_string(),
            reason: e.to_string(),
        })?;
        let text = std::fs::read_to_string(p).map_err(|e| StoreError::io(p, e))?;
        let lines: Vec<String> = text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect();
        moved.audit_lines += lines.len();
        db.audit_put_chain(&super::audit::Chain { tenant, head, lines })?;
    }
    for rec in src.audit()? {
        db.audit_append(&crate::audit::AuditRecord { prev: None, ..rec }, None)?;
        moved.audit_lines += 1;
    }
    let mut sense_logs = vec![(LOCAL_TENANT.to_string(), dir.join(src.sense_log(LOCAL_TENANT)?))];
    if let Ok(entries) = std::fs::read_dir(dir.join("tenants")) {
        for e in entries.flatten() {
            let t = e.file_name().to_string_lossy().to_string();
            // A directory whose name no tenant can have is not a tenant's; it is skipped, never joined.
            if let Ok(rel) = src.sense_log(&t) {
                sense_logs.push((t, dir.join(rel)));
            }
        }
    }
    for (tenant, path) in sense_logs {
        let Ok(text) = std::fs::read_to_string(&path) else { continue };
        let events = text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str::<SenseEvent>(l).map_err(|e| StoreError::Corrupt {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if !events.is_empty() {
            db.sense_put(&tenant, &events)?;
            moved.sense_events += events.len();
        }
    }
    Ok(moved)
}

/// The workspaces of the file store `src` at `dir` (the local tenant's and each tenant's), archived as the
/// database keeps them; one past `max_workspace_mb` of the store's own sandbox.json, or holding a link, refuses
/// the import, said now rather than at the pack's first call.
fn workspaces_of(src: &Store, dir: &Path) -> Result<Vec<(String, String, Vec<u8>)>, StoreError> {
    use crate::workspaces::archive::{self, ArchiveError};
    let cap_mb = src.sandbox()?.limits().max_workspace_mb;
    let mut tenants = vec![LOCAL_TENANT.to_string()];
    if let Ok(entries) = std::fs::read_dir(dir.join("tenants")) {
        tenants.extend(entries.flatten().map(|e| e.file_name().to_string_lossy().to_string()));
    }
    let mut out = Vec::new();
    for tenant in tenants {
        // A directory whose name no tenant can have is not a tenant's; it is skipped, never joined.
        let Ok(rel) = crate::tenant_dir(&tenant) else { continue };
        let Ok(entries) = std::fs::read_dir(dir.join(rel).join("workspaces")) else { continue };
        let mut packs: Vec<_> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| (e.file_name().to_string_lossy().to_string(), e.path()))
            .filter(|(name, _)| !name.starts_with('.'))
            .collect();
        packs.sort();
        for (pack, path) in packs {
            let bytes = archive::pack(&path, cap_mb.saturating_mul(1 << 20)).map_err(|e| match e {
                ArchiveError::TooBig { what: "bytes", .. } => {
                    let size = crate::workspaces::dir_size(&path);
                    let w = crate::workspaces::Listed { tenant: tenant.clone(), pack: pack.clone(), size };
                    StoreError::Refused(format!(
                        "{}; nothing was imported",
                        crate::workspaces::too_large_to_activate(&w, cap_mb)
                    ))
                }
                ArchiveError::Store(e) => e,
                e => StoreError::Refused(format!(
                    "pack {pack}'s workspace of tenant {tenant} ({}) cannot be kept in the database: {e}; nothing was imported",
                    path.display()
                )),
            })?;
            if !archive::is_empty(&bytes) {
                out.push((tenant.clone(), pack, bytes));
            }
        }
    }
    Ok(out)
}
