//! Skill rules: does `HARNESS.md` teach an agent the pack in its lead, list every command, and hold no secret?

use std::collections::HashSet;

use super::{Ctx, Hits};
use crate::eval::approx_tokens;

const HARNESS: &str = "HARNESS.md";

/// A lead shorter than this does not say what the pack is for.
pub const MIN_LEAD: usize = 80;
/// Hosts load the lead into every context; past this it crowds the agent's window.
pub const MAX_LEAD: usize = 2_000;
/// The whole Skill is loaded on demand; past this many tokens it costs more than it teaches.
pub const MAX_SKILL_TOKENS: u64 = 8_000;

fn heading(c: &Ctx) -> String {
    let h = &c.pack.skill.hot_path_heading;
    if h.is_empty() {
        "(lead)".into()
    } else {
        h.clone()
    }
}

/// H001
pub fn short_lead(c: &Ctx, h: &mut Hits) {
    let n = c.pack.skill.lead.chars().count();
    if n < MIN_LEAD {
        h.push(HARNESS, "(lead)", format!("the lead is {n} characters; hosts load only the lead, so it must say what the pack does and when to use it"), format!("write a lead of {MIN_LEAD}+ characters before the first `##`: what the pack does, its main command, what needs confirm"));
    }
}

/// H002
pub fn long_lead(c: &Ctx, h: &mut Hits) {
    let n = c.pack.skill.lead.chars().count();
    if n > MAX_LEAD {
        h.push(HARNESS, "(lead)", format!("the lead is {n} characters and is loaded into every context"), format!("cut the lead under {MAX_LEAD} characters; move detail under a `##` heading, loaded on demand"));
    }
}

/// H003
pub fn command_not_in_hot_path(c: &Ctx, h: &mut Hits) {
    let skill = &c.pack.skill;
    if skill.hot_path.is_empty() {
        return;
    }
    for key in c.pack.commands.keys() {
        if !skill.hot_path.iter().any(|k| k == key) {
            h.push(
                HARNESS,
                heading(c),
                format!("command `{key}` is missing from the hot-path table"),
                format!("add a row | `{key}` | when to use it | to the hot-path table"),
            );
        }
    }
}

/// H004
pub fn no_hot_path(c: &Ctx, h: &mut Hits) {
    if c.pack.skill.hot_path.is_empty() && !c.pack.commands.is_empty() {
        h.push(HARNESS, "(none)", "HARNESS.md has no hot-path table, so an agent does not know which command to start with", "add `## Hot path` with a table whose first column lists every command as inline code (`list`) and a second saying when to use it");
    }
}

/// H005
pub fn gate_not_explained(c: &Ctx, h: &mut Hits) {
    let gated: Vec<&str> =
        c.pack.commands.iter().filter(|(_, cmd)| cmd.policy.confirm).map(|(k, _)| k.as_str()).collect();
    if !gated.is_empty() && !c.pack.skill.text.to_lowercase().contains("confirm") {
        h.push(
            HARNESS,
            "(lead)",
            format!(
                "{} asks for confirmation, and the Skill never says so; agents retry a refused write blindly",
                gated.join(", ")
            ),
            "say in the Skill which commands need `confirm=true` and that a person approves them first",
        );
    }
}

/// A secret-looking token: a known prefix followed by enough token characters.
fn secret_in(text: &str) -> Option<String> {
    if text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----") {
        return Some("a PEM private key".into());
    }
    const PREFIXES: &[&str] = &[
        "ghp_",
        "gho_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "xoxb-",
        "xoxp-",
        "sk-",
        "sk_live_",
        "AKIA",
        "AIza",
    ];
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')) {
        for p in PREFIXES {
            if let Some(rest) = word.strip_prefix(p) {
                if rest.len() >= 16 && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return Some(format!("a `{p}…` token"));
                }
            }
        }
    }
    None
}

/// H006
pub fn secret_in_skill(c: &Ctx, h: &mut Hits) {
    if let Some(what) = secret_in(&c.pack.skill.text) {
        h.push(
            HARNESS,
            "",
            format!("HARNESS.md holds what looks like {what}; the Skill is shown to every agent and host"),
            "remove the secret from HARNESS.md and revoke it; credentials reach commands through the Binding",
        );
    }
}

/// H007
pub fn todo_in_skill(c: &Ctx, h: &mut Hits) {
    let text = &c.pack.skill.text;
    if let Some(line) = text.lines().find(|l| l.contains("TODO") || l.contains("FIXME") || l.contains("TBD"))
    {
        h.push(
            HARNESS,
            "",
            format!("HARNESS.md still has a placeholder: {:?}", line.trim()),
            "replace each TODO in HARNESS.md with what an agent needs to know",
        );
    }
}

/// H008
pub fn long_skill(c: &Ctx, h: &mut Hits) {
    let t = approx_tokens(&c.pack.skill.text);
    if t > MAX_SKILL_TOKENS {
        h.push(HARNESS, "", format!("HARNESS.md is ~{t} tokens; loading it costs more than it teaches"), format!("cut HARNESS.md under ~{MAX_SKILL_TOKENS} tokens: the lead, the hot path, the arguments people get wrong"));
    }
}

/// H009
pub fn duplicate_hot_path_row(c: &Ctx, h: &mut Hits) {
    let mut seen = HashSet::new();
    for k in &c.pack.skill.hot_path {
        if !seen.insert(k) {
            h.push(
                HARNESS,
                heading(c),
                format!("`{k}` has more than one row in the hot-path table"),
                format!("merge the rows of `{k}` into one"),
            );
        }
    }
}
