//! The probe layer: every read runs once through the real pipeline and sandbox, as an agent would call it, and
//! the rules below judge what came back. Probes never run a write, a scaffold template, or a read a rule flags
//! as possibly changing something (P001, P010).

use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::UNIX_EPOCH;

use super::{guest, Ctx, Hits};
use crate::eval::{approx_tokens, output_of, todo_arg};
use crate::model::diagnostic::pointer;
use crate::model::Code;
use crate::pack::{Command, Operation, Pack};
use crate::trial::Trial;

const SURFACE: &str = "surface.json";

/// Output past this many tokens does not fit an agent's tool-result budget.
pub const TOKEN_BUDGET: u64 = 25_000;
/// Output past this many tokens is mostly noise to an agent.
pub const LARGE_OUTPUT: u64 = 5_000;
/// A read slower than this stalls an agent's loop.
pub const SLOW_MS: u64 = 2_000;

/// One probe, as `--json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeRecord {
    pub verb: String,
    pub args: Map<String, Value>,
    pub ran: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub ok: bool,
    pub exit_code: Option<i32>,
    pub ms: u64,
    /// Approximate tokens of the output.
    pub tokens: u64,
    /// Whether stdout was JSON.
    pub json: bool,
    #[serde(skip)]
    pub code: Option<Code>,
    #[serde(skip)]
    pub error: String,
    #[serde(skip)]
    pub output: String,
    #[serde(skip)]
    pub stderr: String,
    /// Files in the working directory that the read created, changed or removed.
    #[serde(skip)]
    pub changed: Vec<String>,
    /// Not run because a rule flags it as possibly changing something (its finding is that rule's, not R013).
    #[serde(skip)]
    pub unsafe_skip: bool,
    /// Not run because it reaches only hosts the operator has not allowed: every call would be refused, and
    /// `check`'s network line already says how to allow them (not R013).
    #[serde(skip)]
    pub offline_skip: bool,
    /// The system paths outside the default view that, lent to the read, made it return data (R016).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<Vec<String>>,
}

/// The arguments a probe passes: those of the first eval case that expects success, else each required
/// argument's example. A first case still holding a `TODO` value is not guessed around: the probe is skipped.
fn probe_args(pack: &Pack, key: &str, cmd: &Command) -> Result<Map<String, Value>, String> {
    let first_case =
        pack.evals.as_ref().and_then(|e| e.cases.iter().find(|c| c.verb == key && c.expect.ok == Some(true)));
    if let Some(case) = first_case {
        if let Some(k) = todo_arg(case) {
            return Err(format!("its first eval case, {:?}, still has a TODO value for `{k}`", case.name));
        }
        return Ok(case.args.clone());
    }
    let mut args = Map::new();
    for name in cmd.args.required() {
        match cmd.args.props().get(name).and_then(|p| p.example.clone()) {
            Some(v) => {
                args.insert(name.clone(), v);
            }
            None => {
                return Err(format!("required argument `{name}` has no example and no eval case supplies it"))
            }
        }
    }
    Ok(args)
}

/// `text` without ANSI escape sequences (anstream's stripper: CSI, OSC and the rest of the VT100 set).
pub fn strip_ansi(text: &str) -> String {
    anstream::adapter::strip_str(text).to_string()
}

type Snapshot = BTreeMap<String, (u64, u128)>;

/// Names, sizes and modification times under `dir`, bounded.
fn snapshot(dir: &Path) -> Snapshot {
    let mut out = Snapshot::new();
    crate::pack::tree::walk(dir, 20_000, 12, &|_| true, &mut |rel, m| {
        if m.is_dir() {
            out.insert(format!("{rel}/"), (0, 0));
        } else {
            let mtime =
                m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
            out.insert(rel.to_string(), (m.len(), mtime));
        }
    });
    out
}

