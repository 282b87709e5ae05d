//! What a model reads over MCP (#37.4, docs/mcp.md): a call's structured content is the command's result and the
//! envelope's details ride in `_meta` (the output once, not the nine layer statuses), a denial's is its code,
//! error and card; a slow call sends progress until it answers and never after; each pack's Skill is a resource
//! and the way to use the packs a prompt, shown exactly to whom the pack's tools are. The official Python SDK
//! drives `hcpx mcp` over stdio and `hcpx serve`'s `/mcp`, with an older `ClientSession` and the default
//! 2026-07-28 `mcp.Client`.

use serde_json::{json, Value};

use crate::helpers::{repo, Fixture, Home};
use crate::mcp::client;
use crate::serve::{install_repo_packs, principal, Server};

/// The unique word in what `pause peek` prints.
const MARKER: &str = "reads-marker-7f3a";

/// A wrap with a read that prints a JSON object (`peek`), one that prints plain text (`say`), and one that
/// takes three seconds (`wait`).
fn pause_pack(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface = json!({
        "id": "pause", "name": "Pause", "kind": "wrap", "cliBin": "pause",
        "binding": { "mode": "public" },
        "wrap": { "bin": "./bin/pause", "json_flag": [], "workspace": { "mode": "ephemeral" } },
        "verbs": {
            "peek": { "description": "Print an object.", "cli": ["pause", "peek"] },
            "say": { "description": "Print a line of text.", "cli": ["pause", "say"] },
            "wait": { "description": "Take three seconds.", "cli": ["pause", "wait"],
                      "title": { "live": ["Pausing a while"] } }
        }
    });
    f.policy = json!({ "surface_id": "pause", "verbs": {
        "peek": { "operation": "read" }, "say": { "operation": "read" }, "wait": { "operation": "read" } } });
    f.harness = "# Pause\n\nPrints things, and takes its time.\n\n## Hot path\n\n| command | when |\n|---|---|\n| `peek` | an object |\n".into();
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in\n  peek) printf '{{\"marker\": \"{MARKER}\", \"items\": [1, 2, 3]}}\\n' ;;\n  say) echo 'plain words' ;;\n  wait) sleep 3; echo '{{\"slept\": 3}}' ;;\nesac\n"
    );
    f.files = vec![("bin/pause".into(), script, true)];
    h.install(&f, "pause");
}

fn setup(h: &Home) {
    pause_pack(h);
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
}

