//! `hcpx credential set|rm|list`: the local credential hub; values come from stdin and are never printed.

use serde_json::json;
use std::io::Read;

use super::{exit, fail, open_store, CredentialCmd};
use crate::output::Printer;

/// Runs `hcpx credential …`.
pub fn run(c: &CredentialCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        CredentialCmd::Set { family, field, principal, json } => {
            let p = Printer::new(json.json);
            let mut value = String::new();
            if let Err(e) = std::io::stdin().take(64 * 1024).read_to_string(&mut value) {
                return Ok(fail(&p, &format!("cannot read the value from stdin: {e}")));
            }
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            match store.credential_set(family, principal.as_deref(), field, value) {
                Ok(()) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "family": family, "field": field }));
                    } else {
                        p.message(&format!("stored {family}.{field}"));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(&p, &e.to_string())),
            }
        }
        CredentialCmd::Rm { family, field, principal, json } => {
            let p = Printer::new(json.json);
            match store.credential_rm(family, principal.as_deref(), field.as_deref()) {
                Ok(()) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "family": family, "field": field }));
                    } else {
                        p.message(&format!("removed {family}{}", field.as_ref().map(|f| format!(".{f}")).unwrap_or_default()));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(&p, &e.to_string())),
            }
        }
        CredentialCmd::List(j) => {
            let p = Printer::new(j.json);
            match store.credential_list() {
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
                Err(e) => Ok(fail(&p, &e.to_string())),
            }
        }
    }
}