fn diff(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut changed: Vec<String> =
        after.iter().filter(|(k, v)| before.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect();
    changed.extend(before.keys().filter(|k| !after.contains_key(*k)).cloned());
    changed.sort();
    changed
}

/// Runs every read of the pack once. `progress(n, m, title)` is told before each.
pub fn run_probes(trial: &Trial, pack: &Pack, progress: &dyn Fn(usize, usize, &str)) -> Vec<ProbeRecord> {
    let reads: Vec<(&String, &Command)> =
        pack.commands.iter().filter(|(_, c)| c.policy.operation == Operation::Read).collect();
    let workdir = trial.workdir(pack.workspace);
    let mut out = Vec::new();
    for (i, (key, cmd)) in reads.iter().enumerate() {
        let mut rec = ProbeRecord {
            verb: key.to_string(),
            args: Map::new(),
            ran: false,
            skipped: None,
            ok: false,
            exit_code: None,
            ms: 0,
            tokens: 0,
            json: false,
            code: None,
            error: String::new(),
            output: String::new(),
            stderr: String::new(),
            changed: Vec::new(),
            unsafe_skip: false,
            offline_skip: false,
            hidden: None,
        };
        if let Some(why) = super::policy::unsafe_to_probe(key, cmd) {
            rec.skipped = Some(why);
            rec.unsafe_skip = true;
            out.push(rec);
            continue;
        }
        let unreached = trial.hosts_out_of_reach(pack, key);
        if !unreached.is_empty() {
            let names: Vec<String> = unreached.iter().map(|h| h.to_string()).collect();
            rec.skipped = Some(format!(
                "it reaches {}, which the operator has not allowed (hcpx allow-host {} {}), so every call would be refused",
                names.join(", "),
                pack.id,
                names.join(" ")
            ));
            rec.offline_skip = true;
            out.push(rec);
            continue;
        }
        let args = match probe_args(pack, key, cmd) {
            Ok(a) => a,
            Err(why) => {
                rec.skipped = Some(why);
                out.push(rec);
                continue;
            }
        };
        let title = cmd.title.render(&args, None).unwrap_or_else(|| format!("{} {key}", pack.id));
        progress(i + 1, reads.len(), &title);
        let before = workdir.as_deref().map(snapshot);
        let call = trial.call(key, args.clone());
        if let (Some(dir), Some(before)) = (workdir.as_deref(), before) {
            rec.changed = diff(&before, &snapshot(dir));
        }
        let output = output_of(&call.out);
        rec.hidden = trial
            .hidden_paths(key, &args, &call.out)
            .map(|paths| paths.iter().map(|p| p.display().to_string()).collect());
        rec.args = args;
        rec.ran = true;
        rec.ok = call.out.ok;
        rec.exit_code = call.exit_code.or(if call.out.ok { Some(0) } else { None });
        rec.ms = call.ms;
        rec.tokens = approx_tokens(&output);
        // Colour codes are R005's finding; whether the text under them is JSON is R002's.
        rec.json = serde_json::from_str::<Value>(strip_ansi(&output).trim()).is_ok();
        rec.code = call.out.code;
        rec.error = call.out.error.clone().unwrap_or_default();
        rec.stderr = call.out.stderr.clone().unwrap_or_default();
        rec.output = output;
        out.push(rec);
    }
    out
}

/// What kind of failure a probe shows; each failing probe is exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Failure {
    /// The sandbox's default view hid what the read needs (R016), whatever the CLI said.
    Hidden,
    BinMissing,
    Timeout,
    UnknownSubcommand,
    Silent,
    Other,
}

const UNKNOWN_SUBCOMMAND: &[&str] = &[
    "unknown command",
    "unknown subcommand",
    "unrecognized command",
    "unrecognized subcommand",
    "invalid choice",
    "no such command",
    "invalid command",
    "is unknown, try",
    "is not a command",
    "is not a valid command",
    "not a git command",
    "unknown action",
];

fn failure(r: &ProbeRecord) -> Option<Failure> {
    if !r.ran || r.ok {
        return None;
    }
    if r.hidden.is_some() {
        return Some(Failure::Hidden);
    }
    Some(match r.code {
        Some(Code::SandboxDenied) => Failure::BinMissing,
        Some(Code::Timeout) => Failure::Timeout,
        _ => {
            let text = format!("{}\n{}", r.stderr, r.error).to_lowercase();
            if UNKNOWN_SUBCOMMAND.iter().any(|p| text.contains(p)) {
                Failure::UnknownSubcommand
            } else if r.stderr.trim().is_empty() && r.error.starts_with("exit ") {
                Failure::Silent
            } else {
                Failure::Other
            }
        }
    })
}

