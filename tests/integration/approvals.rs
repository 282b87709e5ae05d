//! Approvals a model cannot forge (docs/security.md, Approvals a model cannot forge), each attack driven the way
//! a client would drive it. Over MCP with the SDK's default `mcp.Client` (protocol 2026-07-28): the person's
//! approval comes back through `input_required` and a sealed request state that runs the call once, and a
//! replayed, altered, moved or forged state is refused. With the operator's `human_approval`: the model's own
//! `confirm: true` runs nothing; the call waits as an approval a person decides (`hcpx approve|refuse` at the
//! store, or an approver Principal over HTTP, never the caller itself); the retry with the id runs once, and a
//! replayed, altered, refused, expired or made-up approval is refused — over MCP (stdio and HTTP, a client that
//! cannot elicit) and the HTTP API, on the file store and on PostgreSQL.

use serde_json::{json, Value};

use crate::helpers::{repo, Home};
use crate::mcp::client;
use crate::serve::{on_both_stores, principal, Server};

const WRITER: &[&str] = &["verb.exec.read:*", "verb.exec.write:*"];
const TRANSFER: &str = "/v1/exec/ledger/transfer";

fn ledger(h: &Home) {
    assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
    assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
}

/// The operator requires a person's approval of `ledger.transfer`, each lasting `ttl_s`.
fn require_approval(h: &Home, ttl_s: u64, elicitation: bool) {
    let cfg = json!({ "human_approval": {
        "commands": [{ "pack_id": "ledger", "verb_keys": ["transfer"] }],
        "ttl_s": ttl_s, "elicitation": elicitation } });
    h.write_store("sandbox.json", &cfg.to_string());
}

/// The audit rows of payments that ran (not the approvers' decisions).
fn payments(h: &Home) -> Vec<Value> {
    h.audit_log()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["verb_key"] == "transfer" && r["ok"] == true && r.get("decision").is_none())
        .collect()
}

/// What modern.py saw: one approval ran once, a decline and a "no" ran nothing, and every replayed, altered, moved
/// or forged request state was refused.
pub(crate) fn check_modern(h: &Home, r: &Value) {
    assert_eq!(r["protocol"], "2026-07-28", "the SDK's default client negotiates the newest protocol: {r}");
    assert_eq!(r["asked"].as_array().unwrap().len(), 3, "{r}");
    assert!(r["asked"][0].as_str().unwrap().contains("Pay demo-transit"), "{r}");
    assert_eq!(r["approved"]["is_error"], false, "{}", r["approved"]);
    assert!(r["approved"]["text"].as_str().unwrap().contains("97.20"), "{}", r["approved"]);
    for key in ["declined", "said_no"] {
        assert_eq!(r[key]["structured"]["code"], "confirm_required", "{key}: {}", r[key]);
        assert!(r[key]["structured"]["error"].as_str().unwrap().contains("nothing ran"), "{}", r[key]);
    }
    assert_eq!(r["first"], json!({"input_required": true, "requests": ["approve"], "has_state": true}));
    for key in ["moved", "altered", "forged"] {
        assert_eq!(r[key]["structured"]["code"], "denied", "{key}: {}", r[key]);
        assert!(r[key]["structured"]["error"].as_str().unwrap().contains("request state"), "{}", r[key]);
    }
    assert_eq!(r["resumed"]["is_error"], false, "the untouched state still runs: {}", r["resumed"]);
    assert_eq!(r["replayed"]["structured"]["code"], "denied", "{}", r["replayed"]);
    assert!(
        r["replayed"]["structured"]["error"].as_str().unwrap().contains("already used"),
        "{}",
        r["replayed"]
    );
    let paid = payments(h);
    assert_eq!(paid.len(), 2, "one payment per approval, none for a refusal or a replay: {paid:?}");
    assert!(paid.iter().all(|p| p["approval"].as_str().is_some_and(|a| a.starts_with("ap_"))), "{paid:?}");
}

on_both_stores! {
    fn the_newest_mcp_client_confirms_through_input_required_over_stdio / the_newest_mcp_client_confirms_through_input_required_over_stdio_postgres (h) {
        ledger(&h);
        let r = client(&h, "modern.py", &[]);
        check_modern(&h, &r);
    }
}

on_both_stores! {
    fn the_newest_mcp_client_confirms_through_input_required_over_http / the_newest_mcp_client_confirms_through_input_required_over_http_postgres (h) {
        ledger(&h);
        let alice = principal(&h, "alice", "acme", WRITER, false);
        let s = Server::start(&h, &[]);
        let r = client(&h, "modern.py", &[&format!("http://{}/mcp", s.addr), &alice]);
        check_modern(&h, &r);
    }
}

