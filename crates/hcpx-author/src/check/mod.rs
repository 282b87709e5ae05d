//! `hcpx check`: a careful maintainer's review of a pack as data plus small functions, scored so a pack
//! author (or a coding agent) knows what to fix first and when the pack is ready to share.

mod agent;
mod evals;
pub mod guest;
mod init;
mod manifest;
mod policy;
pub mod probe;
pub mod rules;
mod skill;
mod structure;

use serde::Serialize;
use std::path::Path;

use crate::eval::{run_cases, EvalReport};
use crate::lint::LintIssue;
use crate::model::wire::wire_enum;
use crate::pack::Pack;
use crate::trial::Trial;

pub use agent::agent_markdown;
pub use init::{init_evals, starter_cases, InitOutcome};
pub use probe::ProbeRecord;
pub use rules::{docs_markdown, Rule, RULES};

wire_enum! {
    /// How bad a finding is. Errors cost 12 points, warnings 4; notes never fail and cost nothing.
    #[derive(PartialOrd, Ord)]
    pub enum Severity ("severity") {
        Error = "error",
        Warning = "warning",
        Info = "info",
    }
}

wire_enum! {
    /// The layer a rule belongs to; each gets its own score. `ALL` is the report order.
    #[derive(PartialOrd, Ord)]
    pub enum Category ("category") {
        Structure = "structure",
        Manifest = "manifest",
        Policy = "policy",
        Skill = "skill",
        Probe = "probe",
        Eval = "eval",
    }
}

/// One finding, as `--json` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub id: String,
    pub severity: Severity,
    pub category: Category,
    pub file: String,
    /// A JSON pointer into `file`, or a Markdown heading for `HARNESS.md`.
    pub pointer: String,
    pub message: String,
    pub fix: String,
    /// Where the rule's reason is written down.
    pub docs: String,
}

/// A rule's hit before the registry tags it with the rule's id.
#[derive(Debug, Clone)]
pub struct Hit {
    pub file: String,
    pub pointer: String,
    pub message: String,
    pub fix: String,
}

/// What rule functions push their hits into.
#[derive(Debug, Default)]
pub struct Hits(pub Vec<Hit>);

impl Hits {
    /// Records one hit.
    pub fn push(
        &mut self,
        file: &str,
        pointer: impl Into<String>,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.0.push(Hit {
            file: file.to_string(),
            pointer: pointer.into(),
            message: message.into(),
            fix: fix.into(),
        });
    }
}

/// What every rule may look at.
pub struct Ctx<'a> {
    pub dir: &'a Path,
    pub pack: &'a Pack,
    /// Probe records, when `--probe` ran them.
    pub probes: Option<&'a [ProbeRecord]>,
    /// The eval layer's report, when it ran.
    pub evals: Option<&'a EvalReport>,
    /// What a composite's component says it implements (`describe()`), or why it could not say.
    pub described: Option<&'a Result<Vec<String>, String>>,
    /// The language of a composite's guest, when its component names its toolchain: fixes name its own way.
    pub lang: Option<guest::GuestLang>,
}

/// How `hcpx check` runs.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub probe: bool,
    pub eval: bool,
    pub timeout_ms: u64,
    /// Where the probe and the cases run (`TrialEnv::operator`).
    pub env: crate::trial::TrialEnv,
}

/// A category's own score.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CategoryScore {
    pub category: Category,
    pub score: u32,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub pack_id: Option<String>,
    pub dir: String,
    pub score: u32,
    pub grade: char,
    /// 90 or more with no errors.
    pub ready: bool,
    pub errors: usize,
    pub warnings: usize,
    pub notes: usize,
    pub categories: Vec<CategoryScore>,
    pub findings: Vec<Finding>,
    /// Present when `--probe` ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probes: Option<Vec<ProbeRecord>>,
    /// Present when the eval layer ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evals: Option<EvalReport>,
    /// Layers that did not run, and why.
    pub skipped: Vec<String>,
    /// Where probes and eval cases ran, when either did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ran_in: Option<String>,
    /// What the commands reach over the network under the operator's `sandbox.json`: the declared hosts and
    /// who allowed each, and `anywhere` for a wrap that asks for `inet`. Absent when the pack reaches nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::store::hosts::Reach>,
}

/// Progress while probes and eval cases run: `(layer, n, m, title)`.
pub type Progress<'a> = &'a dyn Fn(&str, usize, usize, &str);

/// Checks the pack in `dir`. Never fails: what cannot be checked is a finding or a skipped layer.
pub fn check_dir(dir: &Path, opts: &CheckOptions, progress: Progress<'_>) -> CheckReport {
    let analysis = crate::pack::analyze(dir);
    let mut skipped = Vec::new();
    let mut ran_in = None;
    let mut network = None;
    let (pack, findings, probes, evals) = match analysis.pack {
        Some(pack) if analysis.issues.is_empty() => {
            let (findings, probes, evals) = check_pack(dir, &pack, opts, progress, &mut skipped, &mut ran_in);
            network = crate::store::hosts::Reach::of(&pack, &opts.env.sandbox);
            (Some(pack), findings, probes, evals)
        }
        _ => {
            skipped.push("manifest, policy, skill, probe and eval layers: the pack fails lint; fix the L- findings first".into());
            (None, analysis.issues.iter().map(lint_finding).collect(), None, None)
        }
    };
    let mut r = report(dir, pack.map(|p| p.id).or(analysis.pack_id), findings, probes, evals, skipped);
    r.ran_in = ran_in;
    r.network = network;
    r
}