/// The pack runs a WASI component: its fixes are in the guest's code, not in `cli[]` or a CLI's flags.
fn composite(c: &Ctx) -> bool {
    c.pack.kind == crate::pack::AdapterKind::Composite
}

fn probes<'a>(c: &'a Ctx) -> impl Iterator<Item = &'a ProbeRecord> {
    c.probes.into_iter().flatten()
}

fn ptr(r: &ProbeRecord) -> String {
    pointer(&["verbs", &r.verb, "cli"])
}

fn first_line(s: &str) -> &str {
    s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// The literal words of `cli[]` after the bin, up to the first placeholder or flag: the subcommand path.
fn subcommand(c: &Ctx, verb: &str) -> String {
    let cmd = c.pack.command(verb);
    let bin = cmd.and_then(|x| x.cli_bin.clone()).or_else(|| c.pack.cli_bin.clone()).unwrap_or_default();
    let words: Vec<&str> = cmd
        .and_then(|x| x.cli.as_ref())
        .map(|cli| {
            cli.iter()
                .take_while(|t| t.is_literal() && !t.source().starts_with('-'))
                .map(|t| t.source())
                .collect()
        })
        .unwrap_or_default();
    std::iter::once(bin.as_str()).chain(words).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// R001
pub fn probe_failed(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| failure(r) == Some(Failure::Other)) {
        // The JSON flag the runtime appends (wrap.json_flag, `--json` when unset) is the usual culprit when the
        // CLI's complaint names it: the fix is that setting, not cli[].
        let appended = c
            .pack
            .command(&r.verb)
            .zip(c.pack.wrap.as_ref())
            .map(|(cmd, w)| crate::render::json_flag(w, cmd).to_vec())
            .unwrap_or_default();
        let said = format!("{}\n{}", r.stderr, r.error);
        if let Some(flag) = appended.iter().find(|f| said.contains(f.as_str())) {
            h.push(SURFACE, "/wrap/json_flag", format!("`{}` fails when an agent calls it with {}: {}", r.verb, Value::Object(r.args.clone()), first_line(&r.error)), format!("the runtime appends `{flag}` from wrap.json_flag (`--json` when it is not set), and the CLI refuses it: set \"json_flag\" in wrap to the CLI's own JSON flag, or to [] when it has none"));
            continue;
        }
        h.push(SURFACE, ptr(r), format!("`{}` fails when an agent calls it with {}: {}", r.verb, Value::Object(r.args.clone()), first_line(&r.error)), if composite(c) { format!("fix {} for `{}` so the read succeeds with these arguments (then {}), or correct the examples (or first eval case) that supply them{}", guest::exec_fn(c.lang), r.verb, guest::rebuild(c.lang), if r.code == Some(Code::AdapterFailed) { format!("; to refuse bad input, {}", guest::err_how(c.lang)) } else { String::new() }) } else { format!("fix `{}`.cli so the read succeeds with these arguments, or correct the examples (or first eval case) that supply them", r.verb) });
    }
}

/// R002: one finding for the pack, since the fix (the CLI's JSON output) is usually one flag for all of them.
pub fn not_json(c: &Ctx, h: &mut Hits) {
    let text: Vec<&str> = probes(c)
        .filter(|r| r.ok && !r.json && !r.output.trim().is_empty())
        .map(|r| r.verb.as_str())
        .collect();
    let Some(first) = text.first() else { return };
    let fix = if composite(c) {
        format!(
            "return a JSON document from {} for these commands ({}), then {}",
            guest::exec_fn(c.lang),
            guest::json_how(c.lang),
            guest::rebuild(c.lang)
        )
    } else {
        "select the CLI's JSON output in each command's cli[] (`--json`, `-o json`, `--format=json`) or set wrap.json_flag; where the CLI has none, say in HARNESS.md how to read its text".to_string()
    };
    h.push(
        SURFACE,
        pointer(&["verbs", first, "cli"]),
        format!("{} read(s) print text, not JSON: {}; agents parse output", text.len(), text.join(", ")),
        fix,
    );
}

/// R003
pub fn over_budget(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ran && r.tokens > TOKEN_BUDGET) {
        h.push(
            SURFACE,
            ptr(r),
            format!(
                "`{}` returns ~{} tokens, over the {TOKEN_BUDGET}-token budget of an agent's tool result",
                r.verb, r.tokens
            ),
            format!(
                "limit `{}`'s output (a `--limit`/`--fields` flag in cli[], or a narrower default)",
                r.verb
            ),
        );
    }
}