/// What approval.py saw, the same over stdio and HTTP.
fn check_out_of_band(h: &Home, r: &Value) {
    let held = &r["self_confirmed"];
    assert_eq!(held["code"], "approval_pending", "the model's own confirm ran nothing: {held}");
    assert_eq!(held["preview"]["title"], "Pay demo-transit", "{held}");
    let id = held["approval_id"].as_str().unwrap();
    assert!(held["text"].as_str().unwrap().contains(&format!("\"approval_id\": \"{id}\"")), "{held}");
    assert!(held["text"].as_str().unwrap().contains("cannot approve this yourself"), "{held}");
    for (key, says) in [
        ("not_yet", "still waits for a person"),
        ("altered", "made for other arguments"),
        ("made_up", "no approval ap_000000000000000000000000"),
        ("replayed", "already used"),
        ("refused", "was refused"),
        ("expired", "expired at"),
    ] {
        assert_eq!(r[key]["code"], "denied", "{key}: {}", r[key]);
        assert!(r[key]["error"].as_str().unwrap().contains(says), "{key}: {}", r[key]);
    }
    assert_eq!(r["ran"]["is_error"], false, "{}", r["ran"]);
    assert!(r["ran"]["text"].as_str().unwrap().contains("97.20"), "{}", r["ran"]);
    let paid = payments(h);
    assert_eq!(paid.len(), 1, "only the approved call ran, once: {paid:?}");
    assert_eq!(paid[0]["approval"], id);
}

on_both_stores! {
    fn a_client_that_cannot_ask_waits_for_a_person_at_the_terminal / a_client_that_cannot_ask_waits_for_a_person_at_the_terminal_postgres (h) {
        ledger(&h);
        require_approval(&h, 3, true);
        let r = client(&h, "approval.py", &["3"]);
        check_out_of_band(&h, &r);
        // Each decision is an audit row of the person who made it.
        let audit = h.audit_log();
        assert!(audit.lines().any(|l| l.contains("\"decision\":\"approved\"") && l.contains("\"invoker\":\"cli\"")), "{audit}");
        assert!(audit.lines().any(|l| l.contains("\"decision\":\"refused\"")), "{audit}");
        assert!(audit.lines().any(|l| l.contains("\"code\":\"approval_pending\"")), "{audit}");
    }
}

on_both_stores! {
    fn a_client_that_cannot_ask_over_http_waits_for_an_approver / a_client_that_cannot_ask_over_http_waits_for_an_approver_postgres (h) {
        ledger(&h);
        require_approval(&h, 3, true);
        let alice = principal(&h, "alice", "acme", WRITER, false);
        let out = h.run(&["principal", "add", "bob", "--tenant", "acme", "--approver", "--json"]);
        assert_eq!(out.status.code(), Some(0));
        let bob = crate::helpers::stdout_json(&out)["token"].as_str().unwrap().to_string();
        let s = Server::start(&h, &[]);
        let r = client(&h, "approval.py", &["3", &format!("http://{}/mcp", s.addr), &alice, &bob]);
        check_out_of_band(&h, &r);
        assert_eq!(r["approve"]["status"], 200, "{}", r["approve"]);
    }
}

