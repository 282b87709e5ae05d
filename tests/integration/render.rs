//! Every row of HCP's "How cli[] renders" and "The JSON flag" tables and its "Wrap rendering" rules (docs/spec.md §4:
//! https://harnesscontextprotocol.io/docs/concepts/command#how-cli-renders and
//! https://harnesscontextprotocol.io/docs/runtimes/execution#wrap-rendering).

use serde_json::{json, Value};

use crate::helpers::{Fixture, TestDir};
use hcpx_pack::render::{render_argv, RenderError};

/// Loads a one-command wrap pack and renders `verb` with `args`, bin first, as the spec tables print it.
fn rendered(wrap: Value, verb: &str, cli: Option<Value>, args: Value) -> Result<String, RenderError> {
    rendered_cmd(wrap, verb, json!({ "description": "d.", "cli": cli }), args)
}

fn rendered_cmd(wrap: Value, verb: &str, mut cmd: Value, args: Value) -> Result<String, RenderError> {
    let t = TestDir::new();
    if cmd["cli"].is_null() {
        cmd.as_object_mut().unwrap().remove("cli");
    }
    let arg_names: Vec<String> =
        args.as_object().unwrap().keys().filter(|k| *k != "confirm").cloned().collect();
    if cmd.get("args").is_none() && !arg_names.is_empty() {
        let props: serde_json::Map<String, Value> =
            arg_names.iter().map(|n| (n.clone(), json!({ "type": "string", "description": "x" }))).collect();
        cmd["args"] = json!({ "type": "object", "properties": props });
    }
    let mut declared = cmd.clone();
    if let Some(cli) = declared["cli"].as_array().cloned() {
        // Every placeholder of cli[] must be declared; add the ones the call leaves out (optional args).
        for tok in &cli {
            let s = tok.as_str().unwrap();
            if let Some(start) = s.find("{{") {
                let name = &s[start + 2..s.find("}}").unwrap()];
                if declared["args"].is_null() {
                    declared["args"] = json!({ "type": "object", "properties": {} });
                }
                if declared["args"]["properties"][name].is_null() {
                    declared["args"]["properties"][name] = json!({ "type": "string", "description": "x" });
                }
            }
        }
    }
    let surface = json!({
        "id": "p", "kind": "wrap", "wrap": wrap, "binding": { "mode": "public" },
        "verbs": { verb: declared }
    });
    let f = Fixture::with_surface(surface);
    let mut f = f;
    f.files = vec![("bin/tool".into(), "#!/bin/sh\n".into(), true)];
    let pack = f.load(&t);
    let cmd = pack.command(verb).unwrap();
    let wrap = pack.wrap.as_ref().unwrap();
    let checked = cmd.args.check("p.x", args.as_object().unwrap()).expect("args check");
    let argv = render_argv(wrap, cmd, &checked.values)?;
    let bin = cmd.cli_bin.clone().unwrap_or_else(|| "<bin>".into());
    Ok(std::iter::once(bin).chain(argv).collect::<Vec<_>>().join(" "))
}

fn wrap() -> Value {
    json!({ "bin": "./bin/tool" })
}

// docs/spec.md §4, "How cli[] renders": one test per row.

#[test]
fn row_transit_plan() {
    let r = rendered(
        wrap(),
        "plan",
        Some(json!(["transit", "plan", "{{from}}", "{{to}}"])),
        json!({ "from": "A", "to": "B" }),
    );
    assert_eq!(r.unwrap(), "transit plan A B --json");
}

#[test]
fn row_mail_list_flag_equals() {
    let r = rendered(
        wrap(),
        "mail.list",
        Some(json!(["mail", "list", "--folder={{folder}}"])),
        json!({ "folder": "inbox" }),
    );
    assert_eq!(r.unwrap(), "mail list --folder=inbox --json");
}

#[test]
fn row_ledger_transfer_drops_missing_memo_and_its_flag() {
    let r = rendered(
        wrap(),
        "transfer",
        Some(json!([
            "ledger",
            "transfer",
            "{{amount}}",
            "--to",
            "{{payee}}",
            "--memo",
            "{{memo}}",
            "--confirm"
        ])),
        json!({ "amount": "2.80", "payee": "demo-transit", "confirm": true }),
    );
    assert_eq!(r.unwrap(), "ledger transfer 2.80 --to demo-transit --confirm --json");
}

#[test]
fn row_ledger_setup_all() {
    let r = rendered(wrap(), "setup.apply", Some(json!(["ledger", "setup", "all", "-y"])), json!({}));
    assert_eq!(r.unwrap(), "ledger setup all -y --json");
}

// docs/spec.md §4, "The JSON flag": one test per row.

#[test]
fn json_row_nothing_declared_appends_json() {
    assert_eq!(rendered(wrap(), "list", Some(json!(["t", "list"])), json!({})).unwrap(), "t list --json");
}

