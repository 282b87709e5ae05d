//! `hcpx trust add|remove|list`: the keys trusted to sign packs, each for a registry prefix.

use serde_json::json;

use super::{exit, fail, open_store, TrustCmd};
use crate::output::Printer;
use hcpx_registry::trust;

/// Runs `hcpx trust …`.
pub fn run(p: &Printer, c: &TrustCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        TrustCmd::Add { name, key, prefix } => {
            let pem = match std::fs::read_to_string(key) {
                Ok(t) => t,
                Err(e) => {
                    return Ok(fail(
                        p,
                        &format!("cannot read key {}: {}", key.display(), hcpx_model::io_reason(&e)),
                    ))
                }
            };
            match trust::add(&store, name, &pem, prefix) {
                Ok(k) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "name": k.name, "prefix": k.prefix, "fingerprint": k.fingerprint }));
                    } else {
                        p.message(&format!(
                            "trusted key {} ({}) for packs under {}",
                            k.name, k.fingerprint, k.prefix
                        ));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(p, &format!("{}: {e}", key.display()))),
            }
        }
        TrustCmd::Remove { name } => match trust::remove(&store, name) {
            Ok(true) => {
                if p.json {
                    p.json_doc(&json!({ "ok": true, "removed": name }));
                } else {
                    p.message(&format!("removed trusted key {name}"));
                }
                Ok(exit::OK)
            }
            Ok(false) => Ok(fail(p, &format!("no trusted key is named {name}; see hcpx trust list"))),
            Err(e) => Ok(fail(p, &e.to_string())),
        },
        TrustCmd::List => match trust::list(&store) {
            Ok(f) => {
                if p.json {
                    let keys: Vec<_> = f
                        .keys
                        .iter()
                        .map(|k| json!({ "name": k.name, "prefix": k.prefix, "fingerprint": k.fingerprint, "added_at": k.added_at }))
                        .collect();
                    p.json_doc(&json!({ "ok": true, "keys": keys }));
                } else if f.keys.is_empty() {
                    p.message("no trusted keys; add one with hcpx trust add NAME KEY.pub --prefix host/repo");
                } else {
                    let rows: Vec<Vec<String>> = f
                        .keys
                        .iter()
                        .map(|k| vec![k.name.clone(), k.prefix.clone(), k.fingerprint.clone()])
                        .collect();
                    p.table(&["NAME", "PREFIX", "FINGERPRINT"], &rows);
                }
                Ok(exit::OK)
            }
            Err(e) => Ok(fail(p, &e.to_string())),
        },
    }
}