on_both_stores! {
    fn over_http_only_another_approver_of_the_tenant_decides_and_each_approval_runs_once / over_http_only_another_approver_of_the_tenant_decides_and_each_approval_runs_once_postgres (h) {
        ledger(&h);
        require_approval(&h, 600, true);
        let alice = principal(&h, "alice", "acme", WRITER, false);
        let approver = |id: &str, tenant: &str, grants: &[&str]| {
            let mut args = vec!["principal", "add", id, "--tenant", tenant, "--approver", "--json"];
            for g in grants {
                args.extend(["--grant", g]);
            }
            let out = h.run(&args);
            assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
            crate::helpers::stdout_json(&out)["token"].as_str().unwrap().to_string()
        };
        let bob = approver("bob", "acme", &[]);
        let eve = approver("eve", "other", &[]);
        let carol = approver("carol", "acme", WRITER);
        let s = Server::start(&h, &[]);
        let args = json!({"amount": "2.80", "payee": "demo-transit"});
        let with = |extra: Value| {
            let mut a = args.clone();
            a.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            a
        };

        // The caller's own confirm: held, with the id and the card.
        let (st, v) = s.post(TRANSFER, &alice, &with(json!({"confirm": true})));
        assert_eq!((st, v["code"].as_str()), (428, Some("approval_pending")), "{v}");
        assert_eq!(v["preview"]["title"], "Pay demo-transit");
        let id = v["approval_id"].as_str().unwrap().to_string();
        assert!(v["error"].as_str().unwrap().contains(&format!("\"approval_id\": \"{id}\"")), "{v}");

        // Who may see and decide it: not the caller, not another tenant's approver, not a stranger.
        assert_eq!(s.get("/v1/approvals", &alice).0, 403);
        let (st, listed) = s.get("/v1/approvals", &bob);
        assert_eq!(st, 200, "{listed}");
        assert_eq!(listed["pending"][0]["id"], id.as_str(), "{listed}");
        assert_eq!(s.get("/v1/approvals", &eve).1["pending"], json!([]), "another tenant's approvals are not listed");
        let approve = |who: &str, id: &str| s.post(&format!("/v1/approvals/{id}/approve"), who, &json!({}));
        let (st, v) = approve(&alice, &id);
        assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
        assert!(v["error"].as_str().unwrap().contains("--approver"), "{v}");
        assert_eq!(approve(&eve, &id).0, 404, "another tenant's approver finds no such approval");
        assert_eq!(approve(&bob, "ap_../../grants").0, 404);

        // An approver's own call is approved by someone else, never by itself.
        let (_, held) = s.post(TRANSFER, &carol, &args);
        let carols = held["approval_id"].as_str().unwrap().to_string();
        let (st, v) = approve(&carol, &carols);
        assert_eq!(st, 403, "{v}");
        assert!(v["error"].as_str().unwrap().contains("another person"), "{v}");

        // Bob approves; before that the id ran nothing.
        let (st, v) = s.post(TRANSFER, &alice, &with(json!({"approval_id": id})));
        assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
        let (st, v) = approve(&bob, &id);
        assert_eq!(st, 200, "{v}");
        assert_eq!((approve(&bob, &id).0), 409, "a person decides an approval once");

        // Altered, moved to another Principal, then the call itself: once.
        let (st, v) = s.post(TRANSFER, &alice, &json!({"amount": "999.00", "payee": "demo-transit", "approval_id": id}));
        assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
        let (st, v) = s.post(TRANSFER, &carol, &with(json!({"approval_id": id})));
        assert_eq!(st, 403, "{v}");
        assert!(v["error"].as_str().unwrap().contains("made for another caller"), "{v}");
        let (st, v) = s.post(TRANSFER, &alice, &with(json!({"approval_id": id})));
        assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
        let (st, v) = s.post(TRANSFER, &alice, &with(json!({"approval_id": id})));
        assert_eq!(st, 403, "{v}");
        assert!(v["error"].as_str().unwrap().contains("already used"), "{v}");

        // Refused: never runs. Expired: refused, whoever approves it late.
        let (_, held) = s.post(TRANSFER, &alice, &args);
        let second = held["approval_id"].as_str().unwrap().to_string();
        assert_eq!(s.post(&format!("/v1/approvals/{second}/refuse"), &bob, &json!({})).0, 200);
        let (_, v) = s.post(TRANSFER, &alice, &with(json!({"approval_id": second})));
        assert!(v["error"].as_str().unwrap().contains("refused by bob"), "{v}");
        require_approval(&h, 1, true);
        let (_, held) = s.post(TRANSFER, &alice, &args);
        let late = held["approval_id"].as_str().unwrap().to_string();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let (st, v) = approve(&bob, &late);
        assert_eq!(st, 409, "{v}");
        assert!(v["error"].as_str().unwrap().contains("expired"), "{v}");

        // A command outside the setting is untouched; the id on a command without a gate is refused.
        let (st, v) = s.post("/v1/exec/ledger/status", &alice, &json!({"approval_id": id}));
        assert_eq!((st, v["code"].as_str()), (400, Some("invalid_args")), "{v}");

        // One payment; the decisions are audited under the approvers, the run names its approval.
        let paid = payments(&h);
        assert_eq!(paid.len(), 1, "{paid:?}");
        assert_eq!((paid[0]["principal"].as_str(), paid[0]["approval"].as_str()), (Some("alice"), Some(id.as_str())));
        let audit = h.audit_log();
        assert!(
            audit.lines().any(|l| l.contains("\"principal\":\"bob\"") && l.contains("\"decision\":\"approved\"") && l.contains(&id)),
            "{audit}"
        );
    }
}

