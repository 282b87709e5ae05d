//! `hcpx wrap BIN`: scaffolds a pack from a CLI on PATH by reading its `--help`. The template commands it leaves
//! are flagged by `M018` until a person or a coding agent replaces them; `hcpx check` then takes the pack to 90+.

pub mod help;
pub mod new;

pub use help::{parse_help, MAX_TEMPLATES};

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::adapter::wrap::{find_on_path, CHILD_PATH};
use crate::sandbox::spawn::{self, Spawn};

use crate::model::naming::is_pack_id;

/// How long `BIN --help` may take.
pub const HELP_TIMEOUT: Duration = Duration::from_secs(5);
const HELP_CAP: u64 = 256 * 1024;

/// Why a scaffold could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ScaffoldError {
    #[error("{0:?} is not a bare command name; pass the name of a CLI on PATH, such as `git`")]
    BadBin(String),
    #[error("`{0}` is not on PATH; install it first, or pass the name of a CLI that is")]
    NotFound(String),
    #[error("{} already exists and is not empty; pass --out with a new directory", .0.display())]
    Exists(PathBuf),
    #[error("{0:?} is not a pack id; use lower-case words joined by `-`, such as `my-cli`")]
    BadId(String),
    #[error("cannot write {}: {reason}", .path.display())]
    Io { path: PathBuf, reason: String },
}

/// What was written.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Scaffold {
    pub pack_id: String,
    pub dir: String,
    pub bin: String,
    /// Template commands found in `--help` (or `main` when none were).
    pub commands: Vec<String>,
    /// The JSON output flag found in `--help` (`wrap.json_flag`), empty when none was.
    pub json_flag: Vec<String>,
    /// The option lines of `--help`, for the author to build `cli[]` and `args` from.
    pub options: Vec<String>,
    /// What the author should know before going on (an interpreter, no JSON flag).
    pub warnings: Vec<String>,
    /// The files written, relative to the pack.
    pub files: Vec<String>,
}

/// A bare command name: no path separators, no leading `-`, printable.
fn bare(bin: &str) -> bool {
    !bin.is_empty()
        && bin.len() <= 64
        && !bin.starts_with('-')
        && !bin.starts_with('.')
        && bin.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '+'))
}

/// `BIN --help` (stdout and stderr), run as the wrap adapter runs a read: no shell, no stdin, a built
/// environment, confined (the system paths and the program readable, nothing writable but a private temp
/// directory, no network, no UNIX sockets), in an empty private working directory that is also its `HOME`, a
/// deadline that kills everything it started, capped output. Nothing of the user's is in reach: a CLI's help
/// needs none of it, and the CLI is not yet reviewed. An empty text when it cannot run.
fn help_text(program: &Path) -> String {
    use crate::sandbox::{Confinement, KernelProbe, WrapView};
    let Ok(root) = tempfile::Builder::new().prefix("hcpx-wrap-help-").tempdir() else {
        return String::new();
    };
    let (work, tmp) = (root.path().join("work"), root.path().join("tmp"));
    if std::fs::create_dir(&work).and_then(|()| std::fs::create_dir(&tmp)).is_err() {
        return String::new();
    }
    let Ok(cwd) = cap_std::fs::Dir::open_ambient_dir(&work, cap_std::ambient_authority()) else {
        return String::new();
    };
    let probe = KernelProbe::get();
    let cfg = crate::store::config::SandboxConfig::default();
    let view = WrapView {
        pack_id: "hcpx-wrap-help",
        pack_dir: &work,
        program,
        workdir: &work,
        workdir_writable: false,
        home: &work,
        tmpdir: &tmp,
        network: &[],
        unix_sockets: &[],
        egress: None,
        project: false,
        timeout_ms: HELP_TIMEOUT.as_millis() as u64,
    };
    let plan = |p: &KernelProbe| Confinement::for_wrap(&view, &cfg, p);
    let Ok(planned) = plan(&probe) else {
        return String::new();
    };
    let env = vec![
        ("PATH".to_string(), CHILD_PATH.to_string()),
        ("LANG".to_string(), "C".to_string()),
        ("NO_COLOR".to_string(), "1".to_string()),
        ("TERM".to_string(), "dumb".to_string()),
        ("HOME".to_string(), work.display().to_string()),
        ("TMPDIR".to_string(), tmp.display().to_string()),
    ];
    let run = |c: &Confinement| {
        spawn::run(&Spawn {
            program,
            argv: &["--help".to_string()],
            cwd: &cwd,
            env: &env,
            timeout: HELP_TIMEOUT,
            max_output: HELP_CAP,
            confine: Some((c, probe.landlock_abi(&cfg))),
            cancel: None,
        })
    };
    match crate::sandbox::run_confined(planned, plan, run) {
        Ok((_, Ok(fin))) => {
            format!("{}\n{}", String::from_utf8_lossy(&fin.stdout), String::from_utf8_lossy(&fin.stderr))
        }
        _ => String::new(),
    }
}

fn pack_id_for(bin: &str) -> String {
    let mut id: String = bin
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '-' })
        .collect();
    if !id.starts_with(|c: char| c.is_ascii_lowercase()) {
        id.insert_str(0, "cli-");
    }
    if is_pack_id(&id) {
        id
    } else {
        "cli".into()
    }
}

/// Writes `rel` under `dir` (making its directories), executable when asked: every file a scaffold writes.
fn write(dir: &Path, rel: &str, text: &str, executable: bool) -> Result<(), ScaffoldError> {
    let path = dir.join(rel);
    let io = |p: &Path, e: std::io::Error| ScaffoldError::Io {
        path: p.to_path_buf(),
        reason: crate::model::io_reason(&e),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    std::fs::write(&path, text).map_err(|e| io(&path, e))?;
    if executable {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).map_err(|e| io(&path, e))?;
    }
    Ok(())
}

