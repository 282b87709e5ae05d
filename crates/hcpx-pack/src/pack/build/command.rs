//! One command of the manifest checked against its args, its `cli[]`, its title and preview and its policy
//! row, and built; and the wrap's `argv_template` checked against the commands it serves.

use indexmap::IndexMap;

use super::{parse_template, policy_row, POLICY, SURFACE};
use crate::args::ArgSpec;
use crate::model::diagnostic::{pointer, Issues, LintKind};
use crate::model::naming::is_command_name;
use crate::pack::raw::*;
use crate::pack::{cli_selects_json, Command, WrapTarget};
use crate::template::Template;
use crate::title::{PreviewSpec, TitleSpec};

pub(super) fn build_command(
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
    let hosts = raw.hosts.as_ref().map(|h| super::hosts::parse_hosts(h, &format!("{base}/hosts"), is));
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
        hosts,
        long: raw.long.unwrap_or(false),
    })
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
pub(super) fn check_template_users(
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
