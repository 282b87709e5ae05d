//! The one analysis behind `hcpx lint` and `Pack::load`: every check runs, and a `Pack` is built only when none failed.

mod command;
mod hosts;
mod inject;
mod kind;
mod meta;
mod paths;

use cap_std::fs::Dir;
use indexmap::IndexMap;
use std::path::Path;

use super::files::{open_dir, parse_json, read_text};
use super::raw::*;
use super::{Binding, BindingMode, Pack, PolicyRow, Skill};
use crate::model::diagnostic::{pointer, Issues, LintIssue, LintKind};
use crate::model::naming::{is_command_name, is_pack_id};
use crate::template::Template;
use command::{build_command, check_template_users};
use kind::{check_kind, check_pass_through};
use meta::check_meta;
use paths::{check_pack_path, Want};

const SURFACE: &str = "surface.json";
const POLICY: &str = "policy.json";
const HARNESS: &str = "HARNESS.md";
const EVALS: &str = "hcp.eval.json";

/// The outcome of analysing a pack directory.
#[derive(Debug)]
pub struct Analysis {
    pub issues: Vec<LintIssue>,
    pub pack_id: Option<String>,
    /// Present only when `issues` is empty.
    pub pack: Option<Pack>,
}

/// Reads, checks and (when clean) builds the pack in `dir`.
pub fn analyze(dir: &Path) -> Analysis {
    let mut is = Issues::default();
    let Some(root) = open_dir(dir, &mut is) else {
        return Analysis { issues: is.list, pack_id: None, pack: None };
    };
    let surface = read_text(&root, SURFACE, true, &mut is);
    let policy_text = read_text(&root, POLICY, true, &mut is);
    let skill_text = read_text(&root, HARNESS, true, &mut is);
    let eval_text = read_text(&root, EVALS, false, &mut is);
    let manifest: Option<RawManifest> = surface.and_then(|t| parse_json(SURFACE, &t, &mut is));
    let policy: Option<RawPolicy> = policy_text.and_then(|t| parse_json(POLICY, &t, &mut is));
    let evals: Option<RawEvalFile> = eval_text.and_then(|t| parse_json(EVALS, &t, &mut is));
    let skill = skill_text.map(|t| Skill::parse(&t));
    let pack_id = manifest.as_ref().map(|m| m.id.clone());

    if let Some(s) = &skill {
        if !s.lead_has_text() {
            is.push(
                LintKind::SkillNoLead,
                HARNESS,
                "",
                "HARNESS.md has no lead: no text before its first `##` heading",
                "start HARNESS.md with a short paragraph saying what the pack is for and when to use it",
            );
        }
    }
    if let Some(p) = &policy {
        check_policy_rows(p, &mut is);
    }
    let pack = match (manifest, policy, skill) {
        (Some(m), policy, skill) => build(dir, &root, m, policy, skill, evals, &mut is),
        _ => None,
    };
    let pack = if is.is_empty() { pack } else { None };
    Analysis { issues: is.list, pack_id, pack }
}

fn check_policy_rows(p: &RawPolicy, is: &mut Issues) {
    for (key, row) in &p.verbs {
        if row.confirm && row.operation == Operation::Read {
            is.push(
                LintKind::ConfirmOnRead,
                POLICY,
                pointer(&["verbs", key, "confirm"]),
                format!("`{key}` is a read with `confirm: true`; reads are never gated"),
                format!(
                    "remove `confirm` from `{key}`, or set its `operation` to `write` if it changes anything"
                ),
            );
        }
    }
}

