//! `hcpx auth issuer add|list|remove`: the OAuth 2.1 authorization servers whose JWT access tokens a served runtime
//! accepts (`issuers.json`), and how their claims map to a Principal (docs/hosting.md, Connecting an identity
//! provider).

use serde::Serialize;
use std::collections::BTreeMap;

use super::{open_store, AuthCmd, IssuerAdd, IssuerCmd};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_model::grants::Grant;
use hcpx_store::issuers::IssuerRow;

/// Runs `hcpx auth …`.
pub fn run(p: &Printer, c: &AuthCmd) -> anyhow::Result<u8> {
    let AuthCmd::Issuer(c) = c;
    let store = open_store()?;
    match c {
        IssuerCmd::Add(a) => {
            let IssuerAdd {
                issuer,
                audience,
                principal_claim,
                tenant,
                tenant_claim,
                tenants,
                scopes,
                operator_scope,
                approver_scope,
                person_scope,
                replace,
            } = a.as_ref();
            let row = IssuerRow {
                issuer: issuer.clone(),
                audience: audience.clone(),
                principal_claim: principal_claim.clone(),
                tenant: tenant.clone(),
                tenant_claim: tenant_claim.clone(),
                tenants: tenants.clone(),
                scopes: parse_scopes(scopes)?,
                operator_scope: operator_scope.clone(),
                approver_scope: approver_scope.clone(),
                person_scope: person_scope.clone(),
            };
            store.issuer_add(row.clone(), *replace).or_fail()?;
            Ok(p.report(&Added { ok: true, issuer: row }))
        }
        IssuerCmd::List => {
            let list = store.issuers().or_fail()?;
            let issuers = list.as_deref().map(|l| l.rows()).unwrap_or_default();
            Ok(p.report(&Listed { ok: true, issuers }))
        }
        IssuerCmd::Remove { issuer } => {
            store.issuer_remove(issuer).or_fail()?;
            Ok(p.report(&Removed { ok: true, issuer }))
        }
    }
}

/// Each `SCOPE=GRANT`, gathered by scope.
fn parse_scopes(texts: &[String]) -> Result<BTreeMap<String, Vec<Grant>>, CliError> {
    let mut out: BTreeMap<String, Vec<Grant>> = BTreeMap::new();
    for t in texts {
        let Some((scope, grant)) = t.split_once('=') else {
            return Err(CliError::new(format!(
                "--scope {t:?} must be SCOPE=GRANT, e.g. --scope 'hcp.read=verb.exec.read:*'"
            )));
        };
        let grant: Grant = grant.parse().map_err(|e: hcpx_model::grants::GrantError| CliError::new(e.0))?;
        hcpx_model::grants::add_grant(out.entry(scope.to_string()).or_default(), &grant);
    }
    Ok(out)
}

fn describe(r: &IssuerRow) -> String {
    let tenant = match (&r.tenant, &r.tenant_claim) {
        (Some(t), _) => format!("tenant {t}"),
        (None, Some(c)) => format!("tenant from claim {c} (one of {})", r.tenants.join(", ")),
        (None, None) => "no tenant".into(),
    };
    let mut parts = vec![
        format!("audience {}", r.audience),
        format!("principal from claim {}", r.principal_claim.as_deref().unwrap_or("sub")),
        tenant,
    ];
    for (scope, grants) in &r.scopes {
        let g: Vec<String> = grants.iter().map(Grant::to_string).collect();
        parts.push(format!("scope {scope} gives {}", g.join(" ")));
    }
    for (role, scope) in [
        ("operator", &r.operator_scope),
        ("approver", &r.approver_scope),
        ("a person's client", &r.person_scope),
    ] {
        if let Some(s) = scope {
            parts.push(format!("scope {s} makes it {role}"));
        }
    }
    parts.join("; ")
}

/// `hcpx auth issuer add`.
#[derive(Serialize)]
struct Added {
    ok: bool,
    issuer: IssuerRow,
}

impl Report for Added {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "added issuer {}: {}; `hcpx serve` takes its tokens at once",
            self.issuer.issuer,
            describe(&self.issuer)
        ));
    }
}

/// `hcpx auth issuer list`.
#[derive(Serialize)]
struct Listed {
    ok: bool,
    issuers: Vec<IssuerRow>,
}

impl Report for Listed {
    fn text(&self, out: &Text<'_>) {
        for r in &self.issuers {
            out.data(&format!("{}: {}", r.issuer, describe(r)));
        }
        if self.issuers.is_empty() {
            out.message("no issuers; add one with `hcpx auth issuer add URL --audience RESOURCE --tenant T`");
        }
    }
}

/// `hcpx auth issuer remove`.
#[derive(Serialize)]
struct Removed<'a> {
    ok: bool,
    issuer: &'a str,
}

impl Report for Removed<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("removed issuer {}; its tokens no longer authenticate", self.issuer));
    }
}
