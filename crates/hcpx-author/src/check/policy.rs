//! Policy rules: is every write explicit, gated where it matters, and visible as such on both faces?

use super::{Ctx, Hits};
use crate::model::diagnostic::pointer;
use crate::pack::{BindingMode, Command, Land, Operation};

const POLICY: &str = "policy.json";
const SURFACE: &str = "surface.json";

/// Command names whose last word says they change or destroy something outside the agent.
const DESTRUCTIVE: &[&str] = &[
    "delete",
    "remove",
    "rm",
    "drop",
    "destroy",
    "purge",
    "erase",
    "wipe",
    "truncate",
    "kill",
    "transfer",
    "pay",
    "send",
    "publish",
    "push",
    "merge",
    "revoke",
    "reset",
    "force-push",
    "deploy",
    "shutdown",
    "reboot",
    "format",
    "uninstall",
];

/// Command names whose last word says they only look.
const READISH: &[&str] = &[
    "list", "get", "show", "view", "find", "search", "status", "describe", "info", "read", "inspect",
    "query", "count", "diff", "log", "ls", "cat", "stat", "check",
];

fn last_word(key: &str) -> String {
    key.rsplit('.').next().unwrap_or(key).to_ascii_lowercase()
}

fn first_word_of_last(key: &str) -> String {
    let last = last_word(key);
    last.split(['-', '_']).next().unwrap_or(&last).to_string()
}

/// A command named like a write (P001's test).
pub(super) fn destructive(key: &str) -> bool {
    DESTRUCTIVE.contains(&last_word(key).as_str()) || DESTRUCTIVE.contains(&first_word_of_last(key).as_str())
}

/// Subcommand words that change what they act on, besides [`DESTRUCTIVE`]'s (`git init`, `git restore`,
/// `ip addr add`, `kubectl apply`).
const MUTATING: &[&str] = &[
    "init", "restore", "clean", "checkout", "switch", "rebase", "commit", "stash", "mv", "move", "rename",
    "apply", "write", "set", "unset", "update", "upgrade", "create", "add", "install", "prune", "edit",
    "import", "insert", "put", "post", "patch", "replace", "flush", "vacuum", "restart", "stop", "start",
];

/// The first subcommand word of `cmd`'s cli[] (literal words after the bin, before any flag or placeholder)
/// that says it changes something (P010's test).
pub(super) fn mutating_subcommand(cmd: &Command) -> Option<String> {
    let cli = cmd.cli.as_ref()?;
    cli.iter()
        .take_while(|t| t.is_literal() && !t.source().starts_with('-'))
        .map(|t| t.source().to_ascii_lowercase())
        .find(|w| DESTRUCTIVE.contains(&w.as_str()) || MUTATING.contains(&w.as_str()))
}

/// Whether a probe must not run `key`: a template no one has classified (M018), or a read that a rule flags as
/// possibly changing something (P001, P010). Probes run the real CLI in the real directory.
pub(super) fn unsafe_to_probe(key: &str, cmd: &Command) -> Option<String> {
    if super::manifest::is_scaffold(cmd) {
        return Some(
            "it is still a scaffold template (M018); replace it and classify it in policy.json".into(),
        );
    }
    if destructive(key) {
        return Some(format!("it is named like a write (P001); make it a write in policy.json, or rename `{key}` if it only reads"));
    }
    mutating_subcommand(cmd).map(|w| {
        format!("its cli[] runs the subcommand `{w}`, which can change things (P010); make `{key}` a write, or point it at a read-only subcommand")
    })
}

/// P010
pub fn mutating_read(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.operation != Operation::Read || destructive(key) {
            continue; // P001 already names a read called like a write
        }
        if let Some(w) = mutating_subcommand(cmd) {
            h.push(POLICY, pointer(&["verbs", key, "operation"]), format!("`{key}` is a read, but its cli[] runs the subcommand `{w}`, which can change what it acts on; probes skip it"), format!("set \"{key}\": {{\"operation\": \"write\"}} in policy.json (with \"confirm\": true if it cannot be undone), or point `{key}`.cli at a subcommand that only reads"));
        }
    }
}

/// P001
pub fn destructive_read(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.operation == Operation::Read && destructive(key) {
            h.push(POLICY, pointer(&["verbs", key, "operation"]), format!("`{key}` is named like a write but its Policy row says read, so no write grant or confirm gate stops it"), format!("set \"{key}\": {{\"operation\": \"write\", \"confirm\": true}} in policy.json, or rename it if it only reads"));
        }
    }
}

/// P002
pub fn ungated_destructive(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.operation == Operation::Write && !cmd.policy.confirm && destructive(key) {
            h.push(
                POLICY,
                pointer(&["verbs", key, "confirm"]),
                format!("`{key}` changes something outside the agent and runs without the confirm gate"),
                format!("add \"confirm\": true to `{key}` in policy.json"),
            );
        }
    }
}