fn build(
    dir: &Path,
    root: &Dir,
    m: RawManifest,
    policy: Option<RawPolicy>,
    skill: Option<Skill>,
    evals: Option<RawEvalFile>,
    is: &mut Issues,
) -> Option<Pack> {
    if !is_pack_id(&m.id) {
        is.push(
            LintKind::BadName,
            SURFACE,
            "/id",
            format!("pack id {:?} breaks the naming rules", m.id),
            "use lower-case letters, digits, `-` and `_`, starting with a letter (at most 64 characters)",
        );
    }
    let kind = m.kind.unwrap_or(AdapterKind::Composite);
    let plane = m.plane.unwrap_or(Plane::Runtime);
    let mut binding = binding_of(&m, plane);
    if !is_pack_id(&binding.family) {
        is.push(
            LintKind::BadName,
            SURFACE,
            "/binding/family",
            format!("binding family {:?} breaks the naming rules", binding.family),
            "use lower-case letters, digits, `-` and `_`, starting with a letter, like a pack id",
        );
    }
    if plane == Plane::Control && binding.mode != BindingMode::Mothership {
        is.push(
            LintKind::ControlBinding,
            SURFACE,
            "/binding/mode",
            format!("a control-plane pack must use Binding mode mothership, not {}", binding.mode.as_str()),
            "set \"binding\": {\"mode\": \"mothership\"} or make the pack \"plane\": \"runtime\"",
        );
    }
    if let Some(bin) = &m.cli_bin {
        if bin.is_empty() || bin.contains(char::is_whitespace) || bin.contains('/') {
            is.push(
                LintKind::BadName,
                SURFACE,
                "/cliBin",
                format!("cliBin {bin:?} must be one word without `/`"),
                "set cliBin to the bare name of the CLI the Skill teaches",
            );
        }
    }

    let wrap = check_kind(root, &m, kind, is);
    let hosts = hosts::parse_hosts(&m.hosts, "/hosts", is);
    let pass_through = check_pass_through(&m, policy.as_ref(), is);
    let component = m.component.as_ref().map(|c| c.path.trim_start_matches("./").to_string());

    let policy_rows = policy.as_ref().map(|p| &p.verbs);
    if let Some(p) = &policy {
        if p.surface_id != m.id {
            is.push(
                LintKind::SurfaceIdMismatch,
                POLICY,
                "/surface_id",
                format!("policy.json surface_id {:?} differs from the manifest id {:?}", p.surface_id, m.id),
                format!("set \"surface_id\": {:?} in policy.json", m.id),
            );
        }
    }

    let mut commands = IndexMap::new();
    let mut first_bin: Option<String> = None;
    for (key, raw) in &m.verbs {
        let cmd = build_command(&m, key, raw, policy_rows, &mut first_bin, is);
        if let Some(cmd) = cmd {
            commands.insert(key.clone(), cmd);
        }
    }
    if let Some(w) = &wrap {
        check_template_users(w, &m, &commands, is);
    }
    if let Some(rows) = policy_rows {
        let bootstrap: &[String] =
            m.pass_through.as_ref().map(|p| p.allowed_subcommands.as_slice()).unwrap_or(&[]);
        for key in rows.keys() {
            if !m.verbs.contains_key(key) && !bootstrap.contains(key) {
                is.push(
                    LintKind::PolicyExtra,
                    POLICY,
                    pointer(&["verbs", key]),
                    format!("policy.json has a row for `{key}`, which is not a command of the manifest"),
                    format!("remove the `{key}` row, or declare `{key}` under `verbs` in surface.json"),
                );
            }
        }
    }

    let triggers = check_triggers(&m, policy.as_ref(), is);
    if let Some(s) = &skill {
        for name in &s.hot_path {
            if !m.verbs.contains_key(name) {
                is.push(
                    LintKind::SkillUnknownCommand,
                    HARNESS,
                    s.hot_path_heading.clone(),
                    format!("the hot-path table names `{name}`, which is not a command of the manifest"),
                    format!(
                        "rename `{name}` to a command of surface.json ({}) or remove its row",
                        m.verbs.keys().map(String::as_str).collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
    if let Some(e) = &evals {
        if let Some(f) = &e.fixture {
            check_pack_path(root, (EVALS, "/fixture"), f, Want::DirOrExec, is);
        }
        for (i, case) in e.cases.iter().enumerate() {
            if !m.verbs.contains_key(&case.verb) {
                is.push(
                    LintKind::EvalUnknownCommand,
                    EVALS,
                    pointer(&["cases", &i.to_string(), "verb"]),
                    format!(
                        "eval case {:?} names `{}`, which is not a command of the manifest",
                        case.name, case.verb
                    ),
                    "point the case at a declared command or remove it",
                );
            }
        }
    }
    binding.inject = inject::parse_inject(&m, &hosts, &commands, wrap.as_ref(), is);
    let meta = check_meta(&m, kind, plane, &binding, is);

    let skill = skill?;
    policy?;
    Some(Pack {
        dir: dir.to_path_buf(),
        id: m.id.clone(),
        name: m.name.clone(),
        kind,
        plane,
        transports: m.transports.clone().unwrap_or_else(|| vec![Transport::Cli, Transport::JsonExec]),
        cli_bin: m.cli_bin.clone(),
        binding,
        wrap,
        pass_through,
        component,
        workspace: m.wrap.as_ref().and_then(|w| w.workspace.as_ref()).map(|ws| ws.mode).unwrap_or_default(),
        hosts,
        commands,
        triggers,
        skill,
        meta,
        evals,
        built_in: false,
    })
}

fn binding_of(m: &RawManifest, plane: Plane) -> Binding {
    match &m.binding {
        Some(b) => Binding {
            mode: b.mode,
            hub: b.hub,
            family: b.family.clone().unwrap_or_else(|| m.id.clone()),
            connect_provider_id: b.connect_provider_id.clone(),
            inject: Vec::new(),
        },
        None => Binding {
            mode: if plane == Plane::Control { BindingMode::Mothership } else { BindingMode::Public },
            hub: None,
            family: m.id.clone(),
            connect_provider_id: None,
            inject: Vec::new(),
        },
    }
}

fn parse_template(src: &str, ptr: &str, is: &mut Issues) -> Option<Template> {
    match Template::parse(src) {
        Ok(t) => Some(t),
        Err(e) => {
            is.push(
                LintKind::BadPlaceholder,
                SURFACE,
                ptr,
                format!("{src:?}: {e}"),
                "write placeholders as {{name}} with a declared argument name",
            );
            None
        }
    }
}
fn policy_row(row: &RawPolicyRow) -> PolicyRow {
    PolicyRow {
        operation: row.operation,
        confirm: row.confirm,
        land: row.privacy.as_ref().map(|p| p.land).unwrap_or_default(),
    }
}
fn check_triggers(m: &RawManifest, policy: Option<&RawPolicy>, is: &mut Issues) -> Vec<String> {
    let mut refs = Vec::new();
    for (i, t) in m.stimulus_triggers.iter().enumerate() {
        if !is_command_name(&t.reference) {
            is.push(
                LintKind::BadName,
                SURFACE,
                format!("/stimulusTriggers/{i}/ref"),
                format!("trigger ref {:?} breaks the naming rules", t.reference),
                "use lower-case words joined by dots, e.g. \"binding.degraded\"",
            );
        }
        if let Some(p) = policy {
            if !p.stimuli.contains_key(&t.reference) {
                is.push(
                    LintKind::StimulusMissing,
                    POLICY,
                    pointer(&["stimuli", &t.reference]),
                    format!("trigger `{}` has no policy.json stimuli row", t.reference),
                    format!(
                        "add \"{}\": {{\"delivery\": \"announce\"}} under `stimuli` in policy.json",
                        t.reference
                    ),
                );
            }
        }
        refs.push(t.reference.clone());
    }
    if let Some(p) = policy {
        for key in p.stimuli.keys() {
            if !refs.contains(key) {
                is.push(
                    LintKind::StimulusExtra,
                    POLICY,
                    pointer(&["stimuli", key]),
                    format!("policy.json has a stimuli row for `{key}`, which is not a declared trigger"),
                    format!("remove the `{key}` row, or declare {{\"ref\": \"{key}\"}} in stimulusTriggers"),
                );
            }
        }
    }
    refs
}