/// How many times `needle` occurs in `hay`.
fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// What reads.py saw, checked the same for stdio and Streamable HTTP: `full` is the CLI's whole result envelope
/// of the same read, which structuredContent was before.
fn check_reads(r: &Value, full: &Value) {
    for client in ["legacy", "modern"] {
        let c = &r[client];
        let read = &c["read"]["raw"];
        // The result is the structured content; the text block says it; the envelope is in _meta.
        assert_eq!(
            read["structuredContent"],
            json!({"marker": MARKER, "items": [1, 2, 3]}),
            "{client}: {read}"
        );
        assert_eq!(read["isError"], false, "{client}: {read}");
        assert!(read["content"][0]["text"].as_str().unwrap().contains(MARKER), "{client}: {read}");
        let env = &read["_meta"]["dev.hcpx/envelope"];
        assert_eq!(
            (env["ok"].as_bool(), env["pack_id"].as_str()),
            (Some(true), Some("pause")),
            "{client}: {read}"
        );
        assert_eq!(c["read"]["envelope"], *env, "transport.envelope_of reads _meta");
        // The output once in what carries data (and once more in the text block), never as `stdout`.
        let data = format!("{}{}", read["structuredContent"], read["_meta"]);
        assert_eq!(count(&data, MARKER), 1, "{client}: {read}");
        assert!(env.get("stdout").is_none() && env.get("result").is_none(), "{client}: {env}");
        // Of the confinement, only the layers that did not hold.
        let layers = env["sandbox"]["layers"].as_object().cloned().unwrap_or_default();
        assert!(layers.values().all(|s| s != "enforced"), "{client}: {env}");
        // Smaller than the whole envelope as structured content was, by at least the repeated output.
        let stdout = full["stdout"].as_str().unwrap();
        let before = json!({"content": [{"type": "text", "text": read["content"][0]["text"]}],
                            "structuredContent": full, "isError": false});
        let (was, now) = (before.to_string().len(), read.to_string().len());
        assert!(
            now + stdout.len() <= was,
            "{client}: {now} bytes now, {was} before, {} of output",
            stdout.len()
        );

        // A result that is no object is wrapped, and the schema-less text stays the text.
        let text = &c["text"]["raw"];
        assert_eq!(text["structuredContent"], json!({"result": "plain words\n"}), "{client}: {text}");
        assert_eq!(text["content"][0]["text"], "plain words\n");

        // A denial: what the model needs (code, error, the card), the envelope in _meta.
        let denied = &c["denied"]["raw"];
        assert_eq!(denied["isError"], true, "{client}: {denied}");
        let s = &denied["structuredContent"];
        assert_eq!(s["code"], "confirm_required", "{client}: {denied}");
        assert!(s["error"].is_string() && s["preview"]["title"] == "Pay demo-transit", "{client}: {denied}");
        let keys: Vec<&str> = s.as_object().unwrap().keys().map(String::as_str).collect();
        assert!(keys.iter().all(|k| ["code", "error", "preview", "approval_id"].contains(k)), "{keys:?}");
        assert_eq!(denied["_meta"]["dev.hcpx/envelope"]["code"], "confirm_required");
        assert!(denied["content"][0]["text"].as_str().unwrap().contains("\"confirm\": true"));

        // Progress through the slow call: several, rising, naming the tool, none after the answer.
        let slow = &c["slow"];
        assert_eq!(slow["result"]["raw"]["structuredContent"], json!({"slept": 3}), "{client}: {slow}");
        let notes = slow["notes"].as_array().unwrap();
        assert!(notes.len() >= 3, "{client}: {slow}");
        assert_eq!(
            slow["notes_at_answer"].as_u64(),
            Some(notes.len() as u64),
            "a note after the answer: {slow}"
        );
        let answered = slow["answered_at"].as_f64().unwrap();
        let mut last = -1.0;
        for n in notes {
            let p = n["progress"].as_f64().unwrap();
            assert!(p > last && n["at"].as_f64().unwrap() <= answered, "{client}: {slow}");
            assert!(n["message"].as_str().unwrap().starts_with("Pausing a while"), "{client}: {slow}");
            last = p;
        }
    }
    // The Skill of a pack installed mid-session is listed, and the client is told.
    assert_eq!(r["resources_changed"], true, "{r}");
    let after: Vec<&str> =
        r["resources_after"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(
        after.contains(&"skill://transit/SKILL.md") && after.contains(&"skill://pause/SKILL.md"),
        "{after:?}"
    );
    assert!(!r["resources_before"].to_string().contains("skill://transit/"), "{r}");
}

#[test]
fn a_model_reads_the_result_and_the_envelope_rides_in_meta_over_stdio() {
    let h = Home::new();
    setup(&h);
    let (code, full) = h.exec("pause", "peek", &[]);
    assert_eq!(code, 0, "{full}");
    let r = client(&h, "reads.py", &[repo().join("packs/transit").to_str().unwrap()]);
    check_reads(&r, &full);
}

#[test]
fn a_model_reads_the_result_and_the_envelope_rides_in_meta_over_http() {
    let h = Home::new();
    setup(&h);
    let (code, full) = h.exec("pause", "peek", &[]);
    assert_eq!(code, 0, "{full}");
    let alice = principal(&h, "alice", "acme", crate::serve::ALL, false);
    let s = Server::start(&h, &[]);
    let url = format!("http://{}/mcp", s.addr);
    let r = client(&h, "reads.py", &[repo().join("packs/transit").to_str().unwrap(), &url, &alice]);
    check_reads(&r, &full);
}

/// resources.py for `uris` and prompt `packs`, over stdio or (with `at`) over HTTP as a bearer.
fn resources(h: &Home, uris: &[&str], packs: &[&str], at: Option<(&str, &str)>) -> Value {
    let (uris, packs) = (json!(uris).to_string(), json!(packs).to_string());
    let mut args = vec![uris.as_str(), packs.as_str()];
    if let Some((url, token)) = at {
        args.extend([url, token]);
    }
    client(h, "resources.py", &args)
}

fn listed(seen: &Value) -> Vec<String> {
    seen["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap().to_string()).collect()
}

#[test]
fn each_packs_skill_is_a_resource_and_the_way_to_use_them_a_prompt() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger", "transit-composite"]);
    let skill = std::fs::read_to_string(repo().join("packs/ledger/HARNESS.md")).unwrap();
    let r =
        resources(&h, &["skill://ledger/SKILL.md", "skill://nope/SKILL.md"], &["", "ledger", "nope"], None);
    for client in ["legacy", "modern"] {
        let c = &r[client];
        assert_eq!(
            listed(c),
            ["skill://ledger/SKILL.md", "skill://transit-composite/SKILL.md"],
            "{client}: {c}"
        );
        let ledger = &c["resources"][0];
        assert_eq!(
            (ledger["name"].as_str(), ledger["mimeType"].as_str()),
            (Some("ledger"), Some("text/markdown"))
        );
        assert!(ledger["description"].as_str().unwrap().starts_with("A small local ledger"), "{ledger}");
        let read = &c["reads"]["skill://ledger/SKILL.md"]["contents"][0];
        assert_eq!(
            (read["text"].as_str(), read["mimeType"].as_str()),
            (Some(skill.as_str()), Some("text/markdown"))
        );
        assert!(c["reads"]["skill://nope/SKILL.md"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown resource"));
        // The prompt: how the tools answer and each pack with its Skill's address; with a pack, its Skill.
        assert_eq!(c["prompts"][0]["name"], "use-packs", "{c}");
        assert_eq!(c["prompts"][0]["arguments"][0]["name"], "pack");
        let text = c["prompt"][""]["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("pack__verb_key") && text.contains("stable code"), "{text}");
        assert!(
            text.contains("`ledger` (Ledger): A small local ledger")
                && text.contains("skill://ledger/SKILL.md")
        );
        assert_eq!(c["prompt"][""]["messages"].as_array().unwrap().len(), 1);
        let with = &c["prompt"]["ledger"]["messages"][1]["content"]["resource"];
        assert_eq!(
            (with["uri"].as_str(), with["text"].as_str()),
            (Some("skill://ledger/SKILL.md"), Some(skill.as_str()))
        );
        assert!(c["prompt"]["nope"]["error"]["message"].as_str().unwrap().contains("unknown pack"), "{c}");
    }
    assert_eq!(
        r["legacy"]["capabilities"],
        json!({"resources": true, "resources_list_changed": true, "prompts": true})
    );
    assert_eq!(r["modern"]["protocol"], "2026-07-28", "{r}");
}

#[test]
fn a_skill_is_read_only_by_whom_its_packs_tools_are_shown() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger", "transit-composite"]);
    let alice = principal(&h, "alice", "acme", &["verb.exec.read:ledger", "verb.exec.read:transit"], false);
    let bob = principal(&h, "bob", "beta", crate::serve::ALL, false);
    // transit: installed, activated for acme alone.
    assert_eq!(h.run(&["install", repo().join("packs/transit").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "transit", "--tenant", "acme"]).status.code(), Some(0));
    let s = Server::start(&h, &[]);
    let url = format!("http://{}/mcp", s.addr);
    let uris = [
        "skill://ledger/SKILL.md",
        "skill://transit/SKILL.md",
        "skill://transit-composite/SKILL.md",
        "skill://nope/SKILL.md",
    ];
    let packs = ["transit", "transit-composite", "nope"];

    let a = resources(&h, &uris, &packs, Some((&url, &alice)));
    let b = resources(&h, &uris, &packs, Some((&url, &bob)));
    for client in ["legacy", "modern"] {
        let (a, b) = (&a[client], &b[client]);
        // Alice: the packs she holds a grant for, activated for her tenant.
        assert_eq!(listed(a), ["skill://ledger/SKILL.md", "skill://transit/SKILL.md"], "{client}: {a}");
        // Bob holds every grant, but transit is not activated for beta.
        assert_eq!(
            listed(b),
            ["skill://ledger/SKILL.md", "skill://transit-composite/SKILL.md"],
            "{client}: {b}"
        );
        // What is not shown answers as what does not exist: the same code, the same words.
        let refusal = |seen: &Value, uri: &str| {
            let e = &seen["reads"][uri]["error"];
            assert!(e.is_object(), "{client}: {uri} was read: {seen}");
            (e["code"].clone(), e["message"].as_str().unwrap().replace(uri, "URI"))
        };
        let absent = refusal(a, "skill://nope/SKILL.md");
        assert_eq!(refusal(a, "skill://transit-composite/SKILL.md"), absent, "not granted");
        assert_eq!(refusal(b, "skill://transit/SKILL.md"), absent, "another tenant's");
        assert!(a["reads"]["skill://transit/SKILL.md"]["contents"][0]["text"].is_string(), "{a}");
        assert!(b["reads"]["skill://transit-composite/SKILL.md"]["contents"][0]["text"].is_string(), "{b}");
        // The prompt lists and takes the same packs.
        let text = a["prompt"]["transit"]["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("skill://transit/SKILL.md") && !text.contains("transit-composite"), "{text}");
        let words = |seen: &Value, pack: &str| {
            seen["prompt"][pack]["error"]["message"].as_str().map(|m| m.split(';').nth(1).map(str::to_string))
        };
        assert!(
            a["prompt"]["transit-composite"]["error"].is_object()
                && b["prompt"]["transit"]["error"].is_object()
        );
        assert_eq!(words(a, "transit-composite"), words(a, "nope"), "{a}");
        let text = b["prompt"]["transit-composite"]["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("skill://transit-composite/") && !text.contains("skill://transit/"), "{text}");
    }
}
