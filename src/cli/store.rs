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
            // Opening the store applied the migrations; the version it found is the one it migrated from.
            let schema_version = db.schema_version().or_fail()?;
            let from = db.migrated_from();
            let database = db.place().url.clone();
            Ok(p.report(&Migrated { ok: true, from, schema_version, latest: pg::SCHEMA_VERSION, database }))
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

/// `hcpx store migrate`: the version the store's schema was at, the one it is at now, and the one this hcpx
/// writes.
#[derive(Serialize)]
struct Migrated {
    ok: bool,
    from: i32,
    schema_version: i32,
    latest: i32,
    /// The database, its password masked.
    database: String,
}

impl Report for Migrated {
    /// The result is the command's data: on stdout.
    fn text(&self, out: &Text<'_>) {
        if self.from == self.schema_version {
            out.data(&format!(
                "{}: the store's schema is already at version {} (this hcpx writes {})",
                self.database, self.schema_version, self.latest
            ));
        } else {
            out.data(&format!(
                "{}: migrated the store's schema from version {} to {}",
                self.database, self.from, self.schema_version
            ));
        }
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
        if !m.unsealed.is_empty() {
            out.message(&format!(
                "wrote {} credential document(s) unsealed, as a file store keeps them (owner-only files, mode 0600): {}; keep {} as private as the seal key, and remove it once it is imported",
                m.unsealed.len(),
                m.unsealed.join(", "),
                self.dir.display()
            ));
        }
    }
}
