//! `hcpx install oci://…`: pull, verify (signature, digests, sizes) and install a pack from a registry, pinned
//! by hcp.lock with `--locked` (with no reference: every pack it pins, all or nothing); an unsigned pack only
//! with `--allow-unsigned`.

use serde_json::json;

use super::{exit, fail, open_store, InstallArgs};
use crate::output::Printer;
use hcpx_registry::{self as distribution, lock, PackRef, PullOptions, RegistryInstall};
use hcpx_store::packs::Replace;

/// `hcpx install oci://host/repo:tag|@sha256:…`.
pub fn install(p: &Printer, a: &InstallArgs, reference: &str) -> anyhow::Result<u8> {
    let r = match PackRef::parse(reference) {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    let mut opts = PullOptions {
        registry: a.registry.options(),
        allow_unsigned: a.allow_unsigned,
        allow_downgrade: a.allow_downgrade,
        reviewed: a.yes,
        ..Default::default()
    };
    if a.locked {
        let lockfile = match lock::read(&a.lock_file) {
            Ok(l) => l,
            Err(e) => return Ok(fail(p, &e.to_string())),
        };
        let plain = PackRef { digest: None, ..r.clone() }.to_string();
        let entry = lockfile.packs.iter().find(|e| e.reference == plain || e.reference == r.to_string());
        let Some(entry) = entry else {
            return Ok(fail(p, &format!(
                "{} pins no pack installed from {reference}; install only what it lists, or run hcpx lock again after reviewing this one",
                a.lock_file.display()
            )));
        };
        if let Some(d) = &r.digest {
            if *d != entry.digest {
                return Ok(fail(
                    p,
                    &format!(
                        "{reference} names digest {d}, but {} pins {}; nothing was installed",
                        a.lock_file.display(),
                        entry.digest
                    ),
                ));
            }
        }
        // The tag is resolved and must still name the pinned digest (a moved tag is refused); with the registry
        // unreachable, the pinned digest installs from the cache.
        opts.expect_digest = Some(entry.digest.clone());
        opts.expect_signer = entry.signer.clone();
        if entry.signer.is_none() && !a.allow_unsigned {
            return Ok(fail(
                p,
                &format!(
                    "{} pins {reference} unsigned; installing it again takes --allow-unsigned",
                    a.lock_file.display()
                ),
            ));
        }
    }
    let store = open_store()?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    match distribution::install(&store, &r, &opts, replace) {
        Ok(done) => {
            let id = &done.installed.id;
            let signer = done.signer.as_ref().map(|s| format!("{} ({})", s.name, s.fingerprint));
            if p.json {
                let mut doc = serde_json::Map::from_iter([("ok".to_string(), json!(true))]);
                doc.extend(installed_json(&done));
                doc.insert("path".into(), json!(store.pack_dir(id)));
                p.json_doc(&doc);
            } else {
                match &signer {
                    Some(s) => p.message(&format!("verified {} signed by {s}", done.digest)),
                    None => p.message(&format!(
                        "installed {} WITHOUT a trusted signature (--allow-unsigned, written to the audit log)",
                        done.digest
                    )),
                }
                p.message(&format!(
                    "{} {id} from {}{} into {}",
                    if done.installed.replaced { "reinstalled" } else { "installed" },
                    done.reference,
                    if done.from_cache { " (cached)" } else { "" },
                    store.pack_dir(id).display()
                ));
                if done.installed.deactivated {
                    p.message(&format!("it is not active: review it, then run hcpx activate {id}"));
                } else {
                    p.message(&format!("next: hcpx activate {id}"));
                }
            }
            Ok(exit::OK)
        }
        Err(distribution::DistError::Install(hcpx_store::packs::InstallError::Lint { issues, .. })) => {
            Ok(fail(
                p,
                &format!(
                    "the pack at {reference} fails lint with {} issue(s) ({}); nothing was installed",
                    issues.len(),
                    issues.iter().map(|i| i.message.clone()).collect::<Vec<_>>().join("; ")
                ),
            ))
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// What `--json` says of one pack a registry install put in the store (both install forms).
fn installed_json(d: &RegistryInstall) -> serde_json::Map<String, serde_json::Value> {
    let signer = d.signer.as_ref().map(|s| json!({ "name": s.name, "fingerprint": s.fingerprint }));
    [
        ("pack_id", json!(d.installed.id)),
        ("reference", json!(d.reference.to_string())),
        ("digest", json!(d.digest)),
        ("signer", json!(signer)),
        ("replaced", json!(d.installed.replaced)),
        ("from_cache", json!(d.from_cache)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// `hcpx install --locked` with no reference: every pack hcp.lock pins, at its digest and signer, all or nothing.
pub fn install_locked(p: &Printer, a: &InstallArgs) -> anyhow::Result<u8> {
    let file = a.lock_file.display().to_string();
    let lockfile = match lock::read(&a.lock_file) {
        Ok(l) => l,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    let base = PullOptions {
        registry: a.registry.options(),
        allow_unsigned: a.allow_unsigned,
        ..Default::default()
    };
    let store = open_store()?;
    let replace = if a.replace { Replace::Yes { keep_workspace: a.keep_workspace } } else { Replace::No };
    match distribution::locked::install_all(&store, &lockfile, &file, &base, replace) {
        Ok(done) => {
            if p.json {
                let packs: Vec<_> = done.iter().map(installed_json).collect();
                p.json_doc(&json!({ "ok": true, "lock_file": file, "packs": packs }));
            } else {
                for d in &done {
                    let signer = match &d.signer {
                        Some(s) => format!("signed by {} ({})", s.name, s.fingerprint),
                        None => {
                            "WITHOUT a trusted signature (--allow-unsigned, written to the audit log)".into()
                        }
                    };
                    p.message(&format!(
                        "{} {} {} from {}{}, {signer}",
                        if d.installed.replaced { "reinstalled" } else { "installed" },
                        d.installed.id,
                        d.digest,
                        d.reference,
                        if d.from_cache { " (cached)" } else { "" },
                    ));
                }
                p.message(&format!("{} pack(s) installed exactly as {file} pins them", done.len()));
                let off: Vec<&str> = done
                    .iter()
                    .filter(|d| d.installed.deactivated)
                    .map(|d| d.installed.id.as_str())
                    .collect();
                if !off.is_empty() {
                    p.message(&format!("not active: {}; review, then hcpx activate ID", off.join(", ")));
                }
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}
