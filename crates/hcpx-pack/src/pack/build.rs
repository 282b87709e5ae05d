//! The one analysis behind `hcpx lint` and `Pack::load`: every check runs, and a `Pack` is built only when none failed.

use cap_std::fs::Dir;
use indexmap::IndexMap;
use std::path::Path;

use super::files::{open_dir, parse_json, read_text};
use super::raw::*;
use super::{
    cli_selects_json, Bin, Binding, BindingMode, Command, Pack, PassThrough, PolicyRow, Skill, WrapTarget,
};
use crate::args::ArgSpec;
use crate::model::diagnostic::{pointer, Issues, LintIssue, LintKind};
use crate::model::naming::{is_command_name, is_pack_id};
use crate::template::Template;
use crate::title::{PreviewSpec, TitleSpec};

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
    let binding = binding_of(&m, plane);
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
        commands,
        triggers,
        skill,
        meta,
        evals,
    })
}

fn binding_of(m: &RawManifest, plane: Plane) -> Binding {
    match &m.binding {
        Some(b) => Binding {
            mode: b.mode,
            hub: b.hub,
            family: b.family.clone().unwrap_or_else(|| m.id.clone()),
            connect_provider_id: b.connect_provider_id.clone(),
        },
        None => Binding {
            mode: if plane == Plane::Control { BindingMode::Mothership } else { BindingMode::Public },
            hub: None,
            family: m.id.clone(),
            connect_provider_id: None,
        },
    }
}