fn check_pack(
    dir: &Path,
    pack: &Pack,
    opts: &CheckOptions,
    progress: Progress<'_>,
    skipped: &mut Vec<String>,
    ran_in: &mut Option<String>,
) -> (Vec<Finding>, Option<Vec<ProbeRecord>>, Option<EvalReport>) {
    // A component whose describe() misses a command fails every call the same way: S007 says so once, and the
    // probe and eval layers, which would repeat it per command and per case, do not run.
    let described = (pack.kind == crate::pack::AdapterKind::Composite)
        .then(|| crate::adapter::composite::describe_pack(pack, opts.env.compile_cache.as_deref()));
    let component_ok = described
        .as_ref()
        .is_none_or(|d| d.as_ref().is_ok_and(|names| pack.commands.keys().all(|k| names.contains(k))));
    if !component_ok {
        skipped.push("probe and eval layers: the component's describe() does not list every command (S007); every call would fail the same way, so fix it first".into());
    }
    let wants_eval = component_ok && opts.eval && pack.evals.as_ref().is_some_and(|e| !e.cases.is_empty());
    let wants_probe = component_ok && opts.probe;
    let mut trial = None;
    if wants_probe || wants_eval {
        match Trial::new(dir, pack, opts.timeout_ms, &opts.env) {
            Ok(t) => {
                *ran_in = Some(t.ran_in(pack.workspace));
                trial = Some(t)
            }
            Err(e) => skipped.push(format!("probe and eval layers: cannot set up a trial store: {e}")),
        }
    }
    let probes = match (&trial, wants_probe) {
        (Some(t), true) => Some(probe::run_probes(t, pack, &|n, m, title| progress("probe", n, m, title))),
        _ => None,
    };
    if !opts.probe {
        skipped.push("probe layer: run with --probe to run the CLI the way an agent does".into());
    }
    let evals = match (&trial, wants_eval, &pack.evals) {
        (Some(t), true, Some(file)) => {
            Some(run_cases(t, pack, &file.cases, &|n, m, title| progress("case", n, m, title)))
        }
        _ => None,
    };
    if !opts.eval {
        skipped.push("eval layer: --no-eval".into());
    }
    drop(trial);
    let ctx = Ctx {
        dir,
        pack,
        probes: probes.as_deref(),
        evals: evals.as_ref(),
        described: described.as_ref(),
        lang: guest::sniff(pack),
    };
    (rules::run_all(&ctx), probes, evals)
}

fn lint_finding(i: &LintIssue) -> Finding {
    Finding {
        id: format!("L-{}", i.kind.as_str()),
        severity: Severity::Error,
        category: Category::Structure,
        file: i.file.clone(),
        pointer: i.pointer.clone(),
        message: i.message.clone(),
        fix: i.fix.clone(),
        docs: format!("docs/lint.md#{}", i.kind.as_str()),
    }
}

/// 100, less 12 per error and 4 per warning, never below 0 (docs/spec.md §21: "each error costs 12
/// points and each warning 4").
pub fn score(errors: usize, warnings: usize) -> u32 {
    100u32
        .saturating_sub((errors as u32).saturating_mul(12))
        .saturating_sub((warnings as u32).saturating_mul(4))
}

/// The letter grade of a score: A from 90, B from 80, C from 70, D from 60, else F; any error caps it at D
/// (the spec's rule, so 76 with two errors is a D where 76 from six warnings is a C: the report says why).
pub fn grade(score: u32, errors: usize) -> char {
    let g = match score {
        90.. => 'A',
        80..=89 => 'B',
        70..=79 => 'C',
        60..=69 => 'D',
        _ => 'F',
    };
    if errors > 0 && g < 'D' {
        'D'
    } else {
        g
    }
}

fn count(findings: &[Finding], sev: Severity) -> usize {
    findings.iter().filter(|f| f.severity == sev).count()
}

fn report(
    dir: &Path,
    pack_id: Option<String>,
    mut findings: Vec<Finding>,
    probes: Option<Vec<ProbeRecord>>,
    evals: Option<EvalReport>,
    skipped: Vec<String>,
) -> CheckReport {
    findings.sort_by_key(|f| (f.severity, f.category));
    let (errors, warnings, notes) = (
        count(&findings, Severity::Error),
        count(&findings, Severity::Warning),
        count(&findings, Severity::Info),
    );
    let categories = Category::ALL
        .iter()
        .map(|&c| {
            let mine: Vec<Finding> = findings.iter().filter(|f| f.category == c).cloned().collect();
            let (e, w, n) = (
                count(&mine, Severity::Error),
                count(&mine, Severity::Warning),
                count(&mine, Severity::Info),
            );
            CategoryScore { category: c, score: score(e, w), errors: e, warnings: w, notes: n }
        })
        .collect();
    let total = score(errors, warnings);
    CheckReport {
        pack_id,
        dir: dir.display().to_string(),
        score: total,
        grade: grade(total, errors),
        ready: total >= 90 && errors == 0,
        errors,
        warnings,
        notes,
        categories,
        findings,
        probes,
        evals,
        skipped,
        ran_in: None,
        network: None,
    }
}
