//! The host-tool projection of the activated packs (docs/spec.md §3, host tools): one tool per named command,
//! `pack__verb_key` with dots as underscores, its input schema from `args`, and every annotation set.

use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

use crate::model::digest::sha256_hex;
use crate::model::Principal;
use crate::pack::{Operation, Pack};
use crate::runtime::visible::may_call;
use crate::runtime::Runtime;

/// Longest tool name MCP hosts accept.
pub const MAX_TOOL_NAME: usize = 64;

/// What a host is told about a tool's effects. Every hint is always set, never left to a default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// One tool: how a host names and shows it, what it takes, and which command it calls.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub title: String,
    pub description: String,
    pub input_schema: Map<String, Value>,
    pub hints: Hints,
    pub pack_id: String,
    pub verb_key: String,
    /// The Policy row gates the command on `confirm`.
    pub confirm: bool,
}

/// `pack__verb_key` with dots as underscores; a name past 64 characters keeps its start and ends in a
/// digest of the whole, so it stays unique and within `[a-zA-Z0-9_-]{1,64}`.
pub fn tool_name(pack_id: &str, verb_key: &str) -> String {
    let full = format!("{pack_id}__{}", verb_key.replace('.', "_"));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    tagged(&full, pack_id, verb_key)
}

/// `name`, cut so that `_` and 8 hex digits of a digest of the pack and command fit in 64 characters.
fn tagged(name: &str, pack_id: &str, verb_key: &str) -> String {
    let tag = &sha256_hex(format!("{pack_id}\0{verb_key}").as_bytes())[..8];
    let keep = name.len().min(MAX_TOOL_NAME - tag.len() - 1);
    format!("{}_{tag}", &name[..keep])
}

/// The tools of one pack's named commands.
pub fn pack_tools(pack: &Pack) -> Vec<ToolSpec> {
    let open_world = pack.wrap.as_ref().is_some_and(|w| !w.network.is_empty());
    pack.commands
        .values()
        .map(|c| {
            let write = c.policy.operation == Operation::Write;
            let mut schema = c.args.schema().as_object().cloned().unwrap_or_default();
            schema.entry("type").or_insert_with(|| json!("object"));
            if c.policy.confirm {
                // The gate's argument, so a host can pass it once the person agrees.
                let props = schema.entry("properties").or_insert_with(|| json!({}));
                if let Some(p) = props.as_object_mut() {
                    p.insert(
                        "confirm".into(),
                        json!({ "type": "boolean", "description": "true once the person has approved this call; without it the call is refused with the approval card" }),
                    );
                    p.insert(
                        crate::args::APPROVAL_ARG.into(),
                        json!({ "type": "string", "description": "the id of a person's approval of this exact call, when the call answered approval_pending and an approver has approved it" }),
                    );
                }
            }
            // The last live title is the plain one every pack should end its list with.
            let title = c
                .title
                .live
                .last()
                .filter(|t| t.is_literal())
                .map(|t| t.source().to_string())
                .unwrap_or_else(|| format!("{} {}", pack.name.as_deref().unwrap_or(&pack.id), c.key));
            ToolSpec {
                name: tool_name(&pack.id, &c.key),
                title,
                description: c.description.clone().unwrap_or_else(|| format!("{} {}", pack.id, c.key)),
                input_schema: schema,
                hints: Hints {
                    read_only: !write,
                    destructive: write,
                    idempotent: !write,
                    open_world,
                },
                pack_id: pack.id.clone(),
                verb_key: c.key.clone(),
                confirm: c.policy.confirm,
            }
        })
        .collect()
}

/// Every tool `viewer` may call of the packs activated for its tenant (`None`: every tool of every activated
/// pack), by name. Two commands whose names would collide (`a.b` and `a_b`) both get the digest suffix, so
/// neither shadows the other.
pub fn activated_tools(runtime: &Runtime, viewer: Option<&Principal>) -> BTreeMap<String, ToolSpec> {
    // Through the runtime's cache: a pack's files are checked once per install, not at each listing.
    activated_tools_of(&runtime.activated_packs(viewer.map(|v| v.tenant.as_str())), viewer)
}

/// [`activated_tools`] of these packs (the ones activated for `viewer`'s tenant, or for any).
pub fn activated_tools_of(
    packs: &[std::sync::Arc<Pack>],
    viewer: Option<&Principal>,
) -> BTreeMap<String, ToolSpec> {
    let mut out: BTreeMap<String, ToolSpec> = BTreeMap::new();
    let callable = |p: &Pack, t: &ToolSpec| viewer.is_none_or(|v| may_call(&v.grants, p, &t.verb_key));
    let all: Vec<ToolSpec> =
        packs.iter().flat_map(|p| pack_tools(p).into_iter().filter(|t| callable(p, t))).collect();
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for t in &all {
        *count.entry(t.name.clone()).or_default() += 1;
    }
    for mut t in all {
        if count.get(&t.name).is_some_and(|n| *n > 1) {
            t.name = tagged(&t.name, &t.pack_id, &t.verb_key);
        }
        out.insert(t.name.clone(), t);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_command_md_and_stay_within_64() {
        assert_eq!(tool_name("mail", "mail.list"), "mail__mail_list");
        let long = tool_name(&"p".repeat(60), "verb.with.many.parts");
        assert_eq!(long.len(), MAX_TOOL_NAME);
        assert!(long.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{long}");
        assert_ne!(long, tool_name(&"p".repeat(60), "verb.with.many.other"));
    }

    #[test]
    fn a_gated_write_says_so_and_takes_confirm() {
        let pack =
            Pack::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/ledger")).unwrap();
        let tools = pack_tools(&pack);
        let transfer = tools.iter().find(|t| t.verb_key == "transfer").unwrap();
        assert_eq!(transfer.name, "ledger__transfer");
        assert_eq!(
            transfer.hints,
            Hints { read_only: false, destructive: true, idempotent: false, open_world: false }
        );
        assert_eq!(transfer.input_schema["properties"]["confirm"]["type"], "boolean");
        assert_eq!(transfer.title, "Paying a payee");
        let status = tools.iter().find(|t| t.verb_key == "setup.status").unwrap();
        assert_eq!(status.name, "ledger__setup_status");
        assert!(status.hints.read_only && status.hints.idempotent && !status.hints.destructive);
        assert!(status.input_schema["properties"].get("confirm").is_none());
    }
}
