//! `hcpx exec ID VERB`: sends the envelope through the pipeline; on a terminal, shows the live then the done title.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::Serialize;

use super::{exit, open_store, ExecArgs};
use crate::output::Printer;
use crate::report::{CliError, Report, Text};
use hcpx_model::{Envelope, Invoker, Principal, ResultEnvelope};
use hcpx_runtime::adapter::ExecHooks;
use hcpx_runtime::{CallContext, Runtime};
use hcpx_store::Store;

/// The local CLI Principal: its grants come from `grants.json` at each call (every grant when absent).
pub fn local_principal(store: &Store) -> anyhow::Result<Principal> {
    store.local_principal(Invoker::Cli).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The caller's project: `--project DIR`, else `HCP_PROJECT_DIR`, else the current directory. A `--project` that
/// is not a directory is refused here, naming it, rather than handed to a call.
pub fn project_dir(arg: &super::ProjectArg) -> anyhow::Result<Option<PathBuf>> {
    Ok(trial_project(arg)?.dir)
}

/// Where `hcpx check`, `hcpx eval` and `hcpx publish` try a pack: the operator's environment with the project
/// `arg` names (`hcpx_author::trial::TrialEnv::operator`).
pub fn trial_env(arg: &super::ProjectArg) -> Result<hcpx_author::trial::TrialEnv, String> {
    let project = trial_project(arg).map_err(|e| e.to_string())?;
    hcpx_author::trial::TrialEnv::operator(project)
}

/// The project as `hcpx eval` and `hcpx check` hand it to a trial: named (`--project`, `HCP_PROJECT_DIR`) or
/// merely the directory `hcpx` started in, where write cases do not run.
pub fn trial_project(arg: &super::ProjectArg) -> anyhow::Result<hcpx_author::trial::TrialProject> {
    match &arg.dir {
        Some(d) if d.is_dir() => Ok(hcpx_author::trial::TrialProject {
            dir: Some(std::path::absolute(d).unwrap_or_else(|_| d.clone())),
            explicit: true,
        }),
        Some(d) => {
            anyhow::bail!("--project {}: not a directory; pass an existing project directory", d.display())
        }
        None => Ok(hcpx_author::trial::TrialProject {
            dir: CallContext::local().project_dir,
            explicit: std::env::var_os("HCP_PROJECT_DIR").is_some_and(|v| !v.is_empty()),
        }),
    }
}

struct Terminal {
    on: bool,
    verbose: bool,
    line: Mutex<Option<String>>,
}

impl ExecHooks for Terminal {
    fn watching(&self) -> bool {
        self.on || self.verbose
    }

    fn started(&self, live_title: Option<&str>, command_line: &str) {
        if let Ok(mut l) = self.line.lock() {
            *l = Some(command_line.to_string());
        }
        let mut err = std::io::stderr().lock();
        if self.verbose {
            let _ = writeln!(err, "$ {}", crate::output::terminal_safe(command_line));
        }
        if self.on {
            let shown = live_title.unwrap_or(command_line);
            let _ = write!(err, "\r\x1b[2K… {}", crate::output::terminal_safe(shown));
            let _ = err.flush();
        }
    }
}

/// `hcpx exec --dry-run`: what the call would run, or the denial it would get; nothing runs.
fn dry_run(p: &Printer, runtime: &Runtime, principal: &Principal, env: &Envelope, words: &[String]) -> u8 {
    let ctx = CallContext { project_dir: runtime.project_dir().cloned(), ..CallContext::default() };
    match runtime.dry_run_words(principal, env, words, &ctx) {
        Ok(dry) => p.report(&Dry { ok: true, dry_run: dry }),
        Err(d) => {
            let out = d.into_envelope(&env.pack_id, &env.verb_key);
            p.report(&Call::new(&out, |t: &Text<'_>| print_failure(t, &out)))
        }
    }
}

/// `hcpx exec --dry-run`: the plan.
#[derive(Serialize)]
struct Dry {
    ok: bool,
    dry_run: hcpx_runtime::DryRun,
}

impl Report for Dry {
    fn text(&self, out: &Text<'_>) {
        let dry = &self.dry_run;
        let plan = &dry.plan;
        let argv = hcpx_runtime::adapter::wrap::command_line(std::path::Path::new(&plan.program), &plan.argv);
        out.data(&format!("would run: {argv}"));
        let access = if plan.workdir_writable { "writable" } else { "read-only" };
        out.data(&format!("in: {} ({access})", plan.workdir));
        out.data(&format!("environment: {}", plan.env.join(" ")));
        let fields = if dry.binding_fields.is_empty() {
            String::new()
        } else {
            format!(" (fields: {})", dry.binding_fields.join(", "))
        };
        out.data(&format!("binding: {}{fields}", dry.binding_mode.as_str()));
        out.data(&format!("operation: {}", dry.operation.as_str()));
        for line in dry.preview.as_ref().map(super::confirm::card_lines).unwrap_or_default() {
            out.data(&line);
        }
        if dry.confirm_required {
            out.message(
                "as given, the call would stop at the confirm gate: add confirm=true once the person agrees",
            );
        }
        out.message("dry run: nothing ran");
    }
}

/// A call's outcome: its envelope under `--json`, else what `text` writes; the call's exit code.
pub struct Call<'a, F> {
    doc: &'a ResultEnvelope,
    text: F,
}

impl<'a, F: Fn(&Text<'_>)> Call<'a, F> {
    /// The outcome `doc`, shown in text by `text`.
    pub fn new(doc: &'a ResultEnvelope, text: F) -> Call<'a, F> {
        Call { doc, text }
    }
}

impl<F> Serialize for Call<'_, F> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.doc.serialize(s)
    }
}