/// P003
pub fn write_named_like_read(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        let w = first_word_of_last(key);
        if cmd.policy.operation == Operation::Write && READISH.contains(&w.as_str()) {
            h.push(POLICY, pointer(&["verbs", key, "operation"]), format!("`{key}` is a write named like a read; an agent will call it to look and change something"), format!("rename `{key}` after what it changes (`{key}` → `…set`, `…apply`), or make it a read if it only looks"));
        }
    }
}

/// P004
pub fn gated_without_preview(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.confirm && cmd.preview.is_none() {
            h.push(SURFACE, pointer(&["verbs", key, "preview"]), format!("`{key}` asks for confirmation but declares no preview, so the person confirming sees only raw arguments"), format!("add \"preview\": {{\"kind\": \"record\", \"title\": \"…\", \"fields\": {{…}}}} to `{key}` (docs/packs.md#titles-and-previews)"));
        }
    }
}

const GATE_FLAGS: &[&str] =
    &["--confirm", "--apply", "--yes", "-y", "--force", "-f", "--execute", "--commit"];

/// P005
pub fn gate_not_mirrored(c: &Ctx, h: &mut Hits) {
    // Only a CLI the pack ships can be given a confirmation flag; a CLI on PATH is what it is.
    if !matches!(c.pack.wrap.as_ref().map(|w| &w.bin), Some(crate::pack::Bin::Path(_))) {
        return;
    }
    for (key, cmd) in &c.pack.commands {
        let Some(cli) = &cmd.cli else { continue };
        if !cmd.policy.confirm {
            continue;
        }
        let mirrored = cli.iter().any(|t| {
            let s = t.source();
            GATE_FLAGS.iter().any(|f| s == *f || s.starts_with(&format!("{f}=")))
                || t.vars().any(|v| v == "confirm" || v == "apply")
        });
        if !mirrored {
            h.push(SURFACE, pointer(&["verbs", key, "cli"]), format!("`{key}` is confirm-gated in Policy, but its cli[] carries no `--confirm`/`--apply`/`--yes`, so the CLI face runs it ungated"), format!("add the CLI's own confirmation flag to `{key}`.cli (docs/packs.md#agent-safe-commands)"));
        }
    }
}

/// P006
pub fn hint_mismatch(c: &Ctx, h: &mut Hits) {
    for (key, cmd) in &c.pack.commands {
        if let Some(hint) = cmd.policy_hint {
            if hint != cmd.policy.operation {
                h.push(SURFACE, pointer(&["verbs", key, "policy"]), format!("surface.json says `{key}` is a {} but policy.json says {}", hint.as_str(), cmd.policy.operation.as_str()), format!("make `{key}`'s \"policy\" in surface.json \"{}\" (policy.json decides), or remove the hint", cmd.policy.operation.as_str()));
            }
        }
    }
}

/// P007
pub fn public_with_credentials(c: &Ctx, h: &mut Hits) {
    if matches!(c.pack.binding.mode, BindingMode::Public | BindingMode::Mock) {
        return;
    }
    for (key, cmd) in &c.pack.commands {
        if cmd.policy.land == Land::Public {
            h.push(POLICY, pointer(&["verbs", key, "privacy", "land"]), format!("`{key}` says it involves no private data (land public) but runs with a `{}` Binding that carries a credential", binding_name(c.pack.binding.mode)), format!("set `{key}`'s privacy.land to \"local\" (the default)"));
        }
    }
}

fn binding_name(m: BindingMode) -> &'static str {
    match m {
        BindingMode::Public => "public",
        BindingMode::User => "user",
        BindingMode::Local => "local",
        BindingMode::Mothership => "mothership",
        BindingMode::Mock => "mock",
    }
}

/// P008
pub fn pass_through_bootstrap(c: &Ctx, h: &mut Hits) {
    if let Some(p) = &c.pack.pass_through {
        h.push(SURFACE, "/pass_through", format!("the pack is a pass-through bootstrap over {} subcommand(s); agents get no descriptions, schemas or titles", p.allowed_subcommands.len()), "promote each allowed subcommand to a named command in `verbs` with cli[], args and a Policy row, then drop pass_through");
    }
}

/// P009
pub fn only_writes(c: &Ctx, h: &mut Hits) {
    let cmds = &c.pack.commands;
    if !cmds.is_empty() && cmds.values().all(|cmd| cmd.policy.operation == Operation::Write) {
        h.push(
            POLICY,
            "/verbs",
            "every command is a write, so an agent cannot look before it changes something",
            "add a read that shows the state the writes change (`status`, `list`)",
        );
    }
}