/// The adapter-specific checks; returns the wrap target for `kind: wrap`.
fn check_kind(root: &Dir, m: &RawManifest, kind: AdapterKind, is: &mut Issues) -> Option<WrapTarget> {
    match kind {
        AdapterKind::Wrap => {
            let Some(w) = &m.wrap else {
                is.push(LintKind::WrapMissing, SURFACE, "/wrap", "a `kind: wrap` pack has no `wrap` object", "add \"wrap\": {\"bin\": \"./bin/<cli>\"} (a path inside the pack) or the bare name of a CLI on PATH");
                return None;
            };
            if m.verbs.is_empty() && m.pass_through.is_none() {
                is.push(
                    LintKind::WrapNoCommands,
                    SURFACE,
                    "/verbs",
                    "a `kind: wrap` pack has neither named commands nor `pass_through`",
                    "declare 5 to 12 commands under `verbs`, each with its `cli[]`",
                );
            }
            let Some(bin) = &w.bin else {
                is.push(LintKind::WrapMissing, SURFACE, "/wrap/bin", "a `kind: wrap` pack has no `wrap.bin`", "set wrap.bin to a path inside the pack (\"./bin/<cli>\") or the bare name of a CLI on PATH");
                return None;
            };
            let bin = if bin.contains('/') {
                check_pack_path(root, (SURFACE, "/wrap/bin"), bin, Want::Exec, is);
                Bin::Path(bin.trim_start_matches("./").to_string())
            } else {
                if bin.is_empty() || bin.starts_with('-') || bin.contains(char::is_whitespace) {
                    is.push(
                        LintKind::BadName,
                        SURFACE,
                        "/wrap/bin",
                        format!("wrap.bin {bin:?} is not a command name"),
                        "name the CLI as it is on PATH, e.g. \"git\"",
                    );
                }
                Bin::Name(bin.clone())
            };
            let mut argv_template = Vec::new();
            for (i, t) in
                w.argv_template.clone().unwrap_or_else(|| vec!["{{verb}}".to_string()]).iter().enumerate()
            {
                if let Some(t) = parse_template(t, &format!("/wrap/argv_template/{i}"), is) {
                    argv_template.push(t);
                }
            }
            let mut agent_env = IndexMap::new();
            for (k, v) in &w.agent_env {
                let ptr = pointer(&["wrap", "agent_env", k]);
                let valid_key = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !valid_key {
                    is.push(
                        LintKind::BadName,
                        SURFACE,
                        ptr.clone(),
                        format!("agent_env name {k:?} is not an environment variable name"),
                        "use letters, digits and `_`, not starting with a digit",
                    );
                } else if let Some(family) = super::env_deny::denied_env(k) {
                    is.push(
                        LintKind::AgentEnvDenied,
                        SURFACE,
                        ptr.clone(),
                        format!("agent_env {k} is one of {family} settings, which change what code the CLI loads or runs; a pack may not set it"),
                        format!("remove {k} from wrap.agent_env; pass what the CLI needs as a flag in cli[] (docs/security.md lists the refused names)"),
                    );
                }
                if let Some(t) = parse_template(v, &ptr, is) {
                    if let Some(bad) = t.vars().find(|v| !v.starts_with("binding.")) {
                        is.push(LintKind::BadPlaceholder, SURFACE, ptr, format!("agent_env {k} uses `{{{{{bad}}}}}`; only `{{{{binding.FIELD}}}}` placeholders are filled there"), "put the literal value, or a `{{binding.FIELD}}` the Binding provides");
                    }
                    agent_env.insert(k.clone(), t);
                }
            }
            Some(WrapTarget {
                bin,
                json_flag: w.json_flag.clone().unwrap_or_else(|| vec!["--json".to_string()]),
                argv_template,
                agent_env,
                workspace: w.workspace.as_ref().map(|ws| ws.mode).unwrap_or_default(),
                network: {
                    let mut n = w.network.clone();
                    n.sort();
                    n.dedup();
                    n
                },
                unix_sockets: {
                    let mut s = w.unix_sockets.clone();
                    s.sort();
                    s.dedup();
                    s
                },
                read: w
                    .read
                    .iter()
                    .enumerate()
                    .filter_map(|(i, p)| {
                        let path = std::path::PathBuf::from(p);
                        let ok = path.is_absolute()
                            && path != std::path::Path::new("/")
                            && !path.components().any(|c| matches!(c, std::path::Component::ParentDir));
                        if !ok {
                            is.push(
                                LintKind::InvalidField,
                                SURFACE,
                                format!("/wrap/read/{i}"),
                                format!("wrap.read path {p:?} is not an absolute path below / without `..`"),
                                "name the directory the CLI reads in full, e.g. \"/sys\"",
                            );
                        }
                        ok.then_some(path)
                    })
                    .collect(),
            })
        }
        AdapterKind::Composite => {
            match &m.component {
                Some(c) => check_pack_path(root, (SURFACE, "/component/path"), &c.path, Want::File, is),
                None => {
                    let hint = if m.wrap.is_some() {
                        "; `kind` defaults to composite, so a wrap pack must say \"kind\": \"wrap\""
                    } else {
                        ""
                    };
                    is.push(LintKind::ComponentMissing, SURFACE, "/component", format!("a composite pack has no `component.path`{hint}"), "add \"component\": {\"path\": \"./adapter.wasm\"}, or set \"kind\": \"wrap\" for a CLI pack");
                }
            }
            None
        }
        AdapterKind::Openapi => {
            match &m.openapi {
                Some(RawOpenapi { url: Some(_), path: None }) => {}
                Some(RawOpenapi { url: None, path: Some(p) }) => {
                    check_pack_path(root, (SURFACE, "/openapi/path"), p, Want::File, is)
                }
                Some(_) => is.push(
                    LintKind::OpenapiMissing,
                    SURFACE,
                    "/openapi",
                    "`openapi` must have exactly one of `url` and `path`",
                    "keep either \"url\" or \"path\"",
                ),
                None => is.push(
                    LintKind::OpenapiMissing,
                    SURFACE,
                    "/openapi",
                    "a `kind: openapi` pack has no `openapi` object",
                    "add \"openapi\": {\"path\": \"./openapi.json\"} or {\"url\": \"https://…\"}",
                ),
            }
            None
        }
        AdapterKind::SenseOnly => {
            if m.stimulus_triggers.is_empty() {
                is.push(LintKind::SenseNoTrigger, SURFACE, "/stimulusTriggers", "a `kind: sense_only` pack declares no `stimulusTriggers`", "declare at least one trigger, e.g. \"stimulusTriggers\": [{\"ref\": \"new_item\"}], with its stimuli row in policy.json");
            }
            None
        }
    }
}

/// What a pack path must name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    File,
    Exec,
    /// An eval fixture: a directory, or an executable setup script.
    DirOrExec,
}