#[test]
fn json_row_pack_json_flag_on_every_command() {
    let w = json!({ "bin": "./bin/tool", "json_flag": ["-o", "json"] });
    assert_eq!(rendered(w.clone(), "list", Some(json!(["t", "list"])), json!({})).unwrap(), "t list -o json");
    assert_eq!(rendered(w, "get", Some(json!(["t", "get", "x"])), json!({})).unwrap(), "t get x -o json");
}

#[test]
fn json_row_command_json_flag_replaces_and_empty_appends_nothing() {
    let w = json!({ "bin": "./bin/tool", "json_flag": ["-o", "json"] });
    let own = json!({ "description": "d.", "cli": ["t", "list"], "json_flag": ["--format", "json"] });
    assert_eq!(rendered_cmd(w.clone(), "list", own, json!({})).unwrap(), "t list --format json");
    let empty = json!({ "description": "d.", "cli": ["t", "list"], "json_flag": [] });
    assert_eq!(rendered_cmd(w, "list", empty, json!({})).unwrap(), "t list");
}

#[test]
fn json_row_cli_already_selects_json() {
    for cli in [
        json!(["gh", "pr", "list", "--json"]),
        json!(["gh", "pr", "list", "--json=number,title"]),
        json!(["gh", "pr", "list", "--json", "name,url"]),
        json!(["kubectl", "get", "pods", "-o", "json"]),
        json!(["kubectl", "get", "pods", "--output", "json"]),
        json!(["x", "ls", "--format", "json"]),
        json!(["x", "ls", "-f", "json"]),
    ] {
        let toks: Vec<String> =
            cli.as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect();
        let r = rendered(wrap(), "list", Some(cli), json!({})).unwrap();
        assert_eq!(r, toks.join(" "), "nothing is appended to {toks:?}");
    }
    // With its own json_flag, the command's flag is appended even so.
    let own = json!({ "description": "d.", "cli": ["x", "ls", "--json"], "json_flag": ["--pretty"] });
    assert_eq!(rendered_cmd(wrap(), "list", own, json!({})).unwrap(), "x ls --json --pretty");
}

// docs/spec.md §4, "Wrap rendering".

#[test]
fn first_token_is_dropped_and_wrap_bin_spawns() {
    let t = TestDir::new();
    let pack = Fixture::wrap().load(&t);
    let cmd = pack.command("list").unwrap();
    let argv = render_argv(pack.wrap.as_ref().unwrap(), cmd, &serde_json::Map::new()).unwrap();
    assert_eq!(argv, vec!["list", "--json"]);
}

#[test]
fn values_render_as_js_string_and_stay_one_argument() {
    let cmd = json!({
        "description": "d.",
        "cli": ["t", "put", "{{text}}", "--n", "{{n}}", "--on={{on}}", "--tags", "{{tags}}"],
        "args": { "type": "object", "properties": {
            "text": { "type": "string" }, "n": { "type": "number" }, "on": { "type": "boolean" },
            "tags": { "type": "array", "items": { "type": "string" } }
        } }
    });
    let t = TestDir::new();
    let surface = json!({ "id": "p", "kind": "wrap", "wrap": wrap(), "verbs": { "put": cmd } });
    let mut f = Fixture::with_surface(surface);
    f.files = vec![("bin/tool".into(), "#!/bin/sh\n".into(), true)];
    let pack = f.load(&t);
    let c = pack.command("put").unwrap();
    let args = json!({ "text": "two words; rm -rf / $(x)", "n": 2.5, "on": false, "tags": ["a", "b"] });
    let argv = render_argv(pack.wrap.as_ref().unwrap(), c, args.as_object().unwrap()).unwrap();
    assert_eq!(
        argv,
        vec!["put", "two words; rm -rf / $(x)", "--n", "2.5", "--on=false", "--tags", "a,b", "--json"]
    );
}

#[test]
fn a_missing_flag_equals_value_drops_only_that_token() {
    let r = rendered(
        wrap(),
        "mail.list",
        Some(json!(["mail", "list", "--folder={{folder}}", "--all"])),
        json!({}),
    );
    assert_eq!(r.unwrap(), "mail list --all --json");
}

#[test]
fn an_empty_string_counts_as_missing() {
    let r = rendered(
        wrap(),
        "transfer",
        Some(json!(["ledger", "transfer", "{{amount}}", "--memo", "{{memo}}"])),
        json!({ "amount": "1", "memo": "" }),
    );
    assert_eq!(r.unwrap(), "ledger transfer 1 --json");
}

#[test]
fn argv_template_expands_verb_to_the_command_tail() {
    let w = json!({ "bin": "./bin/tool", "argv_template": ["{{verb}}", "--id", "{{id}}"] });
    let cmd = json!({ "description": "d.", "args": { "type": "object", "properties": { "id": { "type": "string" } } } });
    assert_eq!(
        rendered_cmd(w.clone(), "setup.apply", cmd.clone(), json!({ "id": "7" })).unwrap(),
        "<bin> apply --id 7 --json"
    );
    assert_eq!(rendered_cmd(w.clone(), "mail.list", cmd.clone(), json!({})).unwrap(), "<bin> list --json");
    // The default template is just {{verb}}.
    assert_eq!(
        rendered_cmd(wrap(), "status", json!({ "description": "d." }), json!({})).unwrap(),
        "<bin> status --json"
    );
}

