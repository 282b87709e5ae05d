//! `hcpx grant` / `hcpx revoke`: the local Principal's grants (`grants.json`), so a `denied` call's fix is one
//! command rather than an edit of a JSON file.

use serde::Serialize;

use super::{open_store, GrantArgs, RevokeArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_model::grants::Grant;
use hcpx_store::grants::GrantsEdit;

fn parse(texts: &[String]) -> Result<Vec<Grant>, CliError> {
    texts.iter().map(|t| t.parse::<Grant>().map_err(|e| CliError::new(e.0))).collect()
}

/// `hcpx grant [GRANT…]`: adds grants; with none, lists the grants held.
pub fn grant(p: &Printer, a: &GrantArgs) -> anyhow::Result<u8> {
    let store = open_store()?;
    if a.grants.is_empty() {
        let list = store.local_grants().or_fail()?;
        return Ok(p.report(&GrantList { ok: true, all: list.is_none(), grants: list }));
    }
    let grants = parse(&a.grants)?;
    let edit = store.grant_local(&grants, a.only).or_fail()?;
    let mut notes = Vec::new();
    if edit.replaced {
        notes.push(
            "--only: replaced a grants.json that did not parse; the local Principal holds only these".into(),
        );
    }
    if !edit.lost.is_empty() {
        let lost: Vec<String> = edit.lost.iter().map(Grant::to_string).collect();
        notes.push(format!("--only: the local Principal no longer holds {}", lost.join(" ")));
    } else if edit.created && !a.only {
        let named: Vec<&str> = a.grants.iter().map(String::as_str).collect();
        notes.push(format!(
            "created grants.json with the grants the local Principal held without it (every grant), plus these: nothing was taken away; to hold only these, run `hcpx grant --only {}`",
            named.join(" ")
        ));
    }
    Ok(p.report(&Edited::new(&edit, notes)))
}

/// `hcpx revoke GRANT…`.
pub fn revoke(p: &Printer, a: &RevokeArgs) -> anyhow::Result<u8> {
    let grants = parse(&a.grants)?;
    let edit = open_store()?.revoke_local(&grants).or_fail()?;
    Ok(p.report(&Edited::new(&edit, Vec::new())))
}

/// The grants after an edit: what `--json` says of it, and the notes text shows before them.
#[derive(Serialize)]
struct Edited<'a> {
    ok: bool,
    all: bool,
    grants: &'a [Grant],
    created: bool,
    lost: &'a [Grant],
    replaced: bool,
    #[serde(skip)]
    notes: Vec<String>,
}

impl<'a> Edited<'a> {
    fn new(edit: &'a GrantsEdit, notes: Vec<String>) -> Edited<'a> {
        Edited {
            ok: true,
            all: false,
            grants: &edit.grants,
            created: edit.created,
            lost: &edit.lost,
            replaced: edit.replaced,
            notes,
        }
    }
}

impl Report for Edited<'_> {
    fn text(&self, out: &Text<'_>) {
        for n in &self.notes {
            out.message(n);
        }
        let texts: Vec<String> = self.grants.iter().map(Grant::to_string).collect();
        if texts.is_empty() {
            out.message(
                "grants: (none): every call of the local Principal is denied until `hcpx grant CAP:PACK`",
            );
        } else {
            out.message(&format!("grants: {}", texts.join(" ")));
        }
    }
}

/// The grants held: none listed (`all`) when there is no grants.json.
#[derive(Serialize)]
struct GrantList {
    ok: bool,
    all: bool,
    #[serde(serialize_with = "some_or_empty")]
    grants: Option<Vec<Grant>>,
}

fn some_or_empty<S: serde::Serializer>(list: &Option<Vec<Grant>>, s: S) -> Result<S::Ok, S::Error> {
    list.as_deref().unwrap_or_default().serialize(s)
}

impl Report for GrantList {
    fn text(&self, out: &Text<'_>) {
        match &self.grants {
            None => out.message("no grants.json: the local Principal holds every grant"),
            Some(list) if list.is_empty() => out.message(
                "grants.json holds no grants: every call of the local Principal is denied until `hcpx grant CAP:PACK`",
            ),
            Some(list) => {
                for g in list {
                    out.data(&g.to_string());
                }
            }
        }
    }
}
