//! `hcpx eval DIR`: one line per case, then the pass count and p50/p95; progress on a terminal only.

use super::{exit, EvalArgs};
use crate::output::Printer;
use crate::report::{CliError, OrFail, Report, Text};
use hcpx_author::eval::{run_evals, EvalOptions, EvalReport};

/// Runs `hcpx eval`.
pub fn run(p: &Printer, a: &EvalArgs) -> anyhow::Result<u8> {
    let progress = |n: usize, m: usize, title: &str| p.progress(&format!("case {n} of {m}: {title}"));
    let env = super::exec::trial_env(&a.project).map_err(CliError::new)?;
    let opts = EvalOptions { timeout_ms: a.timeout, env };
    let report = run_evals(&a.dir, &opts, &progress).or_fail()?;
    p.progress_done();
    Ok(p.report(&report))
}

impl Report for EvalReport {
    fn text(&self, out: &Text<'_>) {
        for c in &self.cases {
            match &c.reason {
                None => out.data(&format!("PASS {}  ({} ms, ~{} tokens)", c.name, c.ms, c.tokens)),
                Some(r) => out.data(&format!("FAIL {}: {r}", c.name)),
            }
        }
        out.data(&format!("{}: {}", self.pack_id, self.summary()));
        out.message(&format!("cases ran in {}", self.ran_in));
    }

    fn exit(&self) -> u8 {
        if self.ok {
            exit::OK
        } else {
            exit::FAILURE
        }
    }
}