#[test]
fn a_positional_value_that_looks_like_a_flag_is_refused() {
    let r = rendered(
        wrap(),
        "plan",
        Some(json!(["transit", "plan", "{{from}}", "{{to}}"])),
        json!({ "from": "--help", "to": "B" }),
    );
    assert!(matches!(r, Err(RenderError::LooksLikeFlag { ref arg, .. }) if arg == "from"), "{r:?}");
    // A negative number passes only as the value a flag takes (`--by {{by}}`) or joined to it (`--by={{by}}`):
    // alone it is an option to many CLIs (`head -5`, `git log -5`).
    let by = json!({ "type": "object", "properties": { "by": { "type": "integer" } } });
    let cmd = json!({ "description": "d.", "cli": ["t", "move", "{{by}}"], "args": by });
    assert!(matches!(
        rendered_cmd(wrap(), "move", cmd, json!({ "by": -5 })),
        Err(RenderError::LooksLikeFlag { .. })
    ));
    let cmd = json!({ "description": "d.", "cli": ["t", "move", "--by", "{{by}}"], "args": by });
    assert_eq!(rendered_cmd(wrap(), "move", cmd, json!({ "by": -5 })).unwrap(), "t move --by -5 --json");
    let cmd = json!({ "description": "d.", "cli": ["t", "move", "--by={{by}}"], "args": by });
    assert_eq!(rendered_cmd(wrap(), "move", cmd, json!({ "by": -5 })).unwrap(), "t move --by=-5 --json");
    // A string that spells a negative number is an option to many CLIs (`ip -6`): refused.
    let r = rendered(
        wrap(),
        "route",
        Some(json!(["ip", "route", "get", "{{destination}}"])),
        json!({ "destination": "-6" }),
    );
    assert!(matches!(r, Err(RenderError::LooksLikeFlag { ref arg, .. }) if arg == "destination"), "{r:?}");
    // A token that starts with a placeholder is the value's to start, whatever follows it.
    let r = rendered(
        wrap(),
        "resolve",
        Some(json!(["git", "rev-parse", "{{ref}}^{commit}"])),
        json!({ "ref": "--output=x" }),
    );
    assert!(matches!(r, Err(RenderError::LooksLikeFlag { ref arg, .. }) if arg == "ref"), "{r:?}");
    // A string after a flag is refused too: the template cannot say that flag takes a value (`--verbose {{name}}`,
    // jq's `--args {{path}}` with path=-h), so the value could be read as an option of its own.
    let r = rendered(wrap(), "find", Some(json!(["t", "find", "--q", "{{q}}"])), json!({ "q": "-x" }));
    assert!(matches!(r, Err(RenderError::LooksLikeFlag { ref arg, .. }) if arg == "q"), "{r:?}");
    let r = rendered(wrap(), "find", Some(json!(["t", "find", "--q={{q}}"])), json!({ "q": "-x" }));
    assert_eq!(r.unwrap(), "t find --q=-x --json");
}

#[test]
fn a_nul_byte_is_refused() {
    let r = rendered(wrap(), "find", Some(json!(["t", "find", "--q", "{{q}}"])), json!({ "q": "a\u{0}b" }));
    assert!(matches!(r, Err(RenderError::NulByte { .. })), "{r:?}");
}

/// Found by schemathesis against `hcpx serve`: `ledger transfer {{amount}} --to {{payee}} --memo {{memo}} --confirm`
/// with every value empty rendered `ledger transfer --confirm`, so the literal `--confirm` took the amount's
/// slot. A required argument that renders to nothing would shift what follows it; it is refused instead.
#[test]
fn an_empty_required_value_is_refused_not_dropped() {
    let args = json!({ "type": "object", "properties": {
        "amount": { "type": "string", "description": "a" }, "payee": { "type": "string", "description": "p" },
        "memo": { "type": "string", "description": "m" } }, "required": ["amount", "payee"] });
    let cli =
        json!(["ledger", "transfer", "{{amount}}", "--to", "{{payee}}", "--memo", "{{memo}}", "--confirm"]);
    let cmd = json!({ "description": "d.", "cli": cli, "args": args });
    let r = rendered_cmd(wrap(), "transfer", cmd.clone(), json!({ "amount": "", "payee": "", "memo": "" }));
    assert!(matches!(r, Err(RenderError::EmptyRequired { ref arg }) if arg == "amount"), "{r:?}");
    let r = rendered_cmd(wrap(), "transfer", cmd.clone(), json!({ "amount": "1", "payee": "" }));
    assert!(matches!(r, Err(RenderError::EmptyRequired { ref arg }) if arg == "payee"), "{r:?}");
    // An optional value still drops with its flag, as docs/spec.md §4 says.
    let r = rendered_cmd(wrap(), "transfer", cmd, json!({ "amount": "1", "payee": "p", "memo": "" }));
    assert_eq!(r.unwrap(), "ledger transfer 1 --to p --confirm --json");
}
