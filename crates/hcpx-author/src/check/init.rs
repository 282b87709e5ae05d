//! `hcpx check --init-evals`: a starter `hcp.eval.json` with one case per read and one refusal per gated write,
//! written only where there is none (docs/spec.md §21); `--add-evals` adds the starter cases an existing
//! file lacks.

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};

use crate::model::code::CONFIRM_REQUIRED;
use crate::pack::{Command, Operation, Pack};

/// What `--init-evals` or `--add-evals` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InitOutcome {
    /// Wrote the file with this many cases.
    Wrote { path: PathBuf, cases: usize },
    /// A file was already there and `--init-evals` left it as it was (not even read).
    Exists { path: PathBuf },
    /// A file was already there: the starter cases it lacked were added to it (none when `added` is 0).
    Added { path: PathBuf, added: usize },
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

/// The starter cases for `pack` (docs/spec.md §21, eval cases).
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

/// Whether `cases` already cover `starter`: any case of a read's command, or a confirm refusal of a gated write.
fn covered(cases: &[Value], starter: &Value) -> bool {
    let verb = &starter["verb"];
    let refusal = starter["expect"]["error"].as_str() == Some(CONFIRM_REQUIRED);
    cases
        .iter()
        .any(|c| &c["verb"] == verb && (!refusal || c["expect"]["error"].as_str() == Some(CONFIRM_REQUIRED)))
}

/// Writes `hcp.eval.json` beside the pack files unless one exists (docs/spec.md §21: `--init-evals`
/// writes it *unless one exists*). When one exists and `add` is set (`--add-evals`), adds the starter cases it
/// lacks (a read with no case, a gated write with no refusal case) after its own, and leaves everything else in
/// it as it was; a file that is not a JSON object with a `cases` array is then refused, never overwritten.
pub fn init_evals(dir: &Path, pack: &Pack, add: bool) -> std::io::Result<InitOutcome> {
    let path = dir.join("hcp.eval.json");
    let doc = starter_cases(pack);
    let n = doc["cases"].as_array().map_or(0, Vec::len);
    let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)? + "\n";
    // create_new: an existing file (or a link planted in its place) is never written through.
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
        Ok(mut f) => {
            std::io::Write::write_all(&mut f, text.as_bytes())?;
            Ok(InitOutcome::Wrote { path, cases: n })
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && add => add_missing(&path, &doc),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(InitOutcome::Exists { path }),
        Err(e) => Err(e),
    }
}

fn add_missing(path: &Path, starter: &Value) -> std::io::Result<InitOutcome> {
    let bad = |why: String| std::io::Error::new(std::io::ErrorKind::InvalidData, why);
    if std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(bad(format!("{} is a link; replace it with the file itself", path.display())));
    }
    let old = std::fs::read_to_string(path)?;
    let mut doc: Value = serde_json::from_str(&old).map_err(|e| {
        bad(format!("{} is not valid JSON ({e}); fix it, then run --add-evals again", path.display()))
    })?;
    let Some(cases) = doc.get_mut("cases").and_then(Value::as_array_mut) else {
        return Err(bad(format!(
            "{} has no \"cases\" array; add one, then run --add-evals again",
            path.display()
        )));
    };
    let missing: Vec<Value> =
        starter["cases"].as_array().into_iter().flatten().filter(|s| !covered(cases, s)).cloned().collect();
    let added = missing.len();
    if added > 0 {
        cases.extend(missing);
        let text = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)? + "\n";
        // A new file renamed over the old one: a crash leaves one or the other.
        crate::store::write_atomic(path, text.as_bytes(), 0o644)?;
    }
    Ok(InitOutcome::Added { path: path.to_path_buf(), added })
}
