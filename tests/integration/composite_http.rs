//! A composite's outgoing HTTP (issue #36 point 2, docs/egress.md A composite's HTTP, docs/security.md Hosts),
//! through the real `hcpx`: the `test-http` guest (world `hcp:adapter@0.2.0`) sends requests through
//! `wasi:http/outgoing-handler` to the loopback servers of egress_server.rs. The hcpx process trusts their test
//! CA through `SSL_CERT_FILE`; `sandbox.json` `egress` maps the test names to 127.0.0.1 (and `meta.test` to the
//! cloud metadata address, which is never connected to). An allowed request gets its answer; every other way out
//! is refused with the `error-code` the guest reads, reaches no server, and is an audit row like a wrap's.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::atomic::Ordering;

use crate::composite::install_guest_with;
use crate::egress_server::{servers, Servers, BIG};
use crate::helpers::Home;

/// A home with the `web` pack (the test-http guest) and the servers it may or may not reach.
pub(crate) struct Web {
    pub(crate) h: Home,
    pub(crate) s: Servers,
    pub(crate) ca: PathBuf,
}

/// The pack declares api.test, private.test, meta.test and declared.test on the TLS port and web.test over
/// plain http (none of them with `hosts`: `declared: false`); the operator allows all but declared.test.
pub(crate) fn web(declared: bool) -> Web {
    let h = Home::sharing_compiles();
    let s = servers();
    let ca = h.t.join("ca.pem");
    std::fs::write(&ca, &s.ca_pem).unwrap();
    let tls = |name: &str| format!("{name}:{}", s.tls);
    let plain = format!("http://web.test:{}", s.web);
    let hosts = [tls("api.test"), tls("private.test"), tls("meta.test"), plain.clone(), tls("declared.test")];
    install_web(&h, if declared { &hosts[..] } else { &[] });
    if declared {
        let out = h.run(&["allow-host", "test-http", &hosts[0], &hosts[1], &hosts[2], &hosts[3], "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    }
    let cfg = json!({ "egress": {
        "hosts": {
            "api.test": ["127.0.0.1"],
            "web.test": ["127.0.0.1"],
            "other.test": ["127.0.0.1"],
            "declared.test": ["127.0.0.1"],
            "private.test": ["127.0.0.1"],
            "meta.test": ["169.254.169.254"]
        },
        "internal": ["api.test", "web.test", "other.test", "declared.test", "meta.test"]
    }});
    h.write_store("sandbox.json", &cfg.to_string());
    Web { h, s, ca }
}

/// Installs and activates the `test-http` pack declaring `hosts`: `fetch` and `repeat` with their arguments.
fn install_web(h: &Home, hosts: &[String]) {
    let id = install_guest_with(h, "test-http", &["fetch", "repeat"], None, |f| {
        let text = json!({ "type": "string", "description": "A value" });
        f.surface["verbs"]["fetch"]["args"] = json!({ "type": "object", "properties": {
            "url": text, "method": text,
            "follow": { "type": "boolean", "description": "Follow one redirect" },
            "body_bytes": { "type": "integer", "description": "Send this many bytes" }
        }, "required": ["url"] });
        f.surface["verbs"]["repeat"]["args"] = json!({ "type": "object", "properties": {
            "url": text, "times": { "type": "integer", "description": "How many GETs" }
        }, "required": ["url", "times"] });
        if !hosts.is_empty() {
            f.surface["hosts"] = json!(hosts);
        }
    });
    assert_eq!(id, "test-http");
}

impl Web {
    /// `hcpx exec test-http VERB -- WORDS` with the test CA trusted: (exit code, envelope).
    fn exec(&self, verb: &str, words: &[&str]) -> (i32, Value) {
        self.h.exec_env("test-http", verb, words, &[("SSL_CERT_FILE", self.ca.to_str().unwrap())])
    }

    /// A `fetch` of `url` that the host refused: the error code the guest read.
    fn refused(&self, url: &str) -> String {
        let (rc, env) = self.exec("fetch", &[&format!("url={url}")]);
        assert_eq!((rc, env["ok"].as_bool()), (1, Some(false)), "{url}: {env}");
        env["error"].as_str().unwrap_or_default().to_string()
    }

    /// The egress rows of the audit log, oldest first.
    fn rows(&self) -> Vec<Value> {
        let out = self.h.run(&["audit", "--egress", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["records"].as_array().unwrap().clone()
    }

    /// The one egress row of the last call, asserting it is this pack's and refused as `class`.
    fn only_row(&self, class: &str) -> Value {
        let rows = self.rows();
        assert_eq!(rows.len(), 1, "{rows:#?}");
        let r = &rows[0];
        assert_eq!(
            (r["pack_id"].as_str(), r["verb_key"].as_str()),
            (Some("test-http"), Some("fetch")),
            "{r}"
        );
        assert_eq!(r["egress"]["refused"].as_str().unwrap_or("allowed"), class, "{r}");
        assert_eq!(r["ok"], class == "allowed", "{r}");
        r["egress"].clone()
    }

    fn hits(&self) -> (usize, usize) {
        (self.s.tls_hits.load(Ordering::SeqCst), self.s.web_hits.load(Ordering::SeqCst))
    }
}

#[test]
fn a_composite_reaches_an_allowed_host_and_each_request_is_an_audit_row() {
    let w = web(true);
    let (rc, env) = w.exec("fetch", &[&format!("url=https://api.test:{}/", w.s.tls)]);
    assert_eq!((rc, &env["result"]), (0, &json!({ "status": 200, "body": "hello over tls" })), "{env}");
    let e = w.only_row("allowed");
    assert_eq!(
        (e["method"].as_str(), e["status"].as_u64(), e["scheme"].as_str(), e["host"].as_str()),
        (Some("GET"), Some(200), Some("https"), Some("api.test")),
        "{e}"
    );
    assert_eq!(
        (e["port"].as_u64(), &e["rule"]),
        (Some(w.s.tls as u64), &json!(format!("https://api.test:{}", w.s.tls)))
    );
    assert_eq!(e["bytes_down"].as_u64(), Some("hello over tls".len() as u64), "{e}");
    let (rc, env) = w.exec("fetch", &[&format!("url=http://web.test:{}/", w.s.web)]);
    let body = format!("hello plain, host web.test:{}", w.s.web);
    assert_eq!((rc, &env["result"]), (0, &json!({ "status": 200, "body": body })), "{env}");
    assert_eq!(w.hits(), (1, 1));
    let text = String::from_utf8_lossy(&w.h.run(&["audit", "--egress"]).stdout).into_owned();
    assert!(
        text.contains(&format!("egress GET http://web.test:{0} 200 allowed by http://web.test:{0}", w.s.web)),
        "{text}"
    );
}

#[test]
fn a_composite_cannot_reach_a_host_no_rule_names() {
    let w = web(true);
    // other.test: the certificate covers it and it resolves to the server, but the pack never declared it.
    assert_eq!(w.refused(&format!("https://other.test:{}/", w.s.tls)), "ErrorCode::HttpRequestDenied");
    let e = w.only_row("not_allowed");
    assert!(e["reason"].as_str().is_some_and(|r| r.contains("no rule names host other.test")), "{e}");
    assert_eq!((e.get("rule"), e.get("status")), (None, None), "{e}");
    assert_eq!(w.hits(), (0, 0));
}

#[test]
fn a_composite_cannot_reach_a_host_it_declared_but_the_operator_did_not_allow() {
    let w = web(true);
    assert_eq!(w.refused(&format!("https://declared.test:{}/", w.s.tls)), "ErrorCode::HttpRequestDenied");
    w.only_row("not_allowed");
    assert_eq!(w.hits(), (0, 0));
}

#[test]
fn a_composite_cannot_use_an_ip_literal_another_port_or_another_scheme() {
    let w = web(true);
    let (tls, plain) = (w.s.tls, w.s.web);
    assert_eq!(w.refused(&format!("https://127.0.0.1:{tls}/")), "ErrorCode::DestinationIpProhibited");
    w.only_row("ip_literal");
    assert_eq!(w.refused(&format!("https://api.test:{plain}/")), "ErrorCode::HttpRequestDenied");
    let rows = w.rows();
    let e = &rows[1]["egress"];
    assert!(
        e["reason"].as_str().is_some_and(|r| r.contains(&format!("allows port {tls}, not {plain}"))),
        "{e}"
    );
    assert_eq!(w.refused(&format!("http://api.test:{tls}/")), "ErrorCode::HttpRequestDenied");
    let rows = w.rows();
    let e = &rows[2]["egress"];
    assert!(e["reason"].as_str().is_some_and(|r| r.contains("allows https, not http")), "{e}");
    assert_eq!(w.hits(), (0, 0));
}

#[test]
fn a_composite_redirected_to_a_host_not_allowed_reaches_nothing_more() {
    let w = web(true);
    let (rc, env) = w.exec("fetch", &[&format!("url=https://api.test:{}/redirect", w.s.tls), "follow:=true"]);
    assert_eq!((rc, env["ok"].as_bool()), (1, Some(false)), "{env}");
    let want = format!("redirect to https://other.test:{}/: ErrorCode::HttpRequestDenied", w.s.tls);
    assert_eq!(env["error"].as_str(), Some(want.as_str()), "{env}");
    let rows = w.rows();
    assert_eq!(rows.len(), 2, "{rows:#?}");
    assert_eq!((rows[0]["egress"]["status"].as_u64(), rows[0]["ok"].as_bool()), (Some(302), Some(true)));
    assert_eq!(rows[1]["egress"]["refused"].as_str(), Some("not_allowed"), "{rows:#?}");
    assert_eq!(w.hits(), (1, 0));
}

#[test]
fn a_composite_cannot_reach_a_name_that_resolves_to_loopback_or_metadata() {
    let w = web(true);
    // Declared and allowed, but 127.0.0.1 is loopback and the operator did not mark private.test internal.
    assert_eq!(
        w.refused(&format!("https://private.test:{}/", w.s.tls)),
        "ErrorCode::DestinationIpProhibited"
    );
    let e = w.only_row("private_address");
    assert_eq!(e["rule"], format!("https://private.test:{}", w.s.tls), "{e}");
    assert!(e["reason"].as_str().is_some_and(|r| r.contains("127.0.0.1 (loopback)")), "{e}");
    // Internal, yet the metadata address is never reachable (and nothing connects to it).
    assert_eq!(w.refused(&format!("https://meta.test:{}/", w.s.tls)), "ErrorCode::DestinationIpProhibited");
    let rows = w.rows();
    let e = &rows[1]["egress"];
    assert_eq!(e["refused"].as_str(), Some("private_address"), "{e}");
    assert!(e["reason"].as_str().is_some_and(|r| r.contains("169.254.169.254 (cloud metadata)")), "{e}");
    assert_eq!(w.hits(), (0, 0));
}

#[test]
fn a_composite_makes_at_most_32_requests_a_call() {
    let w = web(true);
    let url = format!("url=http://web.test:{}/", w.s.web);
    let (rc, env) = w.exec("repeat", &[&url, "times:=33"]);
    assert_eq!(
        (rc, env["error"].as_str()),
        (1, Some("request 33: ErrorCode::ConnectionLimitReached")),
        "{env}"
    );
    let rows = w.rows();
    assert_eq!(rows.len(), 33, "{rows:#?}");
    assert!(rows[..32].iter().all(|r| r["egress"].get("refused").is_none()), "{rows:#?}");
    let last = &rows[32]["egress"];
    assert_eq!(last["refused"].as_str(), Some("limit"), "{last}");
    assert_eq!(w.hits(), (0, 32));
    // The 33 rows are written in one append (one sync a call): each is chained to the one before, and the head
    // counts them all.
    let out = w.h.run(&["audit", "verify", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), v["ok"].clone(), v["lines"].clone()),
        (Some(0), json!(true), json!(33)),
        "{v}"
    );
}

#[test]
fn a_composite_reads_at_most_4_mib_of_a_response() {
    let w = web(true);
    let error = w.refused(&format!("https://api.test:{}/big", w.s.tls));
    assert_eq!(error, "HTTP response body size exceeds limit: 4194304 bytes");
    let e = w.only_row("limit");
    assert_eq!(e["status"].as_u64(), Some(200), "{e}");
    let down = e["bytes_down"].as_u64().unwrap();
    assert!(down > 4 << 20 && down < BIG as u64, "{e}");
}

#[test]
fn a_composite_sends_at_most_1_mib_of_a_request_body() {
    let w = web(true);
    w.h.write_store("sandbox.json", r#"{ "timeout_ms": 10000 }"#);
    let url = format!("url=https://api.test:{}/sink", w.s.tls);
    let (rc, env) = w.exec("fetch", &[&url, "method=POST", "body_bytes:=2097152"]);
    assert_eq!(
        (rc, env["error"].as_str()),
        (1, Some("ErrorCode::HttpRequestBodySize(Some(1048576))")),
        "{env}"
    );
    let e = w.only_row("limit");
    assert!(e["reason"].as_str().is_some_and(|r| r.contains("request body passed 1048576 bytes")), "{e}");
    let up = e["bytes_up"].as_u64().unwrap();
    assert!(up > 1 << 20 && up < 2 << 20, "{e}");
}

#[test]
fn a_composites_request_ends_with_the_calls_deadline() {
    let w = web(true);
    // The server answers after 3 s; the call may take 1.5 s (room to start the request on a busy machine).
    w.h.write_store("sandbox.json", r#"{ "timeout_ms": 1500 }"#);
    let started = std::time::Instant::now();
    let (rc, env) = w.exec("fetch", &[&format!("url=https://api.test:{}/slow", w.s.tls)]);
    assert!(started.elapsed() < std::time::Duration::from_millis(2900), "{:?}", started.elapsed());
    let e = w.only_row("limit");
    let reason = e["reason"].as_str().unwrap_or_default();
    // Two timers end at the deadline and either may fire first: the call's own (the call is a `timeout`, the
    // request dropped with it), or the request's wait for its first byte, which is held to the call's deadline
    // (the guest reads `http-response-timeout` and fails the call just before the deadline would have). On a busy
    // machine both fire: the request's wait ends first (its row says so) and the call's deadline passes before the
    // guest has turned that into its exit, so the call is a `timeout` whose row names the request's wait.
    match env["code"].as_str() {
        Some("timeout") => {
            assert!(
                reason.contains("the call ended before the response arrived")
                    || reason.contains("sent no response within"),
                "{e}"
            );
        }
        Some("exit_nonzero") => {
            assert_eq!(env["error"].as_str(), Some("ErrorCode::HttpResponseTimeout"), "{env}");
            assert!(reason.contains("sent no response within"), "{e}");
        }
        _ => panic!("the call neither timed out nor saw its request time out: {env}"),
    }
    assert_eq!(rc, 1, "{env}");
}

#[test]
fn a_composite_whose_pack_declares_no_hosts_reaches_nothing() {
    let w = web(false);
    assert_eq!(w.refused(&format!("https://api.test:{}/", w.s.tls)), "ErrorCode::HttpRequestDenied");
    let e = w.only_row("not_allowed");
    let fix = format!("may reach no host; declare api.test:{0} in the pack's hosts (surface.json) and have the operator allow it: hcpx allow-host test-http api.test:{0}", w.s.tls);
    assert!(e["reason"].as_str().is_some_and(|r| r.contains(&fix)), "{e}");
    assert_eq!(w.hits(), (0, 0));
}

#[test]
fn a_component_built_for_the_0_1_world_still_runs() {
    // The example component is built for hcp:adapter@0.1.0 (wit/0.1.0/), before wasi:http.
    let wasm = std::fs::read(crate::helpers::repo().join("packs/transit-composite/adapter.wasm")).unwrap();
    let text = String::from_utf8_lossy(&wasm);
    assert!(text.contains("hcp:adapter/types@0.1.0") && !text.contains("wasi:http"), "not a 0.1.0 component");
    let h = Home::sharing_compiles();
    let out = h.run(&[
        "install",
        crate::helpers::repo().join("packs/transit-composite").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    let (rc, env) = h.exec("transit-composite", "plan", &["A", "B"]);
    assert_eq!((rc, env["ok"].as_bool()), (0, Some(true)), "{env}");
}

/// One sample of the exposition (0 when the series is absent).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map_or(0.0, |v| v.trim().parse().unwrap())
}

#[test]
fn a_served_composites_requests_are_its_tenants_rows_and_counted() {
    let w = web(true);
    let bob = crate::serve::principal(&w.h, "bob", "acme", crate::serve::ALL, false);
    let ops = crate::serve::principal(&w.h, "ops", "local", &[], true);
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", w.h.store())
        .env("SSL_CERT_FILE", &w.ca)
        .envs(w.h.store_env())
        .current_dir(w.h.t.path());
    let server = crate::serve::Server::launch(cmd);
    let scrape = || {
        let (st, _, text) = crate::serve::request_raw(&server.addr, "GET", "/metrics", Some(&ops), None, &[]);
        assert_eq!(st, 200, "{text}");
        text
    };
    let before = scrape();
    let (status, v) = server.post(
        "/v1/exec/test-http/fetch",
        &bob,
        &json!({ "url": format!("https://api.test:{}/", w.s.tls) }),
    );
    assert_eq!((status, &v["result"]["body"]), (200, &json!("hello over tls")), "{v}");
    let (status, v) = server.post(
        "/v1/exec/test-http/fetch",
        &bob,
        &json!({ "url": format!("https://other.test:{}/", w.s.tls) }),
    );
    assert_eq!(
        (status, v["ok"].as_bool(), v["code"].as_str()),
        (502, Some(false), Some("exit_nonzero")),
        "{v}"
    );
    let after = scrape();
    for class in ["allowed", "not_allowed"] {
        let k = format!("hcp_egress_requests_total{{pack=\"test-http\",scheme=\"https\",class=\"{class}\"}}");
        assert_eq!(sample(&after, &k) - sample(&before, &k), 1.0, "{k}:\n{after}");
    }
    let down = "hcp_egress_bytes_total{pack=\"test-http\",direction=\"down\"}";
    assert_eq!(sample(&after, down) - sample(&before, down), "hello over tls".len() as f64, "{after}");
    let (status, v) = server.get("/v1/audit", &bob);
    assert_eq!(status, 200, "{v}");
    let records = v["records"].as_array().unwrap_or_else(|| panic!("{v}"));
    let egress: Vec<&Value> = records.iter().filter(|r| r["egress"].is_object()).collect();
    assert_eq!(egress.len(), 2, "{v}");
    for r in egress {
        assert_eq!((r["tenant"].as_str(), r["principal"].as_str()), (Some("acme"), Some("bob")), "{r}");
        assert_eq!((r["invoker"].as_str(), r["pack_id"].as_str()), (Some("http"), Some("test-http")), "{r}");
    }
}

/// DNS rebinding against a composite, through hcpx's real resolver (`getaddrinfo`) in a network namespace of
/// its own with a scripted DNS server on loopback (dns.rs; no packet leaves the machine), as the wrap's test
/// does (escape_rebind.rs): `rebind.test` answers 1.2.3.4 (public, allowed) and then 127.0.0.1; `pin.test`
/// (internal) 127.0.0.2 and then 127.0.0.1, where two servers listen on one port. The first request to
/// rebind.test connects to 1.2.3.4 (unroutable here: `connect_failed` naming it), the second is refused for
/// 127.0.0.1 (`private_address`); pin.test's request lands at 127.0.0.2; 127.0.0.1 sees nothing, and each
/// request looks its name up once: hcpx connects to the address it checked.
#[test]
fn a_composites_request_reaches_only_the_address_it_checked() {
    use crate::dns::{isolated, Responder};
    use crate::escape_egress::{entries, plain};
    use std::net::{Ipv4Addr, TcpListener};
    let Some(_ns) = isolated("composite_http::a_composites_request_reaches_only_the_address_it_checked")
    else {
        return;
    };
    let loopback = Ipv4Addr::new(127, 0, 0, 1);
    let target = TcpListener::bind((loopback, 0)).unwrap();
    let port = target.local_addr().unwrap().port();
    let pinned = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 2), port)).unwrap();
    let (target, pinned) = (plain(target), plain(pinned));
    let dns = Responder::start(&[
        ("rebind.test", &[&[Ipv4Addr::new(1, 2, 3, 4)], &[loopback]]),
        ("pin.test", &[&[Ipv4Addr::new(127, 0, 0, 2)], &[loopback]]),
    ]);
    let h = Home::new();
    let hosts = [format!("rebind.test:{port}"), format!("http://pin.test:{port}")];
    install_web(&h, &hosts);
    let out = h.run(&["allow-host", "test-http", &hosts[0], &hosts[1], "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    h.write_store("sandbox.json", &json!({ "egress": { "internal": ["pin.test"] } }).to_string());
    let fetch = |url: String| h.exec("test-http", "fetch", &[&format!("url={url}")]).1;
    let first = fetch(format!("https://rebind.test:{port}/"));
    let second = fetch(format!("https://rebind.test:{port}/"));
    let pin = fetch(format!("http://pin.test:{port}/"));
    let seen =
        format!("{first}\n{second}\n{pin}\nqueries: {:?}\n127.0.0.1: {:?}", dns.queries(), entries(&target));
    assert_eq!(first["error"].as_str(), Some("ErrorCode::ConnectionRefused"), "{seen}");
    assert_eq!(second["error"].as_str(), Some("ErrorCode::DestinationIpProhibited"), "{seen}");
    let body = format!("hello plain from 127.0.0.2:{port}");
    assert_eq!(pin["result"], json!({ "status": 200, "body": body }), "{seen}");
    assert_eq!(entries(&target), Vec::<String>::new(), "{seen}");
    assert_eq!(entries(&pinned), ["accept", "- GET /"], "{seen}");
    assert_eq!((dns.asked("rebind.test", "A"), dns.asked("pin.test", "A")), (2, 1), "{seen}");
    let out = h.run(&["audit", "--egress", "--json"]);
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows["records"].as_array().unwrap();
    let row = |i: usize| {
        let e = &rows[i]["egress"];
        (
            e["refused"].as_str().unwrap_or("allowed").to_string(),
            e["reason"].as_str().unwrap_or("").to_string(),
        )
    };
    assert_eq!(rows.len(), 3, "{seen}");
    assert!(row(0).0 == "connect_failed" && row(0).1.contains("1.2.3.4"), "{:?}", row(0));
    assert!(row(1).0 == "private_address" && row(1).1.contains("127.0.0.1"), "{:?}", row(1));
    assert_eq!(row(2).0, "allowed", "{seen}");
}
