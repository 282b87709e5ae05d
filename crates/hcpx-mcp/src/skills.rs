//! What a host shows a model about using the packs, without `--single-tool`: each pack's Skill as an MCP resource
//! (`skill://PACK/SKILL.md`, `text/markdown`) and one prompt, `use-packs`, that tells a model how the tools work,
//! which packs it has and where each Skill is (with `pack`, that Skill whole). A viewer is offered the Skill of a
//! pack exactly when it is shown the pack's tools: activated for its tenant, and a command of it granted; any
//! other pack's Skill answers as an unknown resource.

use rmcp::model::{
    GetPromptResult, Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents,
    Role,
};
use rmcp::ErrorData as McpError;
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::model::Principal;
use crate::pack::Pack;
use crate::runtime::visible::may_call;
use crate::runtime::Runtime;

/// The one prompt's name.
pub const PROMPT: &str = "use-packs";

/// A Skill's media type.
const MARKDOWN: &str = "text/markdown";

/// How the tools work, as the server's instructions and the prompt say it.
pub const HOW: &str = "Each tool is one command of an activated HCP pack (pack__verb_key, dots as underscores), \
taking the arguments its input schema names. A result's structured content is the command's result. A denial is \
an error result whose structured content gives a stable code and an error naming the fix. A confirm-gated write \
asks the person itself when this client can ask its user, and only their answer runs it; otherwise it is refused \
with the card to show them, and called again with \"confirm\": true only once they agreed. Each pack's Skill \
(a resource, skill://PACK/SKILL.md) says how to use it: read it before a pack's first call.";

/// The same for `--single-tool`, whose one tool takes a command line.
pub const HOW_SINGLE: &str = "The one tool, hcp, runs the commands of the activated HCP packs: `list`, `commands \
PACK`, `skill PACK` and `exec PACK VERB {json args}`. A denial is an error result whose structured content gives \
a stable code and an error naming the fix. A confirm-gated write asks the person itself when this client can ask \
its user; otherwise it is refused with the card to show them, and run again with \"confirm\": true only once \
they agreed. Each pack's Skill (a resource, skill://PACK/SKILL.md) says how to use it.";

/// The URI of pack `id`'s Skill: the form of the MCP Skills extension (SEP-2640), `skill://NAME/SKILL.md`, so a
/// host that knows it finds the entry file where it looks.
pub fn uri(id: &str) -> String {
    format!("skill://{id}/SKILL.md")
}

/// The pack a Skill URI names, if it is one.
fn pack_of(uri: &str) -> Option<&str> {
    let id = uri.strip_prefix("skill://")?.strip_suffix("/SKILL.md")?;
    (!id.is_empty() && !id.contains(['/', '?', '#'])).then_some(id)
}

/// The packs whose Skill `viewer` is offered, as its tools are: activated for its tenant, with a command it may
/// call.
pub fn visible(runtime: &Runtime, viewer: &Principal) -> Vec<Arc<Pack>> {
    runtime
        .activated_packs(Some(&viewer.tenant))
        .into_iter()
        .filter(|p| p.commands.keys().any(|verb| may_call(&viewer.grants, p, verb)))
        .collect()
}

/// The first paragraph of a Skill's lead, past its heading, on one line.
fn summary(pack: &Pack) -> String {
    let mut words = Vec::new();
    for line in pack.skill.lead.lines().map(str::trim) {
        if line.starts_with('#') || (line.is_empty() && words.is_empty()) {
            continue;
        }
        if line.is_empty() {
            break;
        }
        words.push(line);
    }
    words.join(" ")
}

fn title(pack: &Pack) -> &str {
    pack.name.as_deref().unwrap_or(&pack.id)
}

/// Pack `pack`'s Skill as a listed resource.
pub fn resource(pack: &Pack) -> Resource {
    let about = summary(pack);
    let description = if about.is_empty() { format!("How to use the {} pack.", title(pack)) } else { about };
    Resource::new(uri(&pack.id), pack.id.clone())
        .with_title(format!("{} Skill", title(pack)))
        .with_description(description)
        .with_mime_type(MARKDOWN)
        .with_size(pack.skill.text.len() as u64)
}

