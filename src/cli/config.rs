//! `hcpx config show [KEY] | set KEY VALUE | unset KEY`: the operator settings of `sandbox.json` by command, on
//! whichever store `HCP_STORE` names, so no operator edits the document (or its database row) by hand. The store
//! checks and writes (`hcpx_store::settings`); this prints what it found or changed.

use serde::Serialize;
use serde_json::Value;

use super::{open_store, ConfigCmd};
use crate::output::Printer;
use crate::report::{CliError, Report, Text};
use hcpx_model::Invoker;
use hcpx_store::settings::{Change, Changed, Setting, SettingError, SANDBOX};

/// Runs `hcpx config …`.
pub fn run(p: &Printer, c: &ConfigCmd) -> anyhow::Result<u8> {
    let store = open_store()?;
    let kind = store.kind();
    match c {
        ConfigCmd::Show { key } => {
            let settings = store.settings(key.as_deref()).map_err(refused)?;
            Ok(p.report(&Shown { ok: true, store: kind, document: SANDBOX, settings }))
        }
        ConfigCmd::Set { key, value } => {
            let by = store.local_principal(Invoker::Cli)?;
            let changed = store.setting_set(key, parse_value(value), &by).map_err(refused)?;
            Ok(p.report(&Done { ok: true, store: kind, changed }))
        }
        ConfigCmd::Unset { key } => {
            let by = store.local_principal(Invoker::Cli)?;
            let changed = store.setting_unset(key, &by).map_err(refused)?;
            // Taking one fault out of a document that still does not load is done, but not fixed.
            Ok(p.report(&Done { ok: changed.still_invalid.is_none(), store: kind, changed }))
        }
    }
}

/// VALUE as JSON when it is JSON (`30000`, `false`, `["/srv"]`, `"full"`), else the string as given (`full`).
fn parse_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_string()))
}

/// A refusal with its stable code in the JSON document (`code`).
fn refused(e: SettingError) -> CliError {
    CliError::new(e.to_string()).with_field("code", &e.code())
}

/// A value as one line shows it.
fn shown(v: &Value) -> String {
    match v {
        Value::Null => "(not set)".into(),
        other => other.to_string(),
    }
}

/// `hcpx config show`.
#[derive(Serialize)]
struct Shown {
    ok: bool,
    store: &'static str,
    document: &'static str,
    settings: Vec<Setting>,
}

impl Report for Shown {
    fn text(&self, out: &Text<'_>) {
        for s in &self.settings {
            let mark = if s.default { "  (default)" } else { "" };
            out.data(&format!("{} = {}{mark}", s.key, shown(&s.value)));
        }
    }
}

/// `hcpx config set|unset`.
#[derive(Serialize)]
struct Done {
    ok: bool,
    store: &'static str,
    #[serde(flatten)]
    changed: Changed,
}

/// One change as a line: `key: old → new`, a value not set shown as its default.
fn change_line(c: &Change) -> String {
    let side = |v: &Value| match (v, &c.default) {
        (Value::Null, Some(d)) => format!("{d} (default)"),
        (v, _) => shown(v),
    };
    format!("{}: {} → {}", c.key, side(&c.old), side(&c.new))
}

impl Report for Done {
    fn text(&self, out: &Text<'_>) {
        let c = &self.changed;
        if c.changes.is_empty() {
            out.message(&format!("{} already says so; nothing was written", c.key));
        }
        for ch in &c.changes {
            out.data(&change_line(ch));
        }
        if !c.changes.is_empty() {
            let reach = if self.store == "postgres" {
                "every replica reads it at its next call"
            } else {
                "the next call reads it"
            };
            out.message(&format!(
                "{} written ({} store): {reach}; the change is in `hcpx audit`",
                c.document, self.store
            ));
        }
        if let Some(why) = &c.still_invalid {
            out.error(&format!(
                "{} still does not load: {why}; every call is refused until it does (`hcpx config unset KEY` for the key it names)",
                c.document
            ));
        }
    }

    fn exit(&self) -> u8 {
        if self.ok {
            super::exit::OK
        } else {
            super::exit::FAILURE
        }
    }
}
