//! `hcpx credential set|rm|list`: the local credential hub; values come from stdin and are never printed.

use serde_json::json;
use std::io::Read;

use super::{exit, fail, open_store, CredentialCmd};
use crate::output::Printer;
use hcpx_store::principals::LOCAL_TENANT;

/// Runs `hcpx credential …`.
pub fn run(p: &Printer, c: &CredentialCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        CredentialCmd::Set { family, field, principal, tenant } => {
            let mut value = String::new();
            if let Err(e) = std::io::stdin().take(64 * 1024).read_to_string(&mut value) {
                return Ok(fail(p, &format!("cannot read the value from stdin: {e}")));
            }
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            // A family only `user`-mode packs use is stored per Principal: the local one unless another is named.
            let user_only = principal.is_none() && user_only_family(&store, family);
            if user_only && tenant != LOCAL_TENANT {
                return Ok(fail(
                    p,
                    &format!("family {family} is used with user Binding: name the tenant's Principal with --principal"),
                ));
            }
            let principal = principal.clone().or_else(|| {
                user_only.then(|| {
                    hcpx_model::Principal::local(hcpx_model::grants::Grants::All, hcpx_model::Invoker::Cli).id
                })
            });
            match store.credential_set(tenant, family, principal.as_deref(), field, value) {
                Ok(()) => {
                    if p.json {
                        p.json_doc(
                            &json!({ "ok": true, "family": family, "field": field, "principal": principal }),
                        );
                    } else {
                        match &principal {
                            Some(who) => p.message(&format!(
                                "stored {family}.{field} for principal {who} (user Binding)"
                            )),
                            None => p.message(&format!("stored {family}.{field}")),
                        }
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(p, &e.to_string())),
            }
        }
        CredentialCmd::Rm { family, field, principal, tenant } => {
            match store.credential_rm(tenant, family, principal.as_deref(), field.as_deref()) {
                Ok(()) => {
                    // The packs minting from it announce binding.degraded (docs/sense.md); the removal stands
                    // even when that cannot be recorded.
                    let degraded = hcpx_runtime::sense::credential_removed(
                        &store,
                        tenant,
                        family,
                        principal.as_deref(),
                        field.as_deref(),
                    );
                    if let Err(e) = &degraded {
                        p.message(&format!("warning: binding.degraded not recorded: {e}"));
                    }
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "family": family, "field": field }));
                    } else {
                        p.message(&format!(
                            "removed {family}{}",
                            field.as_ref().map(|f| format!(".{f}")).unwrap_or_default()
                        ));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(p, &e.to_string())),
            }
        }
        CredentialCmd::Allow { family, packs } | CredentialCmd::Disallow { family, packs } => {
            let allow = matches!(c, CredentialCmd::Allow { .. });
            match store.edit_family(family, packs, allow) {
                Ok(list) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "family": family, "allowed": list }));
                    } else {
                        p.message(&format!("family {family} may be used by: {}", list.join(", ")));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(p, &e.to_string())),
            }
        }
        CredentialCmd::List { tenant } => match store.credential_list(tenant) {
            Ok(list) => {
                if p.json {
                    p.json_doc(&json!({ "ok": true, "families": list }));
                } else {
                    for (fam, fields) in &list {
                        p.data(&format!("{fam}: {}", fields.join(", ")));
                    }
                }
                Ok(exit::OK)
            }
            Err(e) => Ok(fail(p, &e.to_string())),
        },
        CredentialCmd::RotateKey { to } => rotate_key(p, &store, to),
    }
}

/// `hcpx credential rotate-key --to FILE`: every sealed credential opened with the current key
/// (`HCP_SEAL_KEY_FILE`) and sealed again under FILE's, in one transaction.
fn rotate_key(p: &Printer, store: &hcpx_store::Store, to: &std::path::Path) -> anyhow::Result<u8> {
    let Some(db) = store.db() else {
        return Ok(fail(
            p,
            "the file store keeps credentials as owner-only files, not sealed; rotate-key is for a PostgreSQL store (set HCP_STORE)",
        ));
    };
    let new = match hcpx_store::pg::seal::Sealer::from_file(to) {
        Ok(k) => k,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    match db.reseal(&new) {
        Ok(n) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "resealed": n, "key_id": new.id() }));
            } else {
                p.message(&format!(
                    "{n} credential document(s) sealed under key {}; now point HCP_SEAL_KEY_FILE at {} on every replica",
                    new.id(),
                    to.display()
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// Whether every installed pack that uses `family` uses it with a `user` Binding (and at least one does).
fn user_only_family(store: &hcpx_store::Store, family: &str) -> bool {
    use hcpx_pack::pack::BindingMode;
    let Ok(state) = store.state() else { return false };
    let modes: Vec<BindingMode> = state
        .packs
        .keys()
        .filter_map(|id| store.load_pack(id).ok().flatten())
        .filter(|p| {
            p.binding.family == family && matches!(p.binding.mode, BindingMode::Local | BindingMode::User)
        })
        .map(|p| p.binding.mode)
        .collect();
    !modes.is_empty() && modes.iter().all(|m| *m == BindingMode::User)
}