/// Why a URI is not read: the same words for a pack that does not exist and for one `viewer` is not shown.
fn unknown(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!("unknown resource {uri}; list the resources again (a pack may have been deactivated)"),
        None,
    )
}

/// The Skill at `uri`, when `viewer` is offered it.
pub fn read(runtime: &Runtime, viewer: &Principal, uri: &str) -> Result<ReadResourceResult, McpError> {
    let id = pack_of(uri).ok_or_else(|| unknown(uri))?;
    let pack = visible(runtime, viewer).into_iter().find(|p| p.id == id).ok_or_else(|| unknown(uri))?;
    let contents = ResourceContents::text(pack.skill.text.clone(), uri).with_mime_type(MARKDOWN);
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The prompt as listed.
pub fn prompt() -> Prompt {
    let pack = PromptArgument::new("pack")
        .with_title("Pack")
        .with_description("The id of a pack whose whole Skill to include")
        .with_required(false);
    Prompt::new(
        PROMPT,
        Some("How to use the HCP packs this server offers: how their tools answer, each pack with what it is for and where its Skill is; with pack, that pack's whole Skill."),
        Some(vec![pack]),
    )
    .with_title("Using the HCP packs")
}

/// The prompt for `viewer`: how the tools work and the packs it is offered; with `pack`, that pack's Skill as an
/// embedded resource. A pack it is not offered is refused as one that does not exist.
pub fn get(
    runtime: &Runtime,
    viewer: &Principal,
    arguments: Option<&Map<String, Value>>,
    single_tool: bool,
) -> Result<GetPromptResult, McpError> {
    let packs = visible(runtime, viewer);
    let mut text = String::from(if single_tool { HOW_SINGLE } else { HOW });
    if packs.is_empty() {
        text.push_str("\n\nNo pack is offered to you yet.");
    } else {
        text.push_str("\n\n## Packs\n");
        for p in &packs {
            text.push_str(&format!("\n- `{}` ({}): {} Skill: {}", p.id, title(p), summary(p), uri(&p.id)));
        }
    }
    let mut messages = vec![PromptMessage::new_text(Role::User, text)];
    // A host's form may send an optional argument left empty.
    if let Some(want) = arguments.and_then(|a| a.get("pack")).filter(|v| v.as_str() != Some("")) {
        let id = want.as_str().unwrap_or_default();
        let Some(pack) = packs.iter().find(|p| p.id == id) else {
            let offered: Vec<&str> = packs.iter().map(|p| p.id.as_str()).collect();
            return Err(McpError::invalid_params(
                format!(
                    "unknown pack {want}; the prompt takes one of the packs offered to you: {}",
                    offered.join(", ")
                ),
                None,
            ));
        };
        messages.push(PromptMessage::new_resource(
            Role::User,
            uri(&pack.id),
            Some(MARKDOWN.to_string()),
            Some(pack.skill.text.clone()),
            None,
            None,
            None,
        ));
    }
    Ok(GetPromptResult::new(messages).with_description("How to use the HCP packs"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_uri_names_one_pack() {
        assert_eq!(uri("ledger"), "skill://ledger/SKILL.md");
        assert_eq!(pack_of("skill://ledger/SKILL.md"), Some("ledger"));
        for not in
            ["skill:///SKILL.md", "skill://a/b/SKILL.md", "hcp://ledger/SKILL.md", "skill://ledger/README.md"]
        {
            assert_eq!(pack_of(not), None, "{not}");
        }
    }

    #[test]
    fn a_summary_is_the_leads_first_paragraph() {
        let pack =
            Pack::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packs/ledger")).unwrap();
        let s = summary(&pack);
        assert!(s.starts_with("A small local ledger") && !s.contains('\n') && !s.contains('#'), "{s}");
        let r = resource(&pack);
        assert_eq!((r.uri.as_str(), r.mime_type.as_deref()), ("skill://ledger/SKILL.md", Some(MARKDOWN)));
    }
}