/// R004
pub fn large_output(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ran && r.tokens > LARGE_OUTPUT && r.tokens <= TOKEN_BUDGET) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` returns ~{} tokens; most of it is noise to an agent", r.verb, r.tokens),
            format!(
                "return fewer fields or rows by default from `{}` (a `--limit`, `--fields` or summary flag)",
                r.verb
            ),
        );
    }
}

/// R005
pub fn ansi_escapes(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ran && (r.output.contains('\u{1b}') || r.stderr.contains("\u{1b}["))) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` prints terminal colour codes with no terminal and NO_COLOR set", r.verb),
            if composite(c) {
                format!(
                    "return `{}`'s result without ANSI escape codes: the component has no terminal",
                    r.verb
                )
            } else {
                format!(
                    "add the CLI's `--color=never`/`--no-color` to `{}`.cli, or set it in wrap.agent_env",
                    r.verb
                )
            },
        );
    }
}

/// R006
pub fn timed_out(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| failure(r) == Some(Failure::Timeout)) {
        let fix = if composite(c) {
            format!("make the component's `exec` for `{}` return within the limit: it has no stdin to wait on, so look for a loop or a host call that never returns", r.verb)
        } else {
            format!("make `{}` finish without a terminal: pass the CLI's non-interactive flag (`--yes`, `--no-input`, `--batch`) in cli[]", r.verb)
        };
        h.push(
            SURFACE,
            ptr(r),
            format!(
                "`{}` ran past the timeout: it waits for input or hangs ({})",
                r.verb,
                first_line(&r.error)
            ),
            fix,
        );
    }
}

/// R007
pub fn slow(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ran && r.ms > SLOW_MS && failure(r) != Some(Failure::Timeout)) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` took {} ms, over {SLOW_MS} ms for a read", r.verb, r.ms),
            format!("narrow what `{}` reads by default (a limit, a cache, a cheaper subcommand)", r.verb),
        );
    }
}

/// R008
pub fn empty_output(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ok && r.output.trim().is_empty() && r.hidden.is_none()) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` succeeds and prints nothing, so an agent cannot tell what it found", r.verb),
            format!("make `{}` print its result (an empty JSON list `[]` when there is nothing)", r.verb),
        );
    }
}