impl<F: Fn(&Text<'_>)> Report for Call<'_, F> {
    fn text(&self, out: &Text<'_>) {
        (self.text)(out);
    }

    fn exit(&self) -> u8 {
        exit_of(self.doc)
    }
}

/// A failed envelope in text: its message and code on stderr (`error: … (code)`).
pub fn print_failure(p: &Text<'_>, out: &ResultEnvelope) {
    if !out.ok {
        let code = out.code.map(|c| c.as_str()).unwrap_or("error");
        p.error(&format!("{} ({code})", out.error.as_deref().unwrap_or("failed")));
    }
}

/// The exit code of a call: 0, or its denial's from `Code::status()`.
pub fn exit_of(out: &ResultEnvelope) -> u8 {
    match (out.ok, out.code) {
        (true, _) => exit::OK,
        (false, Some(code)) => code.status().exit,
        (false, None) => exit::FAILURE,
    }
}

/// One command as `hcpx exec ID` without a command lists it under `--json`.
#[derive(Serialize)]
struct CommandLine<'a> {
    verb_key: &'a str,
    operation: hcpx_pack::pack::Operation,
    confirm: bool,
    exec: &'a str,
}

/// `hcpx exec ID` without a command: the pack's commands with a ready-to-run line each, and a usage exit.
fn no_command(a: &ExecArgs) -> anyhow::Result<u8> {
    let report =
        Runtime::new(open_store()?).commands_of(&a.id, None).map_err(|d| CliError::new(d.message))?;
    let error = format!(
        "hcpx exec {} needs a command: one of {} (`hcpx commands {}` shows their arguments)",
        a.id,
        report.commands.iter().map(|c| c.verb_key.as_str()).collect::<Vec<_>>().join(", "),
        a.id
    );
    let rows: Vec<CommandLine<'_>> = report
        .commands
        .iter()
        .map(|c| CommandLine {
            verb_key: &c.verb_key,
            operation: c.operation,
            confirm: c.confirm,
            exec: &c.exec,
        })
        .collect();
    let mut err = CliError::new(error).with_field("commands", &rows).with_exit(exit::USAGE);
    for c in &report.commands {
        let gate = if c.confirm { ", needs confirm" } else { "" };
        err = err.with_note(format!("  {} ({}{gate}): {}", c.verb_key, c.operation, c.exec));
    }
    Err(err.into())
}

/// Runs `hcpx exec`.
pub fn run(p: &Printer, a: &ExecArgs) -> anyhow::Result<u8> {
    if a.verb.is_empty() {
        return no_command(a);
    }
    let store = open_store()?;
    let principal = local_principal(&store)?;
    let runtime = Runtime::new(store).one_shot().with_project_dir(project_dir(&a.project)?);
    let project_id =
        a.project_id.clone().or_else(|| std::env::var("HCP_PROJECT_ID").ok()).filter(|s| !s.is_empty());
    let env = Envelope { project_id, ..Envelope::new(&a.id, &a.verb, Default::default()) };
    let mut words = a.words.clone();
    if a.mode.is_some() {
        words.push("mode=mock".into());
    }
    if a.dry_run {
        return Ok(dry_run(p, &runtime, &principal, &env, &words));
    }
    let hooks = Terminal { on: p.live(), verbose: a.verbose, line: Mutex::new(None) };
    let out = runtime.exec_words(&principal, &env, &words, &hooks);
    let started = hooks.line.lock().ok().and_then(|l| l.clone());
    if let Some(line) = started.filter(|_| hooks.on) {
        let shown =
            if out.ok { format!("✓ {}", out.title.clone().unwrap_or(line)) } else { format!("✗ {line}") };
        let _ = writeln!(std::io::stderr().lock(), "\r\x1b[2K{}", crate::output::terminal_safe(&shown));
    }
    let shown = super::confirm::with_hint(a, &out);
    let code = p.report(&Call::new(shown.as_ref().unwrap_or(&out), |t: &Text<'_>| {
        match &out.result {
            Some(serde_json::Value::String(s)) => t.data(s.trim_end_matches('\n')),
            Some(v) => t.data(&serde_json::to_string_pretty(v).unwrap_or_default()),
            None => {}
        }
        print_failure(t, &out);
        // A person at the terminal sees what they are asked to approve, and how to approve it.
        super::confirm::print_card(t, a, &out);
        if out.truncated == Some(true) {
            t.message("note: output was cut at max_output_bytes (sandbox.json)");
        }
    }));
    // The process ends right after this call: the OS reclaims the engine, its code and the compiled component
    // faster than tearing them down piece by piece (about 2% of a composite exec). Nothing in it holds
    // unwritten data: the store writes each file atomically when it changes.
    std::mem::forget(runtime);
    Ok(code)
}
