//! `hcpx store migrate|export|import`: the PostgreSQL store's schema, and moving a store between the files under
//! `HCP_HOME` and PostgreSQL (docs/hosting.md).

use serde::Serialize;
use std::path::Path;

use super::{open_store, StoreCmd};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_store::pg;

/// Runs `hcpx store …`.
pub fn run(p: &Printer, c: &StoreCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    let Some(db) = store.db() else {
        return Err(CliError::new(
            "HCP_STORE names no database: set it to the postgres://USER@HOST:PORT/DB URL of the store to act on",
        )
        .into());
    };
    match c {
        StoreCmd::Migrate => {
            let schema_version = db.schema_version().or_fail()?;
            Ok(p.report(&Migrated { ok: true, schema_version, latest: pg::SCHEMA_VERSION }))
        }
        StoreCmd::Export { dir } => {
            let moved = pg::transfer::export(db, dir).or_fail()?;
            Ok(p.report(&Moved { ok: true, dir, moved, what: "exported to" }))
        }
        StoreCmd::Import { dir } => {
            let moved = pg::transfer::import(db, dir).or_fail()?;
            Ok(p.report(&Moved { ok: true, dir, moved, what: "imported from" }))
        }
    }
}

/// `hcpx store migrate`: the schema version the store is at, and the one this hcpx writes.
#[derive(Serialize)]
struct Migrated {
    ok: bool,
    schema_version: i32,
    latest: i32,
}

impl Report for Migrated {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "the store's schema is at version {} (this hcpx writes {})",
            self.schema_version, self.latest
        ));
    }
}

/// `hcpx store export|import`: what moved, and where.
#[derive(Serialize)]
struct Moved<'a> {
    ok: bool,
    dir: &'a Path,
    moved: pg::transfer::Moved,
    #[serde(skip)]
    what: &'static str,
}

impl Report for Moved<'_> {
    fn text(&self, out: &Text<'_>) {
        let m = &self.moved;
        out.message(&format!(
            "{} {}: {} document(s), {} credential document(s), {} pack(s), {} audit line(s), {} Sense event(s), {} workspace(s)",
            self.what,
            self.dir.display(),
            m.documents,
            m.credentials,
            m.packs,
            m.audit_lines,
            m.sense_events,
            m.workspaces
        ));
    }
}
