//! `hcpx eval`: replays a pack's `hcp.eval.json` cases on the exec pipeline, as an agent Principal holding every
//! grant, in a throw-away store, with the confirm gate on.

use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::grants::Grants;
use crate::pack::raw::RawEvalCase;
use crate::pack::{Bin, Pack};
use crate::runtime::{Envelope, Invoker, Principal, ResultEnvelope, Runtime};
use crate::store::config::SandboxConfig;
use crate::store::{unique_name, Store};

/// Default per-case timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// How a run of the cases is set up.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub timeout_ms: u64,
    /// Where `project`-mode packs run (the directory `hcpx eval` started from).
    pub project_dir: Option<PathBuf>,
}

/// One case's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub verb: String,
    pub passed: bool,
    /// False when the case failed without running (a `TODO` argument).
    pub ran: bool,
    pub ms: u64,
    /// Approximate tokens of the output (characters / 4, rounded up).
    pub tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    pub ok: bool,
    pub pack_id: String,
    pub passed: usize,
    pub failed: usize,
    pub p50_ms: u64,
    pub p95_ms: u64,
    pub cases: Vec<CaseResult>,
}

/// Approximate token count of `text`.
pub fn approx_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Runs every case of the pack in `dir`. `progress(n, m, title)` is told before each case.
pub fn run_evals(dir: &Path, opts: &EvalOptions, progress: &dyn Fn(usize, usize, &str)) -> Result<EvalReport, String> {
    let pack = Pack::load(dir).map_err(|e| e.to_string())?;
    let Some(evals) = pack.evals.clone() else {
        return Err(format!("{} has no hcp.eval.json; write cases as check-and-evaluate.md describes", dir.display()));
    };
    let home = std::env::temp_dir().join(unique_name("hcpx-eval"));
    let result = run_in(&home, dir, &pack, &evals.cases, opts, progress);
    let _ = std::fs::remove_dir_all(&home);
    result
}

fn run_in(home: &Path, dir: &Path, pack: &Pack, cases: &[RawEvalCase], opts: &EvalOptions, progress: &dyn Fn(usize, usize, &str)) -> Result<EvalReport, String> {
    let store = Store::open(home).map_err(|e| e.to_string())?;
    store.install(dir).map_err(|e| e.to_string())?;
    store.set_activated(std::slice::from_ref(&pack.id), true).map_err(|e| e.to_string())?;
    let mut sandbox = SandboxConfig { timeout_ms: Some(opts.timeout_ms), ..SandboxConfig::default() };
    if let Some(Bin::Name(name)) = pack.wrap.as_ref().map(|w| &w.bin) {
        // Evaluating a pack explicitly allows its own CLI, and nothing else.
        sandbox.allow.push(name.clone());
    }
    store.write_json("sandbox.json", &sandbox).map_err(|e| e.to_string())?;
    let runtime = Runtime::new(store).with_project_dir(opts.project_dir.clone());
    let agent = Principal { id: "eval-agent".into(), tenant: "local".into(), grants: Grants::All, invoker: Invoker::Json };
    let mut results = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let title = pack
            .command(&case.verb)
            .and_then(|c| c.title.render(&case.args, None))
            .unwrap_or_else(|| format!("{} {}", pack.id, case.verb));
        progress(i + 1, cases.len(), &title);
        results.push(run_case(&runtime, &agent, &pack.id, case));
    }
    let mut times: Vec<u64> = results.iter().filter(|r| r.ran).map(|r| r.ms).collect();
    times.sort_unstable();
    let pct = |p: usize| if times.is_empty() { 0 } else { times[((times.len() - 1) * p).div_ceil(100)] };
    let passed = results.iter().filter(|r| r.passed).count();
    Ok(EvalReport {
        ok: passed == results.len(),
        pack_id: pack.id.clone(),
        passed,
        failed: results.len() - passed,
        p50_ms: pct(50),
        p95_ms: pct(95),
        cases: results,
    })
}

fn todo_arg(case: &RawEvalCase) -> Option<&str> {
    case.args.iter().find(|(_, v)| v.as_str().is_some_and(|s| s.starts_with("TODO"))).map(|(k, _)| k.as_str())
}

fn run_case(runtime: &Runtime, agent: &Principal, pack_id: &str, case: &RawEvalCase) -> CaseResult {
    let mut r = CaseResult { name: case.name.clone(), verb: case.verb.clone(), passed: false, ran: false, ms: 0, tokens: 0, reason: None };
    if let Some(k) = todo_arg(case) {
        r.reason = Some(format!("argument `{k}` is still a TODO placeholder; replace it with a real value"));
        return r;
    }
    let started = Instant::now();
    let out = runtime.exec(agent, &Envelope::new(pack_id, &case.verb, case.args.clone()));
    r.ms = started.elapsed().as_millis() as u64;
    r.ran = true;
    let output = output_of(&out);
    r.tokens = approx_tokens(&output);
    r.reason = check(case, &out, &output, r.ms, r.tokens).err();
    r.passed = r.reason.is_none();
    r
}

/// The command's stdout, or its JSON result when stdout is empty.
fn output_of(out: &ResultEnvelope) -> String {
    match (&out.stdout, &out.result) {
        (Some(s), _) if !s.trim().is_empty() => s.clone(),
        (_, Some(Value::String(s))) => s.clone(),
        (_, Some(v)) => v.to_string(),
        _ => String::new(),
    }
}

fn check(case: &RawEvalCase, out: &ResultEnvelope, output: &str, ms: u64, tokens: u64) -> Result<(), String> {
    let e = &case.expect;
    if out.code == Some(crate::runtime::Code::Timeout) {
        return Err(format!("timed out: {}", out.error.as_deref().unwrap_or("")));
    }
    if let Some(ok) = e.ok {
        if out.ok != ok {
            let why = out.error.as_deref().map(|m| format!(": {m}")).unwrap_or_default();
            return Err(format!("expected ok: {ok}, got ok: {}{why}", out.ok));
        }
    }
    if let Some(json) = e.json {
        let is_json = serde_json::from_str::<Value>(output.trim()).is_ok();
        if is_json != json {
            return Err(if json { "expected JSON output, got text".into() } else { "expected text output, got JSON".into() });
        }
    }
    for needle in e.contains.iter().flatten() {
        if !output.contains(needle.as_str()) {
            return Err(format!("output does not contain {needle:?}"));
        }
    }
    if let Some(want) = &e.error {
        let got = out.error.as_deref().unwrap_or("");
        if !got.contains(want.as_str()) {
            return Err(format!("expected error {want:?}, got {got:?}"));
        }
    }
    if let Some(max) = e.max_ms {
        if ms > max {
            return Err(format!("took {ms} ms, over max_ms {max}"));
        }
    }
    if let Some(max) = e.max_tokens {
        if tokens > max {
            return Err(format!("output is ~{tokens} tokens, over max_tokens {max}"));
        }
    }
    Ok(())
}
