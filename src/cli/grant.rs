//! `hcpx grant` / `hcpx revoke`: the local Principal's grants (`grants.json`), so a `denied` call's fix is one
//! command rather than an edit of a JSON file.

use serde_json::json;

use super::{exit, fail, open_store, GrantArgs, RevokeArgs};
use crate::output::Printer;
use hcpx_model::grants::Grant;
use hcpx_store::grants::GrantsEdit;

fn parse(texts: &[String]) -> Result<Vec<Grant>, String> {
    texts.iter().map(|t| t.parse::<Grant>().map_err(|e| e.0)).collect()
}

/// `hcpx grant [GRANT…]`: adds grants; with none, lists the grants held.
pub fn grant(p: &Printer, a: &GrantArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    if a.grants.is_empty() {
        return list(p, &store);
    }
    let grants = match parse(&a.grants) {
        Ok(g) => g,
        Err(e) => return Ok(fail(p, &e)),
    };
    match store.grant_local(&grants, a.only) {
        Ok(edit) => {
            if !p.json {
                if edit.replaced {
                    p.message("--only: replaced a grants.json that did not parse; the local Principal holds only these");
                }
                if !edit.lost.is_empty() {
                    let lost: Vec<String> = edit.lost.iter().map(Grant::to_string).collect();
                    p.message(&format!("--only: the local Principal no longer holds {}", lost.join(" ")));
                } else if edit.created && !a.only {
                    let named: Vec<&str> = a.grants.iter().map(String::as_str).collect();
                    p.message(&format!(
                        "created grants.json with the grants the local Principal held without it (every grant), plus these: nothing was taken away; to hold only these, run `hcpx grant --only {}`",
                        named.join(" ")
                    ));
                }
            }
            Ok(show(p, &edit))
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `hcpx revoke GRANT…`.
pub fn revoke(p: &Printer, a: &RevokeArgs) -> anyhow::Result<u8> {
    let grants = match parse(&a.grants) {
        Ok(g) => g,
        Err(e) => return Ok(fail(p, &e)),
    };
    match open_store()?.revoke_local(&grants) {
        Ok(edit) => Ok(show(p, &edit)),
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

fn show(p: &Printer, edit: &GrantsEdit) -> u8 {
    let texts: Vec<String> = edit.grants.iter().map(Grant::to_string).collect();
    if p.json {
        p.json_doc(&json!({ "ok": true, "all": false, "grants": edit.grants, "created": edit.created, "lost": edit.lost, "replaced": edit.replaced }));
    } else if texts.is_empty() {
        p.message("grants: (none): every call of the local Principal is denied until `hcpx grant CAP:PACK`");
    } else {
        p.message(&format!("grants: {}", texts.join(" ")));
    }
    exit::OK
}

fn list(p: &Printer, store: &hcpx_store::Store) -> anyhow::Result<u8> {
    match store.local_grants() {
        Ok(None) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "all": true, "grants": [] }));
            } else {
                p.message("no grants.json: the local Principal holds every grant");
            }
            Ok(exit::OK)
        }
        Ok(Some(list)) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "all": false, "grants": list }));
            } else if list.is_empty() {
                p.message("grants.json holds no grants: every call of the local Principal is denied until `hcpx grant CAP:PACK`");
            } else {
                for g in &list {
                    p.data(&g.to_string());
                }
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}
