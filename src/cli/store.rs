//! `hcpx store migrate|export|import`: the PostgreSQL store's schema, and moving a store between the files under
//! `HCP_HOME` and PostgreSQL (docs/hosting.md).

use serde_json::json;

use super::{exit, fail, open_store, StoreCmd};
use crate::output::Printer;
use hcpx_store::pg;

/// Runs `hcpx store …`.
pub fn run(p: &Printer, c: &StoreCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    let Some(db) = store.db() else {
        return Ok(fail(
            p,
            "HCP_STORE names no database: set it to the postgres://USER@HOST:PORT/DB URL of the store to act on",
        ));
    };
    match c {
        StoreCmd::Migrate => match db.schema_version() {
            Ok(v) => {
                if p.json {
                    p.json_doc(&json!({ "ok": true, "schema_version": v, "latest": pg::SCHEMA_VERSION }));
                } else {
                    p.message(&format!(
                        "the store's schema is at version {v} (this hcpx writes {})",
                        pg::SCHEMA_VERSION
                    ));
                }
                Ok(exit::OK)
            }
            Err(e) => Ok(fail(p, &e.to_string())),
        },
        StoreCmd::Export { dir } => report(p, "exported to", dir, pg::transfer::export(db, dir)),
        StoreCmd::Import { dir } => report(p, "imported from", dir, pg::transfer::import(db, dir)),
    }
}

fn report(
    p: &Printer,
    what: &str,
    dir: &std::path::Path,
    moved: Result<pg::transfer::Moved, hcpx_store::StoreError>,
) -> anyhow::Result<u8> {
    match moved {
        Ok(m) => {
            if p.json {
                p.json_doc(&json!({ "ok": true, "dir": dir, "moved": m }));
            } else {
                p.message(&format!(
                    "{what} {}: {} document(s), {} credential document(s), {} pack(s), {} audit line(s), {} Sense event(s)",
                    dir.display(),
                    m.documents,
                    m.credentials,
                    m.packs,
                    m.audit_lines,
                    m.sense_events
                ));
            }
            Ok(exit::OK)
        }
        Err(e) => Ok(fail(p, &e.to_string())),
    }
}
