//! The checks that depend on the adapter kind: a wrap's target and its pass-through, a composite's component,
//! an OpenAPI document, a sense-only pack's triggers.

use cap_std::fs::Dir;
use indexmap::IndexMap;

use super::paths::{check_pack_path, Want};
use super::{parse_template, policy_row, POLICY, SURFACE};
use crate::model::diagnostic::{pointer, Issues, LintKind};
use crate::pack::raw::*;
use crate::pack::{Bin, PassThrough, WrapTarget};

/// The adapter-specific checks; returns the wrap target for `kind: wrap`.
pub(super) fn check_kind(
    root: &Dir,
    m: &RawManifest,
    kind: AdapterKind,
    is: &mut Issues,
) -> Option<WrapTarget> {
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
                } else if let Some(family) = crate::pack::env_deny::denied_env(k) {
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

pub(super) fn check_pass_through(
    m: &RawManifest,
    policy: Option<&RawPolicy>,
    is: &mut Issues,
) -> Option<PassThrough> {
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
