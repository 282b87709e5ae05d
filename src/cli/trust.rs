//! `hcpx trust add|remove|list`: the keys trusted to sign packs, each for a registry prefix.

use serde::Serialize;

use super::{open_store, TrustCmd};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_registry::trust;

/// Runs `hcpx trust …`.
pub fn run(p: &Printer, c: &TrustCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    match c {
        TrustCmd::Add { name, key, prefix } => {
            let pem = std::fs::read_to_string(key).map_err(|e| {
                CliError::new(format!("cannot read key {}: {}", key.display(), hcpx_model::io_reason(&e)))
            })?;
            let k = trust::add(&store, name, &pem, prefix)
                .map_err(|e| CliError::new(format!("{}: {e}", key.display())))?;
            Ok(p.report(&Added { ok: true, name: k.name, prefix: k.prefix, fingerprint: k.fingerprint }))
        }
        TrustCmd::Remove { name } => {
            if !trust::remove(&store, name).or_fail()? {
                return Err(
                    CliError::new(format!("no trusted key is named {name}; see hcpx trust list")).into()
                );
            }
            Ok(p.report(&Removed { ok: true, removed: name }))
        }
        TrustCmd::List => {
            let f = trust::list(&store).or_fail()?;
            let keys = f
                .keys
                .into_iter()
                .map(|k| Key {
                    name: k.name,
                    prefix: k.prefix,
                    fingerprint: k.fingerprint,
                    added_at: k.added_at,
                })
                .collect();
            Ok(p.report(&Keys { ok: true, keys }))
        }
    }
}

/// `hcpx trust add`: the key now trusted.
#[derive(Serialize)]
struct Added {
    ok: bool,
    name: String,
    prefix: String,
    fingerprint: String,
}

impl Report for Added {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!(
            "trusted key {} ({}) for packs under {}",
            self.name, self.fingerprint, self.prefix
        ));
    }
}

/// `hcpx trust remove`: the name removed.
#[derive(Serialize)]
struct Removed<'a> {
    ok: bool,
    removed: &'a str,
}

impl Report for Removed<'_> {
    fn text(&self, out: &Text<'_>) {
        out.message(&format!("removed trusted key {}", self.removed));
    }
}

/// `hcpx trust list`.
#[derive(Serialize)]
struct Keys {
    ok: bool,
    keys: Vec<Key>,
}

/// One trusted key, as `--json` lists it.
#[derive(Serialize)]
struct Key {
    name: String,
    prefix: String,
    fingerprint: String,
    added_at: String,
}

impl Report for Keys {
    fn text(&self, out: &Text<'_>) {
        if self.keys.is_empty() {
            out.message("no trusted keys; add one with hcpx trust add NAME KEY.pub --prefix host/repo");
            return;
        }
        let rows: Vec<Vec<String>> =
            self.keys.iter().map(|k| vec![k.name.clone(), k.prefix.clone(), k.fingerprint.clone()]).collect();
        out.table(&["NAME", "PREFIX", "FINGERPRINT"], &rows);
    }
}
