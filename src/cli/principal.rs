//! `hcpx principal add|rm|list|grant|revoke`: the Principals a served runtime authenticates (`principals.json`). A token
//! is printed once, on stdout, when it is made; only its SHA-256 is kept.

use serde_json::json;

use super::{exit, fail, open_store, PrincipalCmd};
use crate::output::Printer;
use hcpx_model::grants::Grant;

/// Runs `hcpx principal …`.
pub fn run(p: &Printer, c: &PrincipalCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        PrincipalCmd::Add { id, tenant, grants, operator, approver, person } => {
            let grants = match grants.iter().map(|g| parse_grant(g)).collect::<Result<Vec<_>, _>>() {
                Ok(g) => g,
                Err(e) => return Ok(fail(p, &e)),
            };
            let added = store.principal_add(id, tenant, *operator, grants).and_then(|token| {
                if *approver || *person {
                    store.principal_roles(id, *approver, *person).map(|()| token)
                } else {
                    Ok(token)
                }
            });
            match added {
                Ok(token) => {
                    if p.json {
                        p.json_doc(&json!({ "ok": true, "principal": id, "tenant": tenant, "token": token }));
                    } else {
                        p.data(&token);
                        p.message(&format!(
                            "added principal {id} (tenant {tenant}); the token above is shown once: send it as `Authorization: Bearer TOKEN`"
                        ));
                    }
                    Ok(exit::OK)
                }
                Err(e) => Ok(fail(p, &e.to_string())),
            }
        }
        PrincipalCmd::Rm { id } => match store.principal_rm(id) {
            Ok(()) => {
                if p.json {
                    p.json_doc(&json!({ "ok": true, "principal": id }));
                } else {
                    p.message(&format!("removed principal {id}; its token no longer authenticates"));
                }
                Ok(exit::OK)
            }
            Err(e) => Ok(fail(p, &e.to_string())),
        },
        PrincipalCmd::Grant { id, grants } => edit(p, &store, id, grants, true),
        PrincipalCmd::Revoke { id, grants } => edit(p, &store, id, grants, false),
        PrincipalCmd::List => match store.principals() {
            Ok(list) => {
                let rows = list.as_deref().map(|l| l.rows().to_vec()).unwrap_or_default();
                if p.json {
                    let rows: Vec<_> = rows
                        .iter()
                        .map(|r| json!({ "principal": r.principal, "tenant": r.tenant, "operator": r.operator, "approver": r.approver, "person": r.person, "grants": r.grants }))
                        .collect();
                    p.json_doc(&json!({ "ok": true, "principals": rows }));
                } else {
                    for r in &rows {
                        let grants: Vec<String> = r.grants.iter().map(grant_text).collect();
                        let roles: Vec<&str> = [
                            (r.operator, "operator"),
                            (r.approver, "approver"),
                            (r.person, "a person's client"),
                        ]
                        .into_iter()
                        .filter_map(|(on, name)| on.then_some(name))
                        .collect();
                        let op =
                            if roles.is_empty() { String::new() } else { format!(" ({})", roles.join(", ")) };
                        p.data(&format!("{} tenant={}{op}: {}", r.principal, r.tenant, grants.join(" ")));
                    }
                }
                Ok(exit::OK)
            }
            Err(e) => Ok(fail(p, &e.to_string())),
        },
    }
}

/// `hcpx principal grant|revoke ID GRANT…`.
fn edit(
    p: &Printer,
    store: &hcpx_store::Store,
    id: &str,
    grants: &[String],
    add: bool,
) -> anyhow::Result<u8> {
    let grants = match grants.iter().map(|g| parse_grant(g)).collect::<Result<Vec<_>, _>>() {
        Ok(g) => g,
        Err(e) => return Ok(fail(p, &e)),
    };
    match store.principal_grants(id, &grants, add) {
        Ok(now) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "principal": id, "grants": now }));
            } else {
                let text: Vec<String> = now.iter().map(grant_text).collect();
                p.message(&format!(
                    "principal {id} now holds: {}",
                    if text.is_empty() { "nothing".into() } else { text.join(" ") }
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}

/// `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
fn parse_grant(text: &str) -> Result<Grant, String> {
    text.parse::<Grant>().map_err(|e| e.0)
}

fn grant_text(g: &Grant) -> String {
    g.to_string()
}
