//! `hcpx credential set|rm|list`: the local credential hub; values come from stdin and are never printed.

use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Read;

use super::{open_store, CredentialCmd};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_store::principals::LOCAL_TENANT;

/// Runs `hcpx credential …`.
pub fn run(p: &Printer, c: &CredentialCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        CredentialCmd::Set { family, field, principal, tenant } => {
            let mut value = String::new();
            std::io::stdin()
                .take(64 * 1024)
                .read_to_string(&mut value)
                .map_err(|e| CliError::new(format!("cannot read the value from stdin: {e}")))?;
            let value = value.strip_suffix('\n').unwrap_or(&value);
            let value = value.strip_suffix('\r').unwrap_or(value);
            // A family only `user`-mode packs use is stored per Principal: the local one unless another is named.
            let user_only = principal.is_none() && user_only_family(&store, family);
            if user_only && tenant != LOCAL_TENANT {
                return Err(CliError::new(format!(
                    "family {family} is used with user Binding: name the tenant's Principal with --principal"
                ))
                .into());
            }
            let principal = principal.clone().or_else(|| {
                user_only.then(|| {
                    hcpx_model::Principal::local(hcpx_model::grants::Grants::All, hcpx_model::Invoker::Cli).id
                })
            });
            store.credential_set(tenant, family, principal.as_deref(), field, value).or_fail()?;
            Ok(p.report(&Stored { ok: true, family, field, principal }))
        }
        CredentialCmd::Rm { family, field, principal, tenant } => {
            store.credential_rm(tenant, family, principal.as_deref(), field.as_deref()).or_fail()?;
            // The packs minting from it announce binding.degraded (docs/sense.md); the removal stands even when
            // that cannot be recorded.
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
            Ok(p.report(&Removed { ok: true, family, field: field.as_deref() }))
        }
        CredentialCmd::Allow { family, packs } | CredentialCmd::Disallow { family, packs } => {
            let allow = matches!(c, CredentialCmd::Allow { .. });
            let allowed = store.edit_family(family, packs, allow).or_fail()?;
            Ok(p.report(&Family { ok: true, family, allowed }))
        }
        CredentialCmd::List { tenant } => {
            let families = store.credential_list(tenant).or_fail()?;
            Ok(p.report(&Families { ok: true, families }))
        }
        CredentialCmd::RotateKey { to } => rotate_key(p, &store, to),
    }
}

/// `hcpx credential set`: what was stored (never the value).
#[derive(Serialize)]
struct Stored<'a> {
    ok: bool,
    family: &'a str,
    field: &'a str,
    principal: Option<String>,
}

impl Report for Stored<'_> {
    fn text(&self, out: &Text<'_>) {
        let (family, field) = (self.family, self.field);
        match &self.principal {
            Some(who) => out.message(&format!("stored {family}.{field} for principal {who} (user Binding)")),
            None => out.message(&format!("stored {family}.{field}")),
        }
    }
}

/// `hcpx credential rm`: the family, or one field of it.
#[derive(Serialize)]
struct Removed<'a> {
    ok: bool,
    family: &'a str,
    field: Option<&'a str>,
}

impl Report for Removed<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "removed {}{}",
            self.family,
            self.field.map(|f| format!(".{f}")).unwrap_or_default()
        ));
    }
}

/// `hcpx credential allow|disallow`: the packs that may now use the family.
#[derive(Serialize)]
struct Family<'a> {
    ok: bool,
    family: &'a str,
    allowed: Vec<String>,
}

impl Report for Family<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("family {} may be used by: {}", self.family, self.allowed.join(", ")));
    }
}

/// `hcpx credential list`: each family's field names.
#[derive(Serialize)]
struct Families {
    ok: bool,
    families: BTreeMap<String, Vec<String>>,
}

impl Report for Families {
    fn text(&self, out: &Text<'_>) {
        for (fam, fields) in &self.families {
            out.data(&format!("{fam}: {}", fields.join(", ")));
        }
    }
}

/// `hcpx credential rotate-key`: how many documents were sealed again, and under which key.
#[derive(Serialize)]
struct Resealed<'a> {
    ok: bool,
    resealed: usize,
    key_id: String,
    #[serde(skip)]
    to: &'a std::path::Path,
}

impl Report for Resealed<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "{} credential document(s) sealed under key {}; now point HCP_SEAL_KEY_FILE at {} on every replica",
            self.resealed,
            self.key_id,
            self.to.display()
        ));
    }
}

/// `hcpx credential rotate-key --to FILE`: every sealed credential opened with the current key
/// (`HCP_SEAL_KEY_FILE`) and sealed again under FILE's, in one transaction.
fn rotate_key(p: &Printer, store: &hcpx_store::Store, to: &std::path::Path) -> anyhow::Result<u8> {
    let Some(db) = store.db() else {
        return Err(CliError::new(
            "the file store keeps credentials as owner-only files, not sealed; rotate-key is for a PostgreSQL store (set HCP_STORE)",
        )
        .into());
    };
    let new = hcpx_store::pg::seal::Sealer::from_file(to).or_fail()?;
    let resealed = db.reseal(&new).or_fail()?;
    Ok(p.report(&Resealed { ok: true, resealed, key_id: new.id().to_string(), to }))
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