#[test]
fn the_store_owner_at_the_terminal_is_not_held_and_elicitation_can_be_switched_off() {
    let h = Home::new();
    ledger(&h);
    require_approval(&h, 600, false);
    // The CLI is the store's owner: the spec's confirm gate, unchanged.
    let (code, v) = h.exec("ledger", "transfer", &["amount=2.80", "payee=demo-transit", "confirm=true"]);
    assert_eq!((code, v["ok"].as_bool()), (0, Some(true)), "{v}");
    // With "elicitation": false even a client that can ask its user gets the pending approval, not a question.
    let r = client(&h, "elicit.py", &[]);
    assert_eq!(r["asked"], json!([]), "{r}");
    assert_eq!(r["approved"]["structured"]["code"], "approval_pending", "{r}");
    // `hcpx approve` with no id lists what waits, with the card.
    let out = h.run(&["approve"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ledger.transfer")
            && text.contains("Pay demo-transit")
            && text.contains("hcpx refuse ap_"),
        "{text}"
    );
}

/// Two `hcpx serve` replicas, each with its own local home, on one PostgreSQL store: an approval asked on one is
/// listed and decided on the other, runs once on the first, and is refused as a replay on the second.
#[test]
fn replicas_on_one_database_share_each_approval_and_spend_it_once() {
    if crate::pg::unavailable() {
        return;
    }
    let h = Home::postgres();
    ledger(&h);
    require_approval(&h, 600, true);
    let alice = principal(&h, "alice", "acme", WRITER, false);
    let out = h.run(&["principal", "add", "bob", "--tenant", "acme", "--approver", "--json"]);
    let bob = crate::helpers::stdout_json(&out)["token"].as_str().unwrap().to_string();
    let replica = |name: &str| {
        let home = h.t.path().join(name);
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hcpx"));
        cmd.args(["serve", "--listen", "127.0.0.1:0"])
            .env("HCP_HOME", &home)
            .envs(h.store_env())
            .current_dir(&home);
        Server::launch(cmd)
    };
    let (a, b) = (replica("r1"), replica("r2"));
    let args = json!({"amount": "2.80", "payee": "demo-transit"});
    let (st, held) = a.post(TRANSFER, &alice, &args);
    assert_eq!(st, 428, "{held}");
    let id = held["approval_id"].as_str().unwrap().to_string();
    let (_, listed) = b.get("/v1/approvals", &bob);
    assert_eq!(listed["pending"][0]["id"], id.as_str(), "{listed}");
    assert_eq!(b.post(&format!("/v1/approvals/{id}/approve"), &bob, &json!({})).0, 200);
    let mut with = args.clone();
    with["approval_id"] = json!(id);
    let (st, v) = a.post(TRANSFER, &alice, &with);
    assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
    let (st, v) = b.post(TRANSFER, &alice, &with);
    assert_eq!(st, 403, "{v}");
    assert!(v["error"].as_str().unwrap().contains("already used"), "{v}");
    assert_eq!(payments(&h).len(), 1);
}

/// What person.py saw when the model ran `plan`: the person's questions and each call's answer.
fn person_client(h: &Home, plan: Value, http: Option<(&Server, &str)>) -> Value {
    let plan = plan.to_string();
    match http {
        Some((s, token)) => client(h, "person.py", &[&plan, &format!("http://{}/mcp", s.addr), token]),
        None => client(h, "person.py", &[&plan]),
    }
}

/// The model-facing words of one call's answer: its text and its error.
fn words(r: &Value) -> String {
    format!(
        "{} {}",
        r["text"].as_str().unwrap_or_default(),
        r["structured"]["error"].as_str().unwrap_or_default()
    )
}

/// Where the client can ask its user, the confirm gate is the person's answer (#34.4b): a "no" or a decline is
/// final and never followed by an instruction to add `confirm`, and the model's own `"confirm": true` is asked
/// about like any other call, so it runs only when the person says yes. Over stdio (the client of 2025-11-25 and
/// the SDK's default one of 2026-07-28, and `--single-tool`) and over HTTP.
#[test]
fn a_person_who_says_no_is_not_overruled_by_the_models_confirm() {
    let args = json!({"amount": "2.80", "payee": "demo-transit"});
    let confirmed = json!({"amount": "2.80", "payee": "demo-transit", "confirm": true});
    let plan = |extra: Value| {
        let mut p = json!({ "calls": [args, confirmed, confirmed], "answers": ["no", "decline", "yes"] });
        p.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        p
    };
    for (how, extra, http) in [
        ("stdio", json!({}), false),
        ("stdio, 2026-07-28", json!({"modern": true}), false),
        ("stdio, --single-tool", json!({"single": true}), false),
        ("http", json!({}), true),
    ] {
        let h = Home::new();
        ledger(&h);
        let alice = principal(&h, "alice", "acme", WRITER, false);
        let server = http.then(|| Server::start(&h, &[]));
        let r = person_client(&h, plan(extra), server.as_ref().map(|s| (s, alice.as_str())));
        assert_eq!(r["asked"].as_array().unwrap().len(), 3, "{how}: the person is asked at every call: {r}");
        for (i, said) in ["no", "decline"].iter().enumerate() {
            let out = &r["results"][i];
            assert_eq!(out["structured"]["code"], "confirm_required", "{how}, {said}: {out}");
            let w = words(out);
            assert!(w.contains("nothing ran") && !w.contains("\"confirm\": true"), "{how}, {said}: {w}");
        }
        assert_eq!(r["results"][2]["is_error"], false, "{how}: the person's yes runs it: {r}");
        let paid = payments(&h);
        assert_eq!(paid.len(), 1, "{how}: only the call the person approved ran: {paid:?}");
        assert!(paid[0]["approval"].as_str().is_some_and(|a| a.starts_with("ap_")), "{how}: {paid:?}");
    }
}

/// Under the operator's `human_approval`, a client's answer over HTTP is not an approval (#34.4a) unless the
/// Principal is an approver whose client the operator marked as a person's (`--approver --person`): a writer
/// and an approver without the mark get the pending approval and are never asked, over both protocols. What
/// the model reads names no way to approve it (#34.4c): neither `hcpx approve` nor the approver API.
#[test]
fn over_http_a_callers_own_answer_approves_only_for_an_approver_with_a_persons_client() {
    let h = Home::new();
    ledger(&h);
    require_approval(&h, 600, true);
    let alice = principal(&h, "alice", "acme", WRITER, false);
    let add = |id: &str, extra: &[&str]| {
        let mut a = vec!["principal", "add", id, "--tenant", "acme", "--json"];
        for g in WRITER {
            a.extend(["--grant", g]);
        }
        a.extend(extra);
        let out = h.run(&a);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
        crate::helpers::stdout_json(&out)["token"].as_str().unwrap().to_string()
    };
    let carol = add("carol", &["--approver"]);
    let dana = add("dana", &["--approver", "--person"]);
    let s = Server::start(&h, &[]);
    let confirmed = json!({"amount": "2.80", "payee": "demo-transit", "confirm": true});
    let no_way_in = |w: &str, who: &str| {
        assert!(!w.contains("hcpx approve") && !w.contains("/v1/approvals"), "{who}: {w}");
    };
    for (who, token) in [("alice", &alice), ("carol", &carol)] {
        for modern in [false, true] {
            let plan = json!({ "calls": [confirmed], "answers": ["yes"], "modern": modern });
            let r = person_client(&h, plan, Some((&s, token)));
            assert_eq!(r["asked"], json!([]), "{who}: the answer would not count, so nobody is asked: {r}");
            let out = &r["results"][0];
            assert_eq!(out["structured"]["code"], "approval_pending", "{who}, modern {modern}: {out}");
            no_way_in(&words(out), who);
        }
    }
    assert_eq!(payments(&h).len(), 0, "no caller approved its own payment");
    let (st, v) = s.post(TRANSFER, &alice, &confirmed);
    assert_eq!(st, 428, "{v}");
    no_way_in(v["error"].as_str().unwrap(), "the HTTP API");
    // The operator vouches for dana's client: her answer decides, and a no is final.
    let plan = json!({ "calls": [confirmed, confirmed], "answers": ["no", "yes"] });
    let r = person_client(&h, plan, Some((&s, &dana)));
    assert_eq!(r["asked"].as_array().unwrap().len(), 2, "{r}");
    assert_eq!(r["results"][0]["structured"]["code"], "confirm_required", "{r}");
    assert_eq!(r["results"][1]["is_error"], false, "{r}");
    let paid = payments(&h);
    assert_eq!(paid.len(), 1, "{paid:?}");
    assert_eq!(paid[0]["principal"], "dana", "{paid:?}");
    // `hcpx principal list` says whose client is a person's.
    let listed = String::from_utf8_lossy(&h.run(&["principal", "list"]).stdout).to_string();
    assert!(
        listed.lines().any(|l| l.starts_with("dana ") && l.contains("approver, a person's client")),
        "{listed}"
    );
}
