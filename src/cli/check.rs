//! `hcpx check DIR`: the scored review; exit 0 with nothing to fix, 2 on warnings only, 1 on any error.

use serde::Serialize;

use super::{exit, CheckArgs};
use crate::output::Printer;
use crate::report::{CliError, Report, Text};
use hcpx_author::check::{
    agent_markdown, check_dir, init_evals, CheckOptions, CheckReport, InitOutcome, Severity,
};
use hcpx_pack::Pack;

/// Runs `hcpx check`.
pub fn run(p: &Printer, a: &CheckArgs) -> anyhow::Result<u8> {
    if a.init_evals || a.add_evals {
        let pack =
            Pack::load(&a.dir).map_err(|e| CliError::new(format!("cannot write hcp.eval.json: {e}")))?;
        match init_evals(&a.dir, &pack, a.add_evals) {
            Ok(InitOutcome::Wrote { path, cases }) => p.message(&format!(
                "wrote {} with {cases} case(s); replace every TODO with a real value",
                path.display()
            )),
            Ok(InitOutcome::Exists { path }) => p.message(&format!(
                "{} exists; left as it is (--init-evals never changes one; --add-evals adds the starter cases it lacks)",
                path.display()
            )),
            Ok(InitOutcome::Added { path, added: 0 }) => p.message(&format!(
                "{} already has a case for every read and a refusal for every gated write; left as it is",
                path.display()
            )),
            Ok(InitOutcome::Added { path, added }) => p.message(&format!(
                "added {added} missing case(s) to {}, after its own; replace every TODO with a real value",
                path.display()
            )),
            Err(e) => {
                return Err(
                    CliError::new(format!("cannot write hcp.eval.json in {}: {e}", a.dir.display())).into()
                )
            }
        }
    }
    let env = super::exec::trial_env(&a.project).map_err(CliError::new)?;
    let opts = CheckOptions { probe: a.probe, eval: !a.no_eval, timeout_ms: a.timeout, env };
    let report = checked_with_progress(p, &a.dir, &opts);
    let dir = a.dir.display().to_string();
    Ok(p.report(&Checked { report: &report, agent: a.agent.then_some(dir.as_str()), strict: a.strict }))
}

/// The review as `hcpx check` shows it: for a person, or as markdown for an agent (`--agent`); its exit code
/// says whether warnings alone fail it (`--strict`).
#[derive(Serialize)]
#[serde(transparent)]
struct Checked<'a> {
    report: &'a CheckReport,
    #[serde(skip)]
    agent: Option<&'a str>,
    #[serde(skip)]
    strict: bool,
}

impl Report for Checked<'_> {
    fn text(&self, out: &Text<'_>) {
        match self.agent {
            Some(dir) => out.data(agent_markdown(self.report, dir).trim_end()),
            None => human(out, self.report),
        }
    }

    fn exit(&self) -> u8 {
        match (self.report.errors, self.report.warnings) {
            (0, 0) => exit::OK,
            (0, _) if !self.strict => exit::WARNING,
            _ => exit::FAILURE,
        }
    }
}

fn human(p: &Text<'_>, r: &CheckReport) {
    for f in &r.findings {
        let (label, color) = match f.severity {
            Severity::Error => ("error", "31"),
            Severity::Warning => ("warning", "33"),
            Severity::Info => ("info", "36"),
        };
        let pad = " ".repeat(8usize.saturating_sub(label.len()));
        p.data_labeled(label, color, &format!("{pad}{:<16} {} {}", f.id, f.file, f.pointer));
        p.data(&format!("        {}", f.message));
        p.data(&format!("        fix: {}", f.fix));
    }
    if let Some(probes) = &r.probes {
        let ran = probes.iter().filter(|x| x.ran).count();
        p.data(&format!("probes: {ran} read(s) run, {} skipped", probes.len() - ran));
    }
    if let Some(e) = &r.evals {
        p.data(&format!("evals: {}", e.summary()));
    }
    if let (Some(reach), Some(id)) = (&r.network, &r.pack_id) {
        for line in reach.lines(id) {
            p.data(&format!("network: {line}"));
        }
    }
    if let Some(dir) = &r.ran_in {
        p.message(&format!("probes and cases ran in {dir}"));
    }
    for s in &r.skipped {
        p.message(&format!("skipped {s}"));
    }
    let name = r.pack_id.as_deref().unwrap_or("pack");
    let ready = if r.ready { "; ready to share" } else { "" };
    // The grade a score alone would have, when an error capped it: the same score then reads the same.
    let by_score = hcpx_author::check::grade(r.score, 0);
    let capped = if r.errors > 0 && by_score.to_string() != r.grade.to_string() {
        format!(" (capped by the error(s); the score alone is a {by_score})")
    } else {
        String::new()
    };
    p.data(&format!(
        "{name}: score {}/100, grade {}{capped}; {} error(s), {} warning(s), {} note(s){ready}",
        r.score, r.grade, r.errors, r.warnings, r.notes
    ));
}

/// `check_dir` with each probe and case shown as progress (`hcpx check`, and `hcpx publish` before it pushes).
pub fn checked_with_progress(p: &Printer, dir: &std::path::Path, opts: &CheckOptions) -> CheckReport {
    let progress =
        |layer: &str, n: usize, m: usize, title: &str| p.progress(&format!("{layer} {n} of {m}: {title}"));
    let report = check_dir(dir, opts, &progress);
    p.progress_done();
    report
}
