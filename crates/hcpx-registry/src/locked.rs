//! `hcpx install --locked` with no reference: every pack `hcp.lock` pins, each exactly at its digest and signer,
//! all or nothing, as a hosted deployment runs what it reviewed. Every pack is pulled, verified and linted
//! before the first one is installed, so a refusal there changes nothing; a failure while installing (the
//! store's own I/O) puts back what this run had already changed.

use std::path::PathBuf;

use super::lock::{LockEntry, LockFile};
use super::{pull, DistError, PackRef, PullOptions, Pulled, RegistryInstall};
use crate::store::packs::{copy_pack, Origin, Replace};
use crate::store::Store;

/// Why a locked install of the whole lock file stopped.
#[derive(Debug, thiserror::Error)]
pub enum LockedError {
    #[error("{file} pins no pack; write it with hcpx lock after installing the packs to pin")]
    Empty { file: String },
    #[error("pack {id} ({reference}) was refused: {source}; nothing was installed")]
    Refused { id: String, reference: String, source: Box<DistError> },
    #[error("pack {id} ({reference}) could not be installed: {source}; {undone}")]
    Install { id: String, reference: String, source: Box<DistError>, undone: String },
}

/// The packs a locked install put in the store, in lock order.
pub type Done = Vec<RegistryInstall>;

/// A pack verified and ready to install.
struct Ready<'a> {
    entry: &'a LockEntry,
    reference: PackRef,
    pulled: Pulled,
}

/// A pack that was in the store before, copied aside so a failed run can put it back.
struct Before {
    id: String,
    origin: Origin,
    copy: PathBuf,
}

fn refused(e: &LockEntry, source: DistError) -> LockedError {
    LockedError::Refused { id: e.id.clone(), reference: e.reference.clone(), source: Box::new(source) }
}

/// Installs every pack of `lock` at its pinned digest and signer (`base` gives the registry options and
/// `--allow-unsigned`); `file` names the lock file in messages.
pub fn install_all(
    store: &Store,
    lock: &LockFile,
    file: &str,
    base: &PullOptions,
    replace: Replace,
) -> Result<Done, LockedError> {
    if lock.packs.is_empty() {
        return Err(LockedError::Empty { file: file.to_string() });
    }
    // 1. Verify everything: references, pins, signatures, digests, lint, ids, conflicts. Nothing is installed.
    let state = store.state().map_err(|e| refused(&lock.packs[0], e.into()))?;
    let mut ready = Vec::new();
    for (i, e) in lock.packs.iter().enumerate() {
        if lock.packs[..i].iter().any(|o| o.id == e.id) {
            return Err(refused(
                e,
                DistError::Lock(format!("{file} pins pack {} twice; write it again with hcpx lock", e.id)),
            ));
        }
        let r = PackRef::parse(&e.reference).map_err(|x| refused(e, x))?;
        if e.signer.is_none() && !base.allow_unsigned {
            return Err(refused(
                e,
                DistError::Lock(format!(
                    "{file} pins it unsigned; installing it again takes --allow-unsigned"
                )),
            ));
        }
        let opts = PullOptions {
            expect_digest: Some(e.digest.clone()),
            expect_signer: e.signer.clone(),
            ..base.clone()
        };
        let pulled = pull(store, &r, &opts).map_err(|x| refused(e, x))?;
        let report = crate::lint::lint_dir(&pulled.dir);
        if !report.ok {
            let issues: Vec<String> = report.issues.iter().map(|i| i.message.clone()).collect();
            return Err(refused(e, DistError::Artifact(format!("it fails lint: {}", issues.join("; ")))));
        }
        if report.pack_id.as_deref() != Some(e.id.as_str()) {
            return Err(refused(
                e,
                DistError::Lock(format!(
                    "{file} pins pack {} there, but the artifact is pack {}",
                    e.id,
                    report.pack_id.unwrap_or_default()
                )),
            ));
        }
        if let (Some(old), Replace::No) = (state.packs.get(&e.id), replace) {
            if old.source != e.reference {
                return Err(refused(
                    e,
                    DistError::Lock(format!(
                        "pack {} is installed from {}, not from the locked reference; pass --replace to replace it",
                        e.id, old.source
                    )),
                ));
            }
        }
        ready.push(Ready { entry: e, reference: r, pulled });
    }
    // 2. Copy aside what will be replaced, then install in lock order.
    let aside = tempfile::tempdir()
        .map_err(|x| refused(&lock.packs[0], DistError::Io { path: "temp dir".into(), source: x }))?;
    let mut before = Vec::new();
    for p in &ready {
        if let Some(old) = state.packs.get(&p.entry.id) {
            let copy = aside.path().join(&p.entry.id);
            copy_pack(&store.pack_dir(&p.entry.id), &copy).map_err(|x| refused(p.entry, x.into()))?;
            let origin = Origin {
                source: old.source.clone(),
                digest: old.digest.clone(),
                signer: old.signer.clone(),
                signed_at: old.signed_at,
            };
            before.push(Before { id: p.entry.id.clone(), origin, copy });
        }
    }
    let mut done: Done = Vec::new();
    for p in ready {
        match super::install_pulled(store, &p.reference, p.pulled, replace) {
            Ok(d) => done.push(d),
            Err(x) => {
                let undone = undo(store, &done, &before);
                return Err(LockedError::Install {
                    id: p.entry.id.clone(),
                    reference: p.entry.reference.clone(),
                    source: Box::new(x),
                    undone,
                });
            }
        }
    }
    Ok(done)
}

/// Puts the store back after a failed run: packs this run added are uninstalled, packs it replaced are installed
/// again from their copies with their old source, digest and signer. Says what it did.
fn undo(store: &Store, done: &Done, before: &[Before]) -> String {
    let mut notes = Vec::new();
    for d in done.iter().rev() {
        let id = &d.installed.id;
        let result = match before.iter().find(|b| &b.id == id) {
            Some(b) => store
                .install_origin(&b.copy, b.origin.clone(), Replace::Yes { keep_workspace: true })
                .map(|_| format!("{id} put back as it was"))
                .map_err(|e| e.to_string()),
            None => store.uninstall(id).map(|_| format!("{id} uninstalled again")).map_err(|e| e.to_string()),
        };
        notes.push(result.unwrap_or_else(|e| format!("{id} left at the locked version ({e})")));
    }
    if notes.is_empty() {
        "nothing was installed".to_string()
    } else {
        format!("the packs installed before it were undone: {}", notes.join(", "))
    }
}