/// Checks that `path` (at `ptr` of `file`) stays inside the pack and names what `want` says.
fn check_pack_path(root: &Dir, (file, ptr): (&str, &str), path: &str, want: Want, is: &mut Issues) {
    let escapes = path.starts_with('/') || path.split('/').any(|c| c == "..");
    if escapes || path.is_empty() {
        is.push(
            LintKind::PathEscapes,
            file,
            ptr,
            format!("{path:?} leaves the pack: pack paths are relative and never use `..`"),
            "move the file into the pack and name it relative to the pack directory, e.g. \"./bin/tool\"",
        );
        return;
    }
    let rel = path.trim_start_matches("./");
    match root.metadata(rel) {
        Ok(meta) if meta.is_dir() && want == Want::DirOrExec => {}
        Ok(meta) if meta.is_file() => {
            if want != Want::File {
                use cap_std::fs::PermissionsExt;
                if meta.permissions().mode() & 0o111 == 0 {
                    is.push(
                        LintKind::BinNotExecutable,
                        file,
                        ptr,
                        format!("{path:?} is not executable"),
                        format!("run `chmod +x {rel}` in the pack and give it a `#!` line"),
                    );
                }
            }
        }
        Ok(_) => is.push(
            LintKind::PathMissing,
            file,
            ptr,
            format!("{path:?} is not a file"),
            "point at a file inside the pack",
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let through_link = root.symlink_metadata(rel).is_ok();
            if through_link {
                is.push(
                    LintKind::PathEscapes,
                    file,
                    ptr,
                    format!("{path:?} is a link that leads nowhere inside the pack"),
                    "replace the link with the file itself",
                );
            } else {
                is.push(
                    LintKind::PathMissing,
                    file,
                    ptr,
                    format!("{path:?} does not exist in the pack"),
                    "add the file to the pack or correct the path",
                );
            }
        }
        Err(_) => is.push(
            LintKind::PathEscapes,
            file,
            ptr,
            format!("{path:?} resolves outside the pack (through a link)"),
            "replace the link with the file itself: install copies only the pack",
        ),
    }
}