/// R009
pub fn silent_failure(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| failure(r) == Some(Failure::Silent)) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` fails with {} and no message, so an agent cannot act on it", r.verb, r.error),
            if composite(c) {
                format!(
                    "end `{}` with a message that says what went wrong and what to do: {}",
                    r.verb,
                    guest::err_how(c.lang)
                )
            } else {
                format!(
                    "make the CLI say what went wrong on stderr, or fix `{}`.cli so the read succeeds",
                    r.verb
                )
            },
        );
    }
}

/// R010
pub fn stderr_on_success(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ok && !r.stderr.trim().is_empty()) {
        h.push(
            SURFACE,
            ptr(r),
            format!("`{}` succeeds but writes to stderr: {:?}", r.verb, first_line(&r.stderr)),
            if composite(c) {
                format!("the component's host.log lines are `{}`'s stderr: on success, log with {} only what a person must see, and put the rest in the JSON it returns", r.verb, guest::log_how(c.lang))
            } else {
                format!("pass the CLI's quiet flag in `{}`.cli if the message is noise", r.verb)
            },
        );
    }
}

/// R011
pub fn read_changed_files(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| !r.changed.is_empty()) {
        let shown: Vec<&str> = r.changed.iter().take(5).map(String::as_str).collect();
        let fix = if composite(c) {
            format!("make `{}` a write in policy.json, or stop the component's `exec` from writing through its preopen for this command", r.verb)
        } else {
            format!("make `{}` a write in policy.json, or pass the CLI's read-only flag (`--no-optional-locks`, `-readonly`, `--dry-run`)", r.verb)
        };
        h.push(
            SURFACE,
            ptr(r),
            format!(
                "`{}` is a read but changed files in its working directory: {}",
                r.verb,
                shown.join(", ")
            ),
            fix,
        );
    }
}

/// R012
pub fn error_with_exit_zero(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| r.ok) {
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(r.output.trim()) else { continue };
        let is_error = obj
            .get("error")
            .is_some_and(|e| !matches!(e, Value::Null | Value::Bool(false)) && e.as_str() != Some(""));
        if is_error {
            h.push(
                SURFACE,
                ptr(r),
                format!(
                    "`{}` reports an error in its JSON but exits 0, so orchestrators treat it as success",
                    r.verb
                ),
                format!("make the CLI exit non-zero when `{}` fails", r.verb),
            );
        }
    }
}

/// R013
pub fn probe_skipped(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| !r.unsafe_skip && !r.offline_skip) {
        if let Some(why) = &r.skipped {
            h.push(SURFACE, pointer(&["verbs", &r.verb, "args"]), format!("`{}` was not probed: {why}", r.verb), format!("add \"examples\" to `{}`'s required arguments, or an eval case for it that expects ok: true", r.verb));
        }
    }
}

/// R014
pub fn unknown_subcommand(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| failure(r) == Some(Failure::UnknownSubcommand)) {
        let sub = subcommand(c, &r.verb);
        let said = first_line(if r.stderr.trim().is_empty() { &r.error } else { &r.stderr });
        let bin = sub.split(' ').next().unwrap_or("");
        h.push(SURFACE, ptr(r), format!("\"{sub}\" is not a command of this CLI ({said})"), format!("Point \"{}\".cli at a subcommand that exists (see \"{bin} --help\"), or remove \"{}\" from surface.json, policy.json, and HARNESS.md.", r.verb, r.verb));
    }
}

/// R015
pub fn bin_missing(c: &Ctx, h: &mut Hits) {
    for r in probes(c).filter(|r| failure(r) == Some(Failure::BinMissing)).take(1) {
        h.push(
            SURFACE,
            "/wrap/bin",
            format!("`{}` could not run: {}", r.verb, r.error),
            "install the CLI so it is on PATH (or fix wrap.bin), then check again",
        );
    }
}

/// R016
pub fn sandbox_hid_data(c: &Ctx, h: &mut Hits) {
    for r in probes(c) {
        let Some(paths) = &r.hidden else { continue };
        let what = if r.ok {
            let shown = serde_json::from_str::<Value>(r.output.trim())
                .map_or_else(|_| first_line(&r.output).to_string(), |v| v.to_string());
            format!("returns no data ({})", shown.chars().take(80).collect::<String>())
        } else {
            format!("fails ({})", first_line(&r.error))
        };
        let id = &c.pack.id;
        h.push(
            SURFACE,
            ptr(r),
            format!(
                "`{}` {what} under the sandbox, and returns data once it may read {}: Landlock keeps a wrap's command to the default view, which hides {}",
                r.verb,
                paths.join(" and "),
                if paths.len() == 1 { "it" } else { "them" }
            ),
            format!(
                "declare {} in wrap.read (\"read\": [{}]), the pack's way to ask, and say in HARNESS.md why `{}` needs {}; the operator lends {} with `hcpx allow-read {id} {}` (sandbox.json packs.{id}.read)",
                paths.join(" and "),
                paths.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", "),
                r.verb,
                if paths.len() == 1 { "it" } else { "them" },
                if paths.len() == 1 { "it" } else { "them" },
                paths.join(" ")
            ),
        );
    }
}
