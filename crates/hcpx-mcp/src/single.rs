//! `hcpx mcp --single-tool`: one `hcp` tool for hosts with many packs, whose input is a small command
//! language — `list`, `commands PACK`, `skill PACK`, `exec PACK VERB {args}` — answered within 25,000
//! tokens, with the same pipeline (grants, arguments, the confirm gate) as one tool per command.

use serde_json::{json, Map, Value};
use std::sync::Arc;

use super::call::{answer, ToolAnswer};
use crate::model::{Code, Denial, Envelope, Principal};
use crate::runtime::{CallContext, Runtime};

/// The tool's name.
pub const TOOL: &str = "hcp";

/// Longest answer, in approximate tokens (4 characters each).
pub const MAX_TOKENS: usize = 25_000;

/// The tool's input schema.
pub fn input_schema() -> Map<String, Value> {
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "One of: `list` (the packs), `commands PACK` (its commands and argument schemas), `skill PACK` (how to use it), `exec PACK VERB {json args}` (run a command; add \"confirm\": true only once the person approved the card a gated write shows)"
            }
        },
        "required": ["command"]
    });
    schema.as_object().cloned().unwrap_or_default()
}

/// Runs one command line of the language.
pub async fn run(runtime: Arc<Runtime>, principal: Principal, ctx: CallContext, line: &str) -> ToolAnswer {
    let line = line.trim();
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let report = |v: Result<Value, Denial>| match v {
        Ok(v) => capped(ToolAnswer {
            text: serde_json::to_string_pretty(&v).unwrap_or_default(),
            structured: v.as_object().cloned(),
            is_error: false,
            envelope: Map::new(),
        }),
        Err(d) => refused(d),
    };
    match (verb, rest) {
        ("list", "") => report(runtime.list_for(&principal).map(|r| json!(r))),
        ("commands", pack) if one_word(pack) => {
            report(runtime.commands_for(&principal, pack, None).map(|r| json!(r)))
        }
        ("skill", pack) if one_word(pack) => {
            report(runtime.skill_for(&principal, pack, false).map(|r| json!(r)))
        }
        ("exec", _) => match exec_of(line) {
            Some(Ok((pack, cmd, args))) => {
                let out = runtime.exec_async(principal, Envelope::new(pack, cmd, args), ctx).await;
                capped(answer(&out))
            }
            Some(Err(d)) => refused(d),
            None => refused(usage(&format!("unknown command {line:?}"))),
        },
        _ => refused(usage(&format!("unknown command {line:?}"))),
    }
}

/// The pack, command and arguments of an `exec PACK VERB {json args}` line.
pub type ExecLine<'a> = (&'a str, &'a str, Map<String, Value>);

/// The `exec` of a line (`None`: not an `exec` line), or why it cannot be read.
pub fn exec_of(line: &str) -> Option<Result<ExecLine<'_>, Denial>> {
    let line = line.trim();
    let (verb, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    if verb != "exec" {
        return None;
    }
    let mut words = rest.trim().splitn(3, char::is_whitespace);
    let (Some(pack), Some(cmd)) = (words.next().filter(|w| !w.is_empty()), words.next()) else {
        return Some(Err(usage("exec needs a pack and a command: exec PACK VERB {json args}")));
    };
    let args = match words.next().map(str::trim).filter(|a| !a.is_empty()) {
        None => Map::new(),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => m,
            _ => return Some(Err(usage("the arguments after exec PACK VERB must be one JSON object"))),
        },
    };
    Some(Ok((pack, cmd, args)))
}

fn one_word(s: &str) -> bool {
    !s.is_empty() && !s.contains(char::is_whitespace)
}

fn usage(what: &str) -> Denial {
    Denial::new(
        Code::InvalidArgs,
        format!("{what}; the hcp tool takes `list`, `commands PACK`, `skill PACK` or `exec PACK VERB {{json args}}`"),
    )
}

fn refused(d: Denial) -> ToolAnswer {
    answer(&d.into_envelope(TOOL, "command"))
}

/// Keeps the text within [`MAX_TOKENS`], saying so when it was cut.
fn capped(mut a: ToolAnswer) -> ToolAnswer {
    let max = MAX_TOKENS * 4;
    if a.text.chars().count() > max {
        let cut: String = a.text.chars().take(max - 200).collect();
        a.text = format!(
            "{cut}\n… cut at ~{MAX_TOKENS} tokens; ask for less (one pack's commands, the skill's lead)"
        );
        a.structured = Some(Map::from_iter([("truncated".to_string(), Value::Bool(true))]));
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_and_say_so() {
        let a = capped(ToolAnswer {
            structured: None,
            text: "x".repeat(200_000),
            is_error: false,
            envelope: Map::new(),
        });
        assert!(a.text.chars().count() <= MAX_TOKENS * 4);
        assert!(a.text.ends_with("the skill's lead)"));
        assert_eq!(a.structured.unwrap()["truncated"], true);
    }
}
