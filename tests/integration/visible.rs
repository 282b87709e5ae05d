//! Each Principal sees what it may call (#34.7, docs/security.md, Each Principal sees what it may call): the
//! pack list, a pack's row, commands, Skill, availability and titles over HTTP, the tools of `/mcp` and of stdio,
//! `--single-tool`'s `list`, and the bootstrap pack's `hcp.list` show only the packs and commands its grants
//! allow; a pack it holds no grant for answers exactly as one that is not installed.

use serde_json::{json, Value};

use crate::helpers::Home;
use crate::mcp::client;
use crate::serve::{install_repo_packs, principal, Server};

fn ids(listed: &Value) -> Vec<String> {
    listed["packs"].as_array().unwrap().iter().map(|p| p["id"].as_str().unwrap().to_string()).collect()
}

fn tools(r: &Value) -> Vec<String> {
    r["tools"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect()
}

#[test]
fn over_http_a_principal_is_shown_only_the_packs_and_commands_it_may_call() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger", "transit"]);
    let reader = principal(&h, "reader", "acme", &["verb.exec.read:ledger", "verb.exec.read:hcp-cli"], false);
    let traveler = principal(&h, "traveler", "acme", &["verb.exec.read:transit"], false);
    let s = Server::start(&h, &[]);

    // The list and a pack's row.
    let (st, listed) = s.get("/v1/packs", &reader);
    assert_eq!((st, ids(&listed)), (200, vec!["ledger".to_string()]), "{listed}");
    assert_eq!(ids(&s.get("/v1/packs", &traveler).1), vec!["transit".to_string()]);
    let (st, hidden) = s.get("/v1/packs/ledger", &traveler);
    let (st2, absent) = s.get("/v1/packs/no-such-pack", &traveler);
    assert_eq!((st, st2), (404, 404), "{hidden} {absent}");
    assert_eq!(hidden["code"], "unknown_pack");
    assert_eq!(
        hidden["error"].as_str().unwrap().replace("ledger", "X"),
        absent["error"].as_str().unwrap().replace("no-such-pack", "X"),
        "a pack held back answers as one that is not installed"
    );

    // Commands: the reads it may call, never the writes.
    let (st, cmds) = s.get("/v1/packs/ledger/commands", &reader);
    assert_eq!(st, 200, "{cmds}");
    let verbs: Vec<&str> =
        cmds["commands"].as_array().unwrap().iter().map(|c| c["verb_key"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["setup.status", "status", "list"], "{cmds}");
    // Skill, availability, commands and titles of a pack it holds nothing for: unknown.
    for path in [
        "/v1/packs/ledger/commands",
        "/v1/packs/ledger/skill",
        "/v1/packs/ledger/skill?full=true",
        "/v1/packs/ledger/availability",
    ] {
        let (st, v) = s.get(path, &traveler);
        assert_eq!((st, v["code"].as_str()), (404, Some("unknown_pack")), "{path}: {v}");
        assert!(!v.to_string().contains("Transfer"), "{path}: {v}");
    }
    assert_eq!(s.get("/v1/packs/ledger/skill", &reader).0, 200);
    let title = |who: &str, verb: &str| {
        s.post(
            "/v1/title",
            who,
            &json!({"pack_id": "ledger", "verb_key": verb, "args": {"amount": "2.80", "payee": "x"}}),
        )
    };
    assert_eq!(title(&reader, "status").0, 200);
    assert_eq!(
        title(&reader, "transfer").1["code"],
        "no_policy",
        "a write it may not call has no title for it"
    );
    assert_eq!(title(&traveler, "status").1["code"], "unknown_pack");

    // The bootstrap pack's list, through the exec envelope.
    let (st, v) = s.post("/v1/exec/hcp-cli/hcp.list", &reader, &json!({}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(ids(&v["result"]), vec!["ledger".to_string()], "{v}");
    let (_, v) = s.post(
        "/v1/exec/hcp-cli/hcp.commands",
        &reader,
        &json!({"pack_id": "ledger", "verb_key": "transfer"}),
    );
    assert_eq!(v["code"], "no_policy", "{v}");

    // A pack name it cannot see is never offered as a did-you-mean.
    let (_, v) = s.post("/v1/exec/ledgr/status", &traveler, &json!({}));
    assert_eq!(v["code"], "unknown_pack", "{v}");
    assert!(!v["error"].as_str().unwrap().contains("ledger"), "{v}");

    // The OpenAPI document and the tools of /mcp.
    let (_, doc) = s.get("/openapi.json", &reader);
    let paths: Vec<&String> =
        doc["paths"].as_object().unwrap().keys().filter(|p| p.starts_with("/v1/exec/")).collect();
    assert!(
        paths.iter().all(|p| p.starts_with("/v1/exec/ledger/"))
            && !paths.iter().any(|p| p.ends_with("/transfer")),
        "{paths:?}"
    );
    let url = format!("http://{}/mcp", s.addr);
    let r = client(&h, "tools.py", &[&url, &reader]);
    assert_eq!(tools(&r), ["ledger__list", "ledger__setup_status", "ledger__status"], "{r}");
    let r = client(&h, "tools.py", &[&url, &traveler]);
    assert!(tools(&r).iter().all(|t| t.starts_with("transit__")) && !tools(&r).is_empty(), "{r}");
}

/// Over stdio the local Principal's `grants.json` decides what `hcpx mcp` lists, with one tool per command and
/// with `--single-tool`.
#[test]
fn over_stdio_the_local_grants_decide_the_tools_and_the_single_tools_list() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger", "transit"]);
    let out = h.run(&["grant", "--only", "verb.exec.read:ledger"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r = client(&h, "tools.py", &[]);
    assert_eq!(tools(&r), ["ledger__list", "ledger__setup_status", "ledger__status"], "{r}");
    let r = client(&h, "single.py", &[]);
    let listed: Vec<&str> = r["list"]["structured"]["packs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["ledger"], "{}", r["list"]);
    let verbs = r["commands"]["text"].as_str().unwrap();
    assert!(verbs.contains("\"status\"") && !verbs.contains("\"transfer\""), "{verbs}");
}

/// The bootstrap pack's `hcp.list` tells a served caller only that a pack came from a directory, never which
/// (the operator's host path), as `GET /v1/packs` does for a non-operator.
#[test]
fn a_served_list_never_names_where_a_directory_pack_came_from() {
    let h = Home::new();
    install_repo_packs(&h, &["ledger"]);
    let reader = principal(&h, "reader", "acme", &["verb.exec.read:ledger", "verb.exec.read:hcp-cli"], false);
    let s = Server::start(&h, &[]);
    let (st, v) = s.post("/v1/exec/hcp-cli/hcp.list", &reader, &json!({}));
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["result"]["packs"][0]["source"], "a directory on the operator's host", "{v}");
    assert!(!v.to_string().contains("packs/ledger"), "{v}");
}
