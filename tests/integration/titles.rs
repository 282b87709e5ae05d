//! Titles (docs/spec.md §3): every row of the table in https://harnesscontextprotocol.io/docs/concepts/command#titles,
//! and the rules around it; previews fill the same way.

use serde_json::{json, Map, Value};

use crate::helpers::{Fixture, TestDir};
use hcpx_pack::command_title;

fn mail_pack(t: &TestDir) -> hcpx_pack::Pack {
    let surface = json!({
        "id": "mail", "kind": "wrap", "wrap": { "bin": "./bin/tool" },
        "verbs": {
            "find": {
                "description": "Mail in the Inbox matching a query or a sender.",
                "cli": ["mail", "find", "--query", "{{q}}", "--from", "{{from}}"],
                "args": { "type": "object", "properties": {
                    "q": { "type": "string", "description": "Query" },
                    "from": { "type": "string", "description": "Sender" },
                    "tags": { "type": "array", "items": { "type": "string" } },
                    "note": { "type": "string" }
                } },
                "title": {
                    "live": ["Searching the Inbox for “{{q}}”", "Searching the Inbox"],
                    "done": ["Searched the Inbox for “{{q}}”", "Searched the Inbox for mail from {{from}}", "Searched the Inbox"]
                }
            },
            "read": {
                "description": "Read one mail.",
                "cli": ["mail", "read"],
                "title": { "live": "Reading {{result.mail.subject}}", "done": ["Read {{result.mail.subject}}", "Read a mail"] }
            },
            "tag": {
                "description": "Tag mail.",
                "cli": ["mail", "tag", "--tags", "{{tags}}"],
                "args": { "type": "object", "properties": { "tags": { "type": "array", "items": { "type": "string" } }, "note": { "type": "string" } } },
                "title": { "live": ["Tagging with {{tags}}"], "done": ["Noted {{note}}", "Tagged"] }
            },
            "plain": { "description": "No title.", "cli": ["mail", "plain"] }
        }
    });
    let mut f = Fixture::with_surface(surface);
    f.files = vec![("bin/tool".into(), "#!/bin/sh\n".into(), true)];
    f.load(t)
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap()
}

#[test]
fn table_row_q_laura() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    let a = args(json!({ "q": "Laura" }));
    assert_eq!(command_title(&p, "find", &a, None).as_deref(), Some("Searching the Inbox for “Laura”"));
    assert_eq!(
        command_title(&p, "find", &a, Some(&json!({}))).as_deref(),
        Some("Searched the Inbox for “Laura”")
    );
}

#[test]
fn table_row_from_anna() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    let a = args(json!({ "from": "anna@acme.example" }));
    assert_eq!(command_title(&p, "find", &a, None).as_deref(), Some("Searching the Inbox"));
    assert_eq!(
        command_title(&p, "find", &a, Some(&json!({}))).as_deref(),
        Some("Searched the Inbox for mail from anna@acme.example")
    );
}

#[test]
fn table_row_no_arguments() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    let a = Map::new();
    assert_eq!(command_title(&p, "find", &a, None).as_deref(), Some("Searching the Inbox"));
    assert_eq!(command_title(&p, "find", &a, Some(&json!({}))).as_deref(), Some("Searched the Inbox"));
}

#[test]
fn result_fields_fill_only_done_titles() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    let r = json!({ "mail": { "subject": "Quarterly numbers" } });
    // live cannot use the result, and has no fallback: no title at all.
    assert_eq!(command_title(&p, "read", &Map::new(), None), None);
    assert_eq!(command_title(&p, "read", &Map::new(), Some(&r)).as_deref(), Some("Read Quarterly numbers"));
    assert_eq!(
        command_title(&p, "read", &Map::new(), Some(&json!({ "mail": {} }))).as_deref(),
        Some("Read a mail")
    );
}

#[test]
fn undeclared_titles_and_unknown_commands_give_none() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    assert_eq!(command_title(&p, "plain", &Map::new(), None), None);
    assert_eq!(command_title(&p, "plain", &Map::new(), Some(&json!({}))), None);
    assert_eq!(command_title(&p, "nope", &Map::new(), None), None);
}

#[test]
fn values_are_flattened_cut_and_joined() {
    let t = TestDir::new();
    let p = mail_pack(&t);
    let long = "word ".repeat(30);
    let title = command_title(&p, "find", &args(json!({ "q": long })), None).unwrap();
    let value = title.trim_start_matches("Searching the Inbox for “").trim_end_matches('”');
    assert_eq!(value.chars().count(), 60, "{value}");
    assert!(value.ends_with('…'));
    let title = command_title(&p, "find", &args(json!({ "q": "two\nlines\t here" })), None).unwrap();
    assert_eq!(title, "Searching the Inbox for “two lines here”");
    let title = command_title(&p, "tag", &args(json!({ "tags": ["red", "blue"] })), None).unwrap();
    assert_eq!(title, "Tagging with red, blue");
    // An empty value is no value: the next template wins.
    let done = command_title(&p, "tag", &args(json!({ "note": "  " })), Some(&json!({}))).unwrap();
    assert_eq!(done, "Tagged");
    // A live form whose only template cannot be filled gives no title rather than an empty slot.
    assert_eq!(command_title(&p, "tag", &Map::new(), None), None);
}

#[test]
fn previews_fill_from_args() {
    let t = TestDir::new();
    let p = Fixture::wrap().load(&t);
    let cmd = p.command("remove").unwrap();
    let card = cmd.preview.as_ref().unwrap().render(&args(json!({ "id": "i-9" })));
    assert_eq!(
        serde_json::to_value(&card).unwrap(),
        json!({ "kind": "removal", "title": "Remove i-9", "fields": { "id": "i-9" } })
    );
}

#[test]
fn the_ledger_example_titles_and_preview() {
    let p = hcpx_pack::Pack::load(&crate::helpers::repo().join("packs/ledger")).unwrap();
    let a = args(json!({ "amount": "2.80", "payee": "demo-transit" }));
    assert_eq!(command_title(&p, "transfer", &a, None).as_deref(), Some("Paying 2.80 to demo-transit"));
    assert_eq!(
        command_title(&p, "transfer", &a, Some(&json!({ "ok": true }))).as_deref(),
        Some("Paid 2.80 to demo-transit")
    );
    assert_eq!(command_title(&p, "transfer", &Map::new(), None).as_deref(), Some("Paying a payee"));
    let card = p.command("transfer").unwrap().preview.as_ref().unwrap().render(&a);
    assert_eq!(
        serde_json::to_value(&card).unwrap(),
        json!({ "kind": "payment", "title": "Pay demo-transit", "fields": { "amount": "2.80", "currency": "EUR", "to": "demo-transit" } })
    );
}
