//! `hcpx eval DIR`: one line per case, then the pass count and p50/p95; progress on a terminal only.

use super::{exit, fail, EvalArgs};
use crate::output::Printer;
use hcpx_author::eval::{run_evals, EvalOptions};

/// Runs `hcpx eval`.
pub fn run(p: &Printer, a: &EvalArgs) -> anyhow::Result<u8> {
    let progress = |n: usize, m: usize, title: &str| p.progress(&format!("case {n} of {m}: {title}"));
    let env = match super::exec::trial_env(&a.project) {
        Ok(env) => env,
        Err(e) => return Ok(fail(p, &e)),
    };
    let opts = EvalOptions { timeout_ms: a.timeout, env };
    let report = match run_evals(&a.dir, &opts, &progress) {
        Ok(r) => r,
        Err(e) => return Ok(fail(p, &e.to_string())),
    };
    p.progress_done();
    if p.json {
        p.json_doc(&report);
    } else {
        for c in &report.cases {
            match &c.reason {
                None => p.data(&format!("PASS {}  ({} ms, ~{} tokens)", c.name, c.ms, c.tokens)),
                Some(r) => p.data(&format!("FAIL {}: {r}", c.name)),
            }
        }
        p.data(&format!("{}: {}", report.pack_id, report.summary()));
        p.message(&format!("cases ran in {}", report.ran_in));
    }
    Ok(if report.ok { exit::OK } else { exit::FAILURE })
}
