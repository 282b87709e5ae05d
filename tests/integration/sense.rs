//! Sense (docs/sense.md): upstream pushes of declared triggers, `binding.degraded` from the runtime, delivery
//! only with `sense.announce` and only within a tenant, and replay after the last id seen; through the real
//! `hcpx` and `hcpx serve`.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::helpers::{hcpx_with, stdout_json, Fixture, Home};
use crate::serve::{principal, Server};

/// The demo pack minting `token` from its own family, declaring `item.changed` and `binding.degraded`.
fn sense_pack(h: &Home) {
    let mut f = Fixture::wrap();
    f.surface["binding"] = json!({ "mode": "local", "hub": "local-credential", "family": "demo" });
    f.surface["wrap"]["agent_env"] = json!({ "DEMO_TOKEN": "{{binding.token}}" });
    f.surface["stimulusTriggers"] = json!([{ "ref": "item.changed" }, { "ref": "binding.degraded" }]);
    f.policy["stimuli"] =
        json!({ "item.changed": { "delivery": "announce" }, "binding.degraded": { "delivery": "announce" } });
    h.install(&f, "demo");
}

fn emit(h: &Home, pack: &str, reference: &str, payload: &str) -> (i32, Value) {
    let out = hcpx_with(h.t.path(), &["sense", "emit", pack, reference, "--json"], &[], Some(payload));
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

fn watch(h: &Home, extra: &[&str]) -> (i32, Value) {
    let out = h.run(&[&["sense", "watch", "--json"], extra].concat());
    (out.status.code().unwrap_or(-1), stdout_json(&out))
}

fn ids(v: &Value) -> Vec<u64> {
    v["events"].as_array().unwrap().iter().map(|e| e["id"].as_u64().unwrap()).collect()
}

#[test]
fn sense_emit_and_watch_with_the_grant_and_replay_after_the_last_id() {
    let h = Home::new();
    sense_pack(&h);
    assert_eq!(h.run(&["grant", "sense.announce:demo"]).status.code(), Some(0));
    let (rc, v) = emit(&h, "demo", "item.changed", r#"{"id":"i-1"}"#);
    assert_eq!(rc, 0, "{v}");
    assert_eq!((v["event"]["id"].as_u64(), v["event"]["ref"].as_str()), (Some(1), Some("item.changed")));
    assert_eq!(emit(&h, "demo", "item.changed", r#"{"id":"i-2"}"#).1["event"]["id"], 2);
    let (rc, v) = watch(&h, &[]);
    assert_eq!((rc, ids(&v)), (0, vec![1, 2]), "{v}");
    assert_eq!(v["events"][0]["payload"], json!({ "id": "i-1" }));
    assert_eq!(v["last_id"], 2);
    // A watcher that saw 1 gets only what came after.
    let (_, v) = watch(&h, &["--after", "1", "--pack", "demo"]);
    assert_eq!(ids(&v), vec![2]);
    // A payload that is not JSON is refused before anything is recorded.
    let (rc, v) = emit(&h, "demo", "item.changed", "not json");
    assert_eq!((rc, v["code"].as_str()), (1, Some("invalid_args")), "{v}");
    // Follow mode: reconnecting after 2 gets the replay (none) and then a new event as it is recorded.
    let mut child = follow(&h, &["--after", "1"]);
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let first: Value = serde_json::from_str(&rx.recv_timeout(Duration::from_secs(30)).unwrap()).unwrap();
    assert_eq!(first["id"], 2, "{first}");
    emit(&h, "demo", "item.changed", r#"{"id":"i-3"}"#);
    let next: Value = serde_json::from_str(&rx.recv_timeout(Duration::from_secs(30)).unwrap()).unwrap();
    assert_eq!((next["id"].as_u64(), next["payload"]["id"].as_str()), (Some(3), Some("i-3")), "{next}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn sense_without_the_grant_is_denied_naming_sense_announce() {
    let h = Home::new();
    sense_pack(&h);
    emit(&h, "demo", "item.changed", "{}");
    assert_eq!(h.run(&["grant", "--only", "verb.exec.read:*"]).status.code(), Some(0));
    let (rc, v) = watch(&h, &[]);
    assert_eq!((rc, v["code"].as_str()), (1, Some("denied")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("missing sense.announce"), "{v}");
    assert!(v.get("events").is_none(), "nothing is delivered: {v}");
    let (rc, v) = watch(&h, &["--pack", "demo"]);
    assert_eq!(rc, 1);
    let msg = v["error"].as_str().unwrap();
    assert!(msg.starts_with("denied: missing sense.announce for demo"), "{msg}");
    assert!(msg.contains("hcpx grant sense.announce:demo"), "{msg}");
    let (rc, v) = emit(&h, "demo", "item.changed", "{}");
    assert_eq!((rc, v["code"].as_str()), (1, Some("denied")), "{v}");
    // A grant for another pack delivers nothing of this one, and naming this one is denied.
    assert_eq!(h.run(&["grant", "sense.announce:other"]).status.code(), Some(0));
    let (rc, v) = watch(&h, &[]);
    assert_eq!((rc, ids(&v)), (0, vec![]), "{v}");
    assert_eq!(watch(&h, &["--pack", "demo"]).0, 1);
}

#[test]
fn sense_refuses_undeclared_refs_and_pushes_of_binding_degraded() {
    let h = Home::new();
    sense_pack(&h);
    let (rc, v) = emit(&h, "demo", "item.changd", "{}");
    assert_eq!((rc, v["code"].as_str()), (1, Some("no_policy")), "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(msg.contains("`item.changd`") && msg.contains("did you mean `item.changed`"), "{msg}");
    let (rc, v) = emit(&h, "demo", "binding.degraded", "{}");
    assert_eq!((rc, v["code"].as_str()), (1, Some("denied")), "{v}");
    let (rc, v) = emit(&h, "nosuch", "item.changed", "{}");
    assert_eq!((rc, v["code"].as_str()), (1, Some("unknown_pack")), "{v}");
    assert_eq!(ids(&watch(&h, &[]).1), Vec::<u64>::new(), "nothing was recorded");
}

#[test]
fn removing_a_credential_and_a_failed_mint_announce_binding_degraded() {
    let h = Home::new();
    sense_pack(&h);
    let set = hcpx_with(h.t.path(), &["credential", "set", "demo", "token"], &[], Some("s3cret-value"));
    assert_eq!(set.status.code(), Some(0));
    assert_eq!(h.exec("demo", "list", &[]).0, 0);
    assert_eq!(h.run(&["credential", "rm", "demo", "token"]).status.code(), Some(0));
    let (_, v) = watch(&h, &[]);
    let e = &v["events"][0];
    assert_eq!((e["pack_id"].as_str(), e["ref"].as_str()), (Some("demo"), Some("binding.degraded")), "{v}");
    assert_eq!(e["payload"], json!({ "family": "demo", "reason": "credential_removed", "field": "token" }));
    assert!(!v.to_string().contains("s3cret"), "never the secret: {v}");
    // The next call cannot mint: binding_failed, and one more binding.degraded naming why (once, however many
    // calls fail the same way).
    let (rc, out) = h.exec("demo", "list", &[]);
    assert_eq!((rc, out["code"].as_str()), (1, Some("binding_failed")), "{out}");
    h.exec("demo", "list", &[]);
    let (_, v) = watch(&h, &["--after", "1"]);
    assert_eq!(ids(&v), vec![2], "{v}");
    assert_eq!(
        v["events"][0]["payload"],
        json!({ "family": "demo", "reason": "mint_failed", "cause": "missing_field", "field": "token" })
    );
}

/// Reads a `GET /v1/sense` stream until `n` events arrived or `wait` passed, then drops the connection.
pub(crate) fn sse(
    addr: &str,
    token: &str,
    query: &str,
    last_id: Option<u64>,
    n: usize,
    wait: Duration,
) -> (u16, Vec<Value>) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut head =
        format!("GET /v1/sense{query} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n");
    if let Some(id) = last_id {
        head.push_str(&format!("Last-Event-ID: {id}\r\n"));
    }
    head.push_str("Accept: text/event-stream\r\n\r\n");
    s.write_all(head.as_bytes()).unwrap();
    let start = Instant::now();
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let events = |raw: &[u8]| -> Vec<Value> {
        String::from_utf8_lossy(raw)
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    };
    while start.elapsed() < wait && events(&raw).len() < n {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => raw.extend_from_slice(&buf[..k]),
            Err(_) => {}
        }
        // The response ended (the last chunk of a chunked body); the connection itself may stay open.
        if raw.ends_with(b"\r\n0\r\n\r\n") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&raw);
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, events(&raw))
}

#[test]
fn sense_over_http_replays_after_last_event_id_and_stays_within_the_tenant() {
    let h = Home::new();
    sense_pack(&h);
    let alice = principal(&h, "alice", "acme", &["sense.announce:demo"], false);
    let bob = principal(&h, "bob", "beta", &["sense.announce:*"], false);
    let carol = principal(&h, "carol", "acme", &["verb.exec.read:*"], false);
    let s = Server::start(&h, &[]);

    let (st, v) = s.post("/v1/sense/demo/item.changed", &alice, &json!({ "id": "i-1" }));
    assert_eq!((st, v["event"]["id"].as_u64()), (200, Some(1)), "{v}");
    let (st, v) = s.post("/v1/sense/demo/item.changed", &alice, &json!({ "id": "i-2" }));
    assert_eq!((st, v["event"]["principal"].as_str()), (200, Some("alice")), "{v}");
    let (st, v) = s.post("/v1/sense/demo/nope", &alice, &json!({}));
    assert_eq!((st, v["code"].as_str()), (404, Some("no_policy")), "{v}");

    // The whole log, then a reconnect with the last id seen: only what came after.
    let (st, all) = sse(&s.addr, &alice, "", None, 2, Duration::from_secs(20));
    assert_eq!((st, all.len()), (200, 2), "{all:?}");
    let (_, rest) = sse(&s.addr, &alice, "", Some(1), 1, Duration::from_secs(20));
    assert_eq!(rest.iter().map(|e| e["id"].clone()).collect::<Vec<_>>(), [json!(2)]);
    let (_, rest) = sse(&s.addr, &alice, "?after=1&pack=demo", None, 1, Duration::from_secs(20));
    assert_eq!(rest[0]["payload"], json!({ "id": "i-2" }));

    // Tenant beta: never acme's events, though bob holds sense.announce for every pack; its own count from 1.
    let (st, none) = sse(&s.addr, &bob, "", None, 1, Duration::from_secs(2));
    assert_eq!((st, none.len()), (200, 0), "{none:?}");
    let (_, v) = s.post("/v1/sense/demo/item.changed", &bob, &json!({ "id": "b-1" }));
    assert_eq!(v["event"]["id"], 1, "{v}");
    let (_, mine) = sse(&s.addr, &bob, "", None, 3, Duration::from_secs(3));
    assert_eq!(mine.iter().map(|e| e["payload"]["id"].clone()).collect::<Vec<_>>(), [json!("b-1")]);

    // Without sense.announce: refused before anything streams, naming the capability; a push too.
    let (st, _, v) = s.call("GET", "/v1/sense", Some(&carol), None);
    assert_eq!((st, v["code"].as_str()), (403, Some("denied")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("missing sense.announce for any pack"), "{v}");
    let (st, _, v) = s.call("GET", "/v1/sense?pack=demo", Some(&carol), None);
    assert!(v["error"].as_str().unwrap().starts_with("denied: missing sense.announce for demo"), "{st} {v}");
    let (st, v) = s.post("/v1/sense/demo/item.changed", &carol, &json!({}));
    assert_eq!(st, 403, "{v}");
}

#[test]
fn an_open_stream_gets_new_events_as_they_are_recorded() {
    let h = Home::new();
    sense_pack(&h);
    let alice = principal(&h, "alice", "acme", &["sense.announce:demo"], false);
    let s = Server::start(&h, &[]);
    let addr = s.addr.clone();
    let token = alice.clone();
    let reader = std::thread::spawn(move || sse(&addr, &token, "", None, 1, Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(500));
    let (st, _) = s.post("/v1/sense/demo/item.changed", &alice, &json!({ "id": "live" }));
    assert_eq!(st, 200);
    let (_, got) = reader.join().unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["payload"]["id"], "live");
}

#[test]
fn an_open_stream_ends_when_its_principal_is_removed() {
    let h = Home::new();
    sense_pack(&h);
    let alice = principal(&h, "alice", "acme", &["sense.announce:demo"], false);
    let feeder = principal(&h, "feeder", "acme", &["sense.announce:demo"], false);
    let s = Server::start(&h, &[]);
    let (addr, token) = (s.addr.clone(), alice.clone());
    let wait = Duration::from_secs(20);
    let reader = std::thread::spawn(move || {
        let started = Instant::now();
        let got = sse(&addr, &token, "", None, 2, wait);
        (got, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(s.post("/v1/sense/demo/item.changed", &feeder, &json!({ "n": 1 })).0, 200);
    std::thread::sleep(Duration::from_millis(500));
    // Alice's token is taken back while her stream is open: nothing more reaches her, and the stream ends.
    assert!(h.run(&["principal", "rm", "alice"]).status.success());
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(s.post("/v1/sense/demo/item.changed", &feeder, &json!({ "n": 2 })).0, 200);
    let ((status, got), took) = reader.join().unwrap();
    assert_eq!(status, 200);
    assert_eq!(got.iter().map(|e| e["payload"]["n"].clone()).collect::<Vec<_>>(), [json!(1)], "{got:?}");
    assert!(took < wait, "the stream of a removed Principal stayed open");
}

#[test]
fn a_following_watch_ends_when_its_grant_is_taken_back() {
    let h = Home::new();
    sense_pack(&h);
    let mut child = follow(&h, &[]);
    std::thread::sleep(Duration::from_millis(500));
    // The local Principal's grants now hold no sense.announce.
    assert_eq!(h.run(&["grant", "--only", "verb.exec.read:*"]).status.code(), Some(0));
    let started = Instant::now();
    let ended = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status = ended.expect("the watch went on after its grant was taken back");
    assert_eq!(status.code(), Some(1));
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert!(out.contains("missing sense.announce"), "{out}");
}

/// `hcpx sense watch --follow --json` on `h`'s store, its stdout piped.
fn follow(h: &Home, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_hcpx"))
        .args(["sense", "watch", "--follow", "--json"])
        .args(extra)
        .env("HCP_HOME", h.store())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

crate::serve::on_both_stores! {
    /// Issue #24 point 6: a push (through the CLI and HTTP, recorded or refused) and a refused watch are audit
    /// lines with the invoker, the Principal and the tenant, in the chain `hcpx audit verify` walks.
    fn sense_pushes_and_refused_watches_are_audited_in_the_chain / sense_pushes_and_refused_watches_are_audited_in_the_chain_postgres (h) {
        sense_pack(&h);
        let alice = principal(&h, "alice", "acme", &["sense.announce:demo"], false);
        let carol = principal(&h, "carol", "acme", &["verb.exec.read:*"], false);
        let s = Server::start(&h, &[]);
        let (st, v) = s.post("/v1/sense/demo/item.changed", &alice, &json!({ "id": "i-1" }));
        assert_eq!(st, 200, "{v}");
        let (st, _) = s.post("/v1/sense/demo/item.changed", &carol, &json!({ "id": "c-1" }));
        assert_eq!(st, 403);
        let (st, _, _) = s.call("GET", "/v1/sense?pack=demo", Some(&carol), None);
        assert_eq!(st, 403);
        // The local user: a push with the grant, then a watch without it.
        assert_eq!(h.run(&["grant", "sense.announce:demo"]).status.code(), Some(0));
        let out = h.run_with(&["sense", "emit", "demo", "item.changed", "--json"], &[], Some(r#"{"id":"l-1"}"#));
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
        h.write_store("grants.json", "[]");
        let out = h.run(&["sense", "watch", "--json"]);
        assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));

        let rows: Vec<Value> = h.audit_log().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let sense: Vec<(String, String, String, String, String, bool, String)> = rows
            .iter()
            .filter(|r| r["action"].is_string())
            .map(|r| {
                let s = |k: &str| r[k].as_str().unwrap_or("").to_string();
                (s("action"), s("invoker"), s("principal"), s("tenant"), s("pack_id"), r["ok"].as_bool().unwrap(), s("code"))
            })
            .collect();
        let user = sense.iter().find(|r| r.1 == "cli").map(|r| r.2.clone()).unwrap_or_default();
        let want = |a: &str, i: &str, p: &str, t: &str, ok: bool, code: &str| {
            (a.to_string(), i.to_string(), p.to_string(), t.to_string(), "demo".to_string(), ok, code.to_string())
        };
        for row in [
            want("sense.emit", "http", "alice", "acme", true, ""),
            want("sense.emit", "http", "carol", "acme", false, "denied"),
            want("sense.watch", "http", "carol", "acme", false, "denied"),
            want("sense.emit", "cli", &user, "local", true, ""),
        ] {
            assert!(sense.contains(&row), "no audit line {row:?} in {sense:?}");
        }
        // The CLI watch refused for any pack.
        assert!(
            sense.iter().any(|r| r.0 == "sense.watch" && r.1 == "cli" && r.3 == "local" && r.4 == "*" && !r.5),
            "{sense:?}"
        );
        // Each in the chain: verify walks every line.
        let out = h.run(&["audit", "verify", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    }
}