/// A JSON file as a scaffold writes it: pretty, with a final newline.
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

/// Writes a scaffold pack for `bin` into `out` (a new or empty directory; default `./<pack id>`), under `id`
/// when given: the three pack files, a starter `hcp.eval.json` and `proof.sh`.
pub fn scaffold(bin: &str, out: Option<&Path>, id: Option<&str>) -> Result<Scaffold, ScaffoldError> {
    if !bare(bin) {
        return Err(ScaffoldError::BadBin(bin.to_string()));
    }
    let id = match id {
        Some(i) if is_pack_id(i) => i.to_string(),
        Some(i) => return Err(ScaffoldError::BadId(i.to_string())),
        None => pack_id_for(bin),
    };
    let default_out = PathBuf::from(&id);
    let out = out.unwrap_or(&default_out);
    let program = find_on_path(bin).ok_or_else(|| ScaffoldError::NotFound(bin.to_string()))?;
    if std::fs::read_dir(out).is_ok_and(|mut d| d.next().is_some()) {
        return Err(ScaffoldError::Exists(out.to_path_buf()));
    }
    let help = help_text(&program);
    let mut subs = parse_help(&help);
    let json_flag = help::json_flag(&help).unwrap_or_default();
    let mut warnings: Vec<String> = help::interpreter_warning(bin).into_iter().collect();
    if json_flag.is_empty() {
        warnings.push(format!("`{bin} --help` names no JSON output flag, so wrap.json_flag is empty; if `{bin}` has one, set it (R002 asks for JSON)"));
    }
    if subs.is_empty() {
        subs.push(("main".into(), String::new()));
    }
    let mut verbs = Map::new();
    let mut rows = Map::new();
    let mut table = String::from("| command | when |\n|---------|------|\n");
    for (key, summary) in &subs {
        let line = if key == "main" { bin.to_string() } else { format!("{bin} {key}") };
        let cli: Vec<&str> = line.split(' ').collect();
        let from_help = if summary.is_empty() { String::new() } else { format!(" (--help says: {summary})") };
        verbs.insert(
            key.clone(),
            json!({
                "description": format!("TODO: say what `{line}` returns and when an agent should use it{from_help}"),
                "cli": cli,
                "title": { "live": [format!("Running {line}")], "done": [format!("Ran {line}")] }
            }),
        );
        // A template is a write behind the confirm gate until a person classifies it: nothing runs it unasked
        // (an agent, `hcpx check --probe`, an eval), whatever the subcommand does.
        rows.insert(key.clone(), json!({ "operation": "write", "confirm": true }));
        table.push_str(&format!("| `{key}` | TODO: when to use it |\n"));
    }
    let surface = json!({
        "id": id,
        "name": bin,
        "kind": "wrap",
        "cliBin": bin,
        "transports": ["cli", "json_exec"],
        "binding": { "mode": "public", "hub": "public" },
        "wrap": { "bin": bin, "json_flag": json_flag, "workspace": { "mode": "project" } },
        "verbs": Value::Object(verbs)
    });
    let policy = json!({ "surface_id": id, "verbs": Value::Object(rows) });
    let skill = format!(
        "# {bin}\n\nTODO: one paragraph for an agent: what `{bin}` does in this project, which command to start with, and which commands change something.\n\n## Hot path\n\n{table}"
    );
    std::fs::create_dir_all(out)
        .map_err(|e| ScaffoldError::Io { path: out.to_path_buf(), reason: crate::model::io_reason(&e) })?;
    write(out, "surface.json", &pretty(&surface), false)?;
    write(out, "policy.json", &pretty(&policy), false)?;
    write(out, "HARNESS.md", &skill, false)?;
    let mut files: Vec<String> = ["surface.json", "policy.json", "HARNESS.md"].map(String::from).to_vec();
    // The starters: a case per template (each a gated write, refused without confirm), and a proof script.
    if let Ok(pack) = crate::pack::Pack::load(out) {
        write(out, "hcp.eval.json", &pretty(&crate::check::starter_cases(&pack)), false)?;
        files.push("hcp.eval.json".into());
    }
    write(out, "proof.sh", &proof_script(&id, bin), true)?;
    files.push("proof.sh".into());
    Ok(Scaffold {
        pack_id: id,
        dir: out.display().to_string(),
        bin: bin.to_string(),
        commands: subs.into_iter().map(|(k, _)| k).collect(),
        json_flag,
        options: help::options(&help),
        warnings,
        files,
    })
}

/// A starter `proof.sh` (docs/packs.md#the-proof-script): lint, install, allow, the evals and the strict
/// check, in a throw-away store and an empty directory.
fn proof_script(id: &str, bin: &str) -> String {
    format!(
        r#"#!/usr/bin/env bash
# The {id} pack's proof script: lint, install, allow the CLI, every eval case and the strict check, in a
# throw-away store and an empty directory. TODO: name a fixture in hcp.eval.json, then add one read and a
# confirmed write here, run with --project "$tmp/project".
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${{HCPX:-hcpx}}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export HCP_HOME="${{HCP_HOME:-$tmp/home}}"
cd "$tmp"

"$HCPX" lint "$here" --json
"$HCPX" install "$here" --json
"$HCPX" activate {id} --json
"$HCPX" allow {bin} --json
"$HCPX" eval "$here"
"$HCPX" check "$here" --probe --strict
"#
    )
}