fn check_pass_through(m: &RawManifest, policy: Option<&RawPolicy>, is: &mut Issues) -> Option<PassThrough> {
    let p = m.pass_through.as_ref()?;
    if p.allowed_subcommands.is_empty() {
        is.push(
            LintKind::BadPassThrough,
            SURFACE,
            "/pass_through/allowedSubcommands",
            "`pass_through.allowedSubcommands` is empty",
            "list the subcommands the bootstrap may run, then promote them to named commands",
        );
    }
    for (i, s) in p.allowed_subcommands.iter().enumerate() {
        let plain = !s.is_empty()
            && !s.starts_with('-')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !plain {
            is.push(
                LintKind::BadPassThrough,
                SURFACE,
                format!("/pass_through/allowedSubcommands/{i}"),
                format!("allowed subcommand {s:?} is not a single plain word"),
                "list bare subcommand names such as \"status\"",
            );
        }
    }
    for (i, o) in p.allowed_options.iter().enumerate() {
        let ok = o.starts_with('-') && o.len() > 1 && !o.contains(char::is_whitespace);
        if !ok {
            is.push(LintKind::BadPassThrough, SURFACE, format!("/pass_through/allowedOptions/{i}"), format!("allowed option {o:?} is not an option word"), "list options as the CLI spells them, such as \"--oneline\" or \"--format=\" (a trailing = allows any value)");
        }
    }
    let mut rows = IndexMap::new();
    for s in &p.allowed_subcommands {
        if m.verbs.contains_key(s) {
            continue;
        }
        match policy.and_then(|pol| pol.verbs.get(s)) {
            Some(row) => {
                rows.insert(s.clone(), policy_row(row));
            }
            None if policy.is_some() => is.push(
                LintKind::PolicyMissing,
                POLICY,
                pointer(&["verbs", s]),
                format!("pass-through subcommand `{s}` has no policy.json row"),
                format!(
                    "add \"{s}\": {{\"operation\": \"read\"}} (or \"write\") under `verbs` in policy.json"
                ),
            ),
            None => {}
        }
    }
    Some(PassThrough {
        allowed_subcommands: p.allowed_subcommands.clone(),
        max_argv: p.max_argv,
        allowed_options: p.allowed_options.clone(),
        policy: rows,
    })
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

fn build_command(
    m: &RawManifest,
    key: &str,
    raw: &RawCommand,
    policy_rows: Option<&IndexMap<String, RawPolicyRow>>,
    first_bin: &mut Option<String>,
    is: &mut Issues,
) -> Option<Command> {
    let base = pointer(&["verbs", key]);
    if !is_command_name(key) {
        is.push(
            LintKind::BadName,
            SURFACE,
            base.clone(),
            format!("command name {key:?} breaks the naming rules"),
            "use lower-case words joined by dots, e.g. \"mail.list\"",
        );
    }
    let args = match ArgSpec::compile(raw.args.as_ref()) {
        Ok(a) => Some(a),
        Err(problems) => {
            for p in problems {
                is.push(
                    p.kind,
                    SURFACE,
                    format!("{base}/args{}", p.pointer),
                    format!("`{key}` args: {}", p.message),
                    p.fix,
                );
            }
            None
        }
    };
    let mut cli = None;
    let mut cli_bin = None;
    let mut selects_json = false;
    if let Some(tokens) = &raw.cli {
        let ptr = format!("{base}/cli");
        match tokens.split_first() {
            None => is.push(LintKind::CliBinMismatch, SURFACE, ptr, format!("`{key}` has an empty cli[]"), "start cli[] with the bin, e.g. [\"ledger\", \"list\"], or remove it to use wrap.argv_template"),
            Some((bin, rest)) => {
                let expected = m.cli_bin.clone().or_else(|| first_bin.clone());
                match expected {
                    Some(e) if &e != bin => is.push(LintKind::CliBinMismatch, SURFACE, format!("{ptr}/0"), format!("`{key}` cli[] starts with {bin:?}, not the pack's bin {e:?}"), format!("make {e:?} the first token of every cli[]")),
                    _ => {}
                }
                if bin.contains("{{") {
                    is.push(LintKind::CliBinMismatch, SURFACE, format!("{ptr}/0"), format!("`{key}` cli[] starts with a placeholder; the first token must be the bin"), "start cli[] with the literal bin name");
                }
                first_bin.get_or_insert_with(|| bin.clone());
                cli_bin = Some(bin.clone());
                let mut parsed = Vec::new();
                for (i, t) in rest.iter().enumerate() {
                    let tptr = format!("{ptr}/{}", i + 1);
                    if let Some(t) = parse_template(t, &tptr, is) {
                        check_vars(&t, key, args.as_ref(), &tptr, is);
                        parsed.push(t);
                    }
                }
                selects_json = cli_selects_json(rest);
                cli = Some(parsed);
            }
        }
    }
    let mut title = TitleSpec::default();
    if let Some(t) = &raw.title {
        for (form, out, name) in [(&t.live, &mut title.live, "live"), (&t.done, &mut title.done, "done")] {
            if let Some(f) = form {
                for (i, src) in f.as_slice().iter().enumerate() {
                    if let Some(t) = parse_template(src, &format!("{base}/title/{name}/{i}"), is) {
                        out.push(t);
                    }
                }
            }
        }
    }
    let preview = raw.preview.as_ref().map(|p| {
        let title = p.title.as_ref().and_then(|t| {
            let ptr = format!("{base}/preview/title");
            let t = parse_template(t, &ptr, is)?;
            check_vars(&t, key, args.as_ref(), &ptr, is);
            Some(t)
        });
        let mut fields = IndexMap::new();
        for (k, v) in &p.fields {
            let ptr = format!("{base}/preview/fields/{}", crate::model::diagnostic::pointer_segment(k));
            if let Some(t) = parse_template(v, &ptr, is) {
                check_vars(&t, key, args.as_ref(), &ptr, is);
                fields.insert(k.clone(), t);
            }
        }
        PreviewSpec { kind: p.kind, title, fields }
    });
    let row = policy_rows.and_then(|rows| rows.get(key));
    if policy_rows.is_some() && row.is_none() {
        is.push(LintKind::PolicyMissing, POLICY, pointer(&["verbs", key]), format!("command `{key}` has no policy.json row"), format!("add \"{key}\": {{\"operation\": \"read\"}} (or \"write\", with \"confirm\": true for a gated write) under `verbs` in policy.json"));
    }
    let row = row?;
    Some(Command {
        key: key.to_string(),
        description: raw.description.clone(),
        cli,
        cli_bin,
        args: args?,
        json_flag: raw.json_flag.clone(),
        cli_selects_json: selects_json,
        title,
        preview,
        policy_hint: raw.policy,
        policy: policy_row(row),
    })
}

fn policy_row(row: &RawPolicyRow) -> PolicyRow {
    PolicyRow {
        operation: row.operation,
        confirm: row.confirm,
        land: row.privacy.as_ref().map(|p| p.land).unwrap_or_default(),
    }
}

/// Every placeholder of a `cli[]` token or preview must name a declared argument.
fn check_vars(t: &Template, key: &str, args: Option<&ArgSpec>, ptr: &str, is: &mut Issues) {
    let Some(args) = args else { return };
    for v in t.vars() {
        if !args.declares(v) {
            is.push(
                LintKind::UnknownPlaceholder,
                SURFACE,
                ptr,
                format!("`{key}` uses `{{{{{v}}}}}`, which is not an argument of `{key}`"),
                format!("declare `{v}` under `verbs.{key}.args.properties`, or correct the placeholder"),
            );
        }
    }
}

/// `wrap.argv_template` serves every command without `cli[]`: its placeholders must be `verb` or their arguments.
fn check_template_users(
    w: &WrapTarget,
    m: &RawManifest,
    commands: &IndexMap<String, Command>,
    is: &mut Issues,
) {
    for (key, cmd) in commands {
        if m.verbs.get(key).is_some_and(|c| c.cli.is_some()) {
            continue;
        }
        for (i, t) in w.argv_template.iter().enumerate() {
            for v in t.vars() {
                if v != "verb" && !cmd.args.declares(v) {
                    is.push(LintKind::UnknownPlaceholder, SURFACE, format!("/wrap/argv_template/{i}"), format!("wrap.argv_template uses `{{{{{v}}}}}`, which `{key}` (it has no cli[]) does not declare"), format!("give `{key}` its own cli[], or declare `{v}` in its args"));
                }
            }
        }
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

/// Validates a declared `hcp` object against the manifest, or derives one.
fn check_meta(
    m: &RawManifest,
    kind: AdapterKind,
    plane: Plane,
    binding: &Binding,
    is: &mut Issues,
) -> RawMeta {
    let derived = RawMeta {
        hcp: 1,
        pack_id: m.id.clone(),
        adapter_kind: Some(kind),
        binding: Some(RawBinding {
            mode: binding.mode,
            hub: binding.hub,
            family: None,
            connect_provider_id: None,
        }),
        wrap: m.wrap.as_ref().and_then(|w| w.bin.clone()).map(|bin| RawMetaWrap { bin }),
        component: m.component.clone(),
        plane: Some(plane),
        transports: m.transports.clone(),
    };
    let Some(meta) = &m.hcp else { return derived };
    let mut mismatch = |field: &str, declared: String, actual: String| {
        is.push(
            LintKind::HcpMismatch,
            SURFACE,
            format!("/hcp/{field}"),
            format!("hcp.{field} is {declared} but the manifest says {actual}"),
            format!("set hcp.{field} to {actual}, or remove the `hcp` object and let the runtime derive it"),
        );
    };
    if meta.hcp != 1 {
        mismatch("hcp", meta.hcp.to_string(), "1 (HCP/1.x)".into());
    }
    if meta.pack_id != m.id {
        mismatch("pack_id", format!("{:?}", meta.pack_id), format!("{:?}", m.id));
    }
    if let Some(k) = meta.adapter_kind {
        if k != kind {
            mismatch("adapter_kind", format!("{:?}", k.as_str()), format!("{:?}", kind.as_str()));
        }
    }
    if let Some(p) = meta.plane {
        if p != plane {
            mismatch("plane", format!("{:?}", p.as_str()), format!("{:?}", plane.as_str()));
        }
    }
    if let (Some(t), declared) = (&meta.transports, &m.transports) {
        let actual = declared.clone().unwrap_or_else(|| vec![Transport::Cli, Transport::JsonExec]);
        if *t != actual {
            let names = |l: &[Transport]| format!("{:?}", l.iter().map(|t| t.as_str()).collect::<Vec<_>>());
            mismatch("transports", names(t), names(&actual));
        }
    }
    if let Some(b) = &meta.binding {
        if b.mode != binding.mode {
            mismatch("binding", b.mode.as_str().into(), binding.mode.as_str().into());
        } else if b.hub.is_some() && b.hub != binding.hub {
            let hub = |h: Option<Hub>| h.map_or("none given", Hub::as_str);
            mismatch("binding", format!("hub {}", hub(b.hub)), format!("hub {}", hub(binding.hub)));
        } else if b.family.as_ref().is_some_and(|f| *f != binding.family) {
            mismatch("binding", format!("family {:?}", b.family), format!("family {:?}", binding.family));
        }
    }
    if let Some(w) = &meta.wrap {
        let actual = m.wrap.as_ref().and_then(|w| w.bin.clone()).unwrap_or_default();
        if w.bin != actual {
            mismatch("wrap", format!("bin {:?}", w.bin), format!("bin {actual:?}"));
        }
    }
    if let Some(c) = &meta.component {
        let actual = m.component.as_ref().map(|c| c.path.clone()).unwrap_or_default();
        if c.path != actual {
            mismatch("component", format!("path {:?}", c.path), format!("path {actual:?}"));
        }
    }
    meta.clone()
}
