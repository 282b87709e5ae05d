//! `hcpx check --init-evals`: a starter `hcp.eval.json` with one case per read and one refusal per gated write.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

use crate::model::code::CONFIRM_REQUIRED;
use crate::pack::{Command, Operation, Pack};

/// What `--init-evals` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitOutcome {
    /// Wrote the file with this many cases.
    Wrote { path: PathBuf, cases: usize },
    /// A file was already there; it was left alone.
    Exists { path: PathBuf },
}

fn args_of(cmd: &Command) -> Map<String, Value> {
    cmd.args
        .required()
        .iter()
        .map(|name| {
            let v = cmd
                .args
                .props()
                .get(name)
                .and_then(|p| p.example.clone())
                .unwrap_or_else(|| Value::String(format!("TODO {name}")));
            (name.clone(), v)
        })
        .collect()
}

/// The starter cases for `pack` (check-and-evaluate.md, Eval cases).
pub fn starter_cases(pack: &Pack) -> Value {
    let mut cases = Vec::new();
    for (key, cmd) in &pack.commands {
        match (cmd.policy.operation, cmd.policy.confirm) {
            (Operation::Read, _) => cases.push(json!({
                "name": format!("{key} returns JSON"),
                "verb": key,
                "args": args_of(cmd),
                "expect": { "ok": true, "json": true, "max_ms": 3000, "max_tokens": 5000 }
            })),
            (Operation::Write, true) => cases.push(json!({
                "name": format!("{key} is refused without confirm"),
                "verb": key,
                "args": args_of(cmd),
                "expect": { "ok": false, "error": CONFIRM_REQUIRED }
            })),
            (Operation::Write, false) => {}
        }
    }
    json!({ "cases": cases })
}

/// Writes `hcp.eval.json` beside the pack files unless one exists; never overwrites.
pub fn init_evals(dir: &Path, pack: &Pack) -> std::io::Result<InitOutcome> {
    let path = dir.join("hcp.eval.json");
    let doc = starter_cases(pack);
    let n = doc["cases"].as_array().map_or(0, Vec::len);
    let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)? + "\n";
    // create_new: an existing file (or a link planted in its place) is never overwritten.
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut f) => {
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            Ok(InitOutcome::Wrote { path, cases: n })
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(InitOutcome::Exists { path }),
        Err(e) => Err(e),
    }
}
