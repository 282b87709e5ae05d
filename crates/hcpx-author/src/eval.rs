//! `hcpx eval`: replays a pack's `hcp.eval.json` cases on the exec pipeline, as an agent Principal holding every
//! grant, in a throw-away store, with the confirm gate on.

use serde::Serialize;
use serde_json::Value;
use std::path::Path;

use crate::model::ResultEnvelope;
use crate::pack::raw::RawEvalCase;
use crate::pack::Operation;
use crate::pack::Pack;
use crate::trial::Trial;

/// Default per-case timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// How a run of the cases is set up.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub timeout_ms: u64,
    /// Where the cases run (`TrialEnv::operator`).
    pub env: crate::trial::TrialEnv,
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
    /// Where the cases ran.
    pub ran_in: String,
}

impl EvalReport {
    /// `N of M case(s) passed; p50 X ms, p95 Y ms`: the line every face ends the cases with.
    pub fn summary(&self) -> String {
        format!(
            "{} of {} case(s) passed; p50 {} ms, p95 {} ms",
            self.passed,
            self.cases.len(),
            self.p50_ms,
            self.p95_ms
        )
    }
}

/// Approximate token count of `text`.
pub fn approx_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

/// Why the cases of a pack could not be run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{0}")]
    Pack(#[from] crate::pack::PackError),
    #[error("{} has no hcp.eval.json; write cases as docs/format.md#hcp-eval describes, or run `hcpx check {} --init-evals`", .0.display(), .0.display())]
    NoCases(std::path::PathBuf),
    #[error("{0}")]
    Trial(#[from] crate::trial::TrialError),
}

/// Runs every case of the pack in `dir`. `progress(n, m, title)` is told before each case.
pub fn run_evals(
    dir: &Path,
    opts: &EvalOptions,
    progress: &dyn Fn(usize, usize, &str),
) -> Result<EvalReport, EvalError> {
    let pack = Pack::load(dir)?;
    let Some(evals) = pack.evals.as_ref() else {
        return Err(EvalError::NoCases(dir.to_path_buf()));
    };
    let trial = Trial::new(dir, &pack, opts.timeout_ms, &opts.env)?;
    Ok(run_cases(&trial, &pack, &evals.cases, progress))
}

/// Runs `cases` on an installed trial of `pack`.
pub fn run_cases(
    trial: &Trial,
    pack: &Pack,
    cases: &[RawEvalCase],
    progress: &dyn Fn(usize, usize, &str),
) -> EvalReport {
    let mut results = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let title = pack
            .command(&case.verb)
            .and_then(|c| c.title.render(&case.args, None))
            .unwrap_or_else(|| format!("{} {}", pack.id, case.verb));
        progress(i + 1, cases.len(), &title);
        results.push(run_case(trial, pack, case));
    }
    let times: Vec<u64> = results.iter().filter(|r| r.ran).map(|r| r.ms).collect();
    let (p50_ms, p95_ms) = (percentile(&times, 50), percentile(&times, 95));
    let passed = results.iter().filter(|r| r.passed).count();
    EvalReport {
        ok: passed == results.len(),
        pack_id: pack.id.clone(),
        passed,
        failed: results.len() - passed,
        p50_ms,
        p95_ms,
        cases: results,
        ran_in: trial.ran_in(pack.workspace),
    }
}

/// The `p`th percentile (nearest rank, rounding up) of `values`; 0 when empty.
pub fn percentile(values: &[u64], p: usize) -> u64 {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        0
    } else {
        v[((v.len() - 1) * p).div_ceil(100)]
    }
}

/// The first argument of `case` that still holds a `TODO` placeholder.
pub fn todo_arg(case: &RawEvalCase) -> Option<&str> {
    case.args.iter().find(|(_, v)| v.as_str().is_some_and(|s| s.starts_with("TODO"))).map(|(k, _)| k.as_str())
}

fn run_case(trial: &Trial, pack: &Pack, case: &RawEvalCase) -> CaseResult {
    let mut r = CaseResult {
        name: case.name.clone(),
        verb: case.verb.clone(),
        passed: false,
        ran: false,
        ms: 0,
        tokens: 0,
        reason: None,
    };
    if let Some(k) = todo_arg(case) {
        r.reason = Some(format!("argument `{k}` is still a TODO placeholder; replace it with a real value"));
        return r;
    }
    // A write that would get past the gate runs only in a project it may change.
    let would_write = pack.command(&case.verb).is_some_and(|c| {
        c.policy.operation == Operation::Write
            && (!c.policy.confirm
                || crate::args::GATE_ARGS.iter().any(|g| case.args.get(*g) == Some(&Value::Bool(true))))
    });
    if would_write && pack.workspace == crate::pack::WorkspaceMode::Project {
        if let Err(why) = trial.may_write() {
            r.reason = Some(why);
            return r;
        }
    }
    let call = trial.call(&case.verb, case.args.clone());
    let out = call.out;
    r.ms = call.ms;
    r.ran = true;
    let output = output_of(&out);
    r.tokens = approx_tokens(&output);
    r.reason = check(case, &out, &output, r.ms, r.tokens).err();
    // A read that passes on an empty result may only be blind: when a system path lent to it brings data, the
    // case passed on what the sandbox hid, not on what is there.
    let read = pack.command(&case.verb).is_some_and(|c| c.policy.operation == Operation::Read);
    if r.reason.is_none() && out.ok && read {
        if let Some(paths) = trial.hidden_paths(&case.verb, &case.args, &out) {
            let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            r.reason = Some(format!(
                "passes only on an empty result: under the sandbox `{}` sees no data, and returns some once it may read {}; the operator lends it with `hcpx allow-read {} {}` (R016)",
                case.verb,
                shown.join(" and "),
                pack.id,
                shown.join(" ")
            ));
        }
    }
    r.passed = r.reason.is_none();
    r
}

pub use crate::trial::output_of;

fn check(case: &RawEvalCase, out: &ResultEnvelope, output: &str, ms: u64, tokens: u64) -> Result<(), String> {
    let e = &case.expect;
    if out.code == Some(crate::model::Code::Timeout) {
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
            return Err(if json {
                "expected JSON output, got text".into()
            } else {
                "expected text output, got JSON".into()
            });
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
