//! `hcpx principal add|rm|list|grant|revoke`: the Principals a served runtime authenticates (`principals.json`). A token
//! is printed once, on stdout, when it is made; only its SHA-256 is kept.

use serde::Serialize;

use super::{open_store, PrincipalCmd};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_model::grants::Grant;

/// Runs `hcpx principal …`.
pub fn run(p: &Printer, c: &PrincipalCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        PrincipalCmd::Add { id, tenant, grants, operator, approver, person } => {
            let grants = parse_grants(grants)?;
            let token = store
                .principal_add(id, tenant, *operator, grants)
                .and_then(|token| {
                    if *approver || *person {
                        store.principal_roles(id, *approver, *person).map(|()| token)
                    } else {
                        Ok(token)
                    }
                })
                .or_fail()?;
            Ok(p.report(&Added { ok: true, principal: id, tenant, token }))
        }
        PrincipalCmd::Rm { id } => {
            store.principal_rm(id).or_fail()?;
            Ok(p.report(&Removed { ok: true, principal: id }))
        }
        PrincipalCmd::Grant { id, grants } => edit(p, &store, id, grants, true),
        PrincipalCmd::Revoke { id, grants } => edit(p, &store, id, grants, false),
        PrincipalCmd::List => {
            let list = store.principals().or_fail()?;
            let principals = list
                .as_deref()
                .map(|l| l.rows().to_vec())
                .unwrap_or_default()
                .into_iter()
                .map(|r| Row {
                    principal: r.principal,
                    tenant: r.tenant,
                    operator: r.operator,
                    approver: r.approver,
                    person: r.person,
                    grants: r.grants,
                })
                .collect();
            Ok(p.report(&Listed { ok: true, principals }))
        }
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
    let grants = parse_grants(grants)?;
    let now = store.principal_grants(id, &grants, add).or_fail()?;
    Ok(p.report(&Holds { ok: true, principal: id, grants: now }))
}

/// Each `CAPABILITY:PACK` or `CAPABILITY:PACK:VERB,VERB`.
fn parse_grants(texts: &[String]) -> Result<Vec<Grant>, CliError> {
    texts.iter().map(|t| t.parse::<Grant>().map_err(|e| CliError::new(e.0))).collect()
}

/// `hcpx principal add`: the token, shown once.
#[derive(Serialize)]
struct Added<'a> {
    ok: bool,
    principal: &'a str,
    tenant: &'a str,
    token: String,
}

impl Report for Added<'_> {
    fn text(&self, out: &Text<'_>) {
        out.data(&self.token);
        out.message(&format!(
            "added principal {} (tenant {}); the token above is shown once: send it as `Authorization: Bearer TOKEN`",
            self.principal, self.tenant
        ));
    }
}

/// `hcpx principal rm`.
#[derive(Serialize)]
struct Removed<'a> {
    ok: bool,
    principal: &'a str,
}

impl Report for Removed<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("removed principal {}; its token no longer authenticates", self.principal));
    }
}

/// `hcpx principal grant|revoke`: the grants the Principal now holds.
#[derive(Serialize)]
struct Holds<'a> {
    ok: bool,
    principal: &'a str,
    grants: Vec<Grant>,
}

impl Report for Holds<'_> {
    fn text(&self, out: &Text<'_>) {
        let text: Vec<String> = self.grants.iter().map(Grant::to_string).collect();
        out.message(&format!(
            "principal {} now holds: {}",
            self.principal,
            if text.is_empty() { "nothing".into() } else { text.join(" ") }
        ));
    }
}

/// `hcpx principal list`.
#[derive(Serialize)]
struct Listed {
    ok: bool,
    principals: Vec<Row>,
}

/// One Principal as `--json` lists it (never its token's hash).
#[derive(Serialize)]
struct Row {
    principal: String,
    tenant: String,
    operator: bool,
    approver: bool,
    person: bool,
    grants: Vec<Grant>,
}

impl Report for Listed {
    fn text(&self, out: &Text<'_>) {
        for r in &self.principals {
            let grants: Vec<String> = r.grants.iter().map(Grant::to_string).collect();
            let roles: Vec<&str> =
                [(r.operator, "operator"), (r.approver, "approver"), (r.person, "a person's client")]
                    .into_iter()
                    .filter_map(|(on, name)| on.then_some(name))
                    .collect();
            let op = if roles.is_empty() { String::new() } else { format!(" ({})", roles.join(", ")) };
            out.data(&format!("{} tenant={}{op}: {}", r.principal, r.tenant, grants.join(" ")));
        }
    }
}
