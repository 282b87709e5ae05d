//! Credentials a composite never holds (issue #36 point 5, docs/egress.md Placeholders, docs/security.md Hosts),
//! through the real `hcpx` and the `test-http` guest (world `hcp:adapter@0.2.0`): a Binding field bound to
//! `api.test` (`binding.inject`) reaches the guest's `credential(handle)` as the call's random placeholder, and
//! hcpx's send hook puts the real value into the declared header or query parameter of requests to that host
//! only. A placeholder sent to another allowed host, in the path, another header or a body is refused with
//! `placeholder`, audited, and reaches no server; an origin echoing the value has its response cut
//! (`credential_echo`). The origins are secrets.rs's loopback HTTPS servers, which record every request head.

use serde_json::{json, Value};
use std::path::PathBuf;

use crate::composite::install_guest_with;
use crate::helpers::Home;
use crate::secrets::{key_of, origin, test_ca, value, Origin};

struct World {
    h: Home,
    api: Origin,
    value: String,
    ca: PathBuf,
}

/// The `test-http` pack with Binding fields `token` (bound to api.test, header authorization), `key` (bound to
/// api.test, query api_key) and `region` (bound to no host); api.test and other.test (the same server) declared
/// and allowed.
fn world() -> World {
    let h = Home::sharing_compiles();
    let ca = test_ca("hcpx composite secrets test ca");
    let api = origin(&ca, &["api.test", "other.test"]);
    let value = value();
    let hosts = [format!("api.test:{}", api.port), format!("other.test:{}", api.port)];
    let id = install_guest_with(&h, "test-http", &["fetch"], None, |f| {
        let text = json!({ "type": "string", "description": "A value" });
        f.surface["verbs"]["fetch"]["args"] = json!({ "type": "object", "properties": {
            "url": text, "method": text, "body": text,
            "headers": { "type": "object", "description": "Request headers" }
        }, "required": ["url"] });
        f.surface["hosts"] = json!(hosts);
        f.surface["binding"] = json!({ "mode": "local", "inject": [
            { "field": "token", "host": hosts[0], "header": "authorization" },
            { "field": "key", "host": hosts[0], "query": "api_key" }
        ] });
    });
    assert_eq!(id, "test-http");
    let key = key_of(&value);
    for (field, v) in [("token", value.as_str()), ("key", key.as_str()), ("region", "eu-west")] {
        let set = h.run_with(&["credential", "set", "test-http", field], &[], Some(v));
        assert_eq!(set.status.code(), Some(0), "{}", String::from_utf8_lossy(&set.stderr));
    }
    let allow = h.run(&["allow-host", "test-http", &hosts[0], &hosts[1], "--json"]);
    assert_eq!(allow.status.code(), Some(0), "{}", String::from_utf8_lossy(&allow.stdout));
    let cfg = json!({ "egress": {
        "hosts": { "api.test": ["127.0.0.1"], "other.test": ["127.0.0.1"] },
        "internal": ["api.test", "other.test"]
    }});
    h.write_store("sandbox.json", &cfg.to_string());
    let ca_file = h.t.join("test-ca.pem");
    std::fs::write(&ca_file, &ca.pem).unwrap();
    World { h, api, value, ca: ca_file }
}

impl World {
    /// `hcpx exec test-http fetch -- WORDS` with hcpx trusting the test CA: (exit code, envelope, stderr).
    fn fetch(&self, words: &[&str]) -> (i32, Value, String) {
        let mut args = vec!["exec", "test-http", "fetch", "--json", "--"];
        args.extend_from_slice(words);
        let out = self.h.run_env(&args, &[("SSL_CERT_FILE", self.ca.to_str().unwrap())]);
        let env: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
        (out.status.code().unwrap_or(-1), env, String::from_utf8_lossy(&out.stderr).into_owned())
    }

    fn url(&self, host: &str, path: &str) -> String {
        format!("url=https://{host}:{}{path}", self.api.port)
    }

    fn heads(&self) -> Vec<String> {
        self.api.heads.lock().unwrap().clone()
    }

    /// The egress rows of the audit log, oldest first.
    fn rows(&self) -> Vec<Value> {
        let out = self.h.run(&["audit", "--egress", "--json"]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["records"].as_array().unwrap().clone()
    }

    /// Nothing hcpx printed or audited holds the real value.
    fn assert_value_nowhere(&self, printed: &str) {
        assert!(!printed.contains(&self.value), "{printed}");
        assert!(!self.h.audit_log().contains(&self.value), "the audit log holds the value");
    }
}

#[test]
fn a_composite_sees_a_placeholder_and_only_its_bound_host_gets_the_real_value() {
    let w = world();
    let (rc, env, stderr) =
        w.fetch(&[&w.url("api.test", "/v1/me"), r#"headers:={"authorization": "Bearer {cred:token}"}"#]);
    assert_eq!(
        (rc, &env["result"]["status"], &env["result"]["body"]),
        (0, &json!(200), &json!("hello")),
        "{env}"
    );
    // What the guest held: a placeholder per host-bound field (fresh per call), the value of the field bound
    // to no host.
    let creds = &env["result"]["credentials"];
    let token = creds["token"].as_str().unwrap();
    assert!(token.starts_with("hcpx-ph-") && token.len() == 40, "{env}");
    assert!(
        creds["key"].as_str().unwrap().starts_with("hcpx-ph-") && creds["key"] != creds["token"],
        "{env}"
    );
    // The unbound field is its value, which the envelope's redaction of credential values hides.
    assert_eq!(creds["region"], "[redacted]", "{env}");
    // What reached the origin: the real value in the declared header, no placeholder.
    let heads = w.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /v1/me "), "{heads:?}");
    assert!(heads[0]
        .to_ascii_lowercase()
        .contains(&format!("authorization: bearer {}", w.value.to_ascii_lowercase())));
    assert!(!heads[0].contains("hcpx-ph-"), "{heads:?}");
    // The query form: the key's placeholder became the real key in api_key, and only there.
    let (rc, env2, stderr2) = w.fetch(&[&w.url("api.test", "/q?x=1&api_key={cred:key}")]);
    assert_eq!((rc, &env2["result"]["status"]), (0, &json!(200)), "{env2}");
    let heads = w.heads();
    let want = format!("GET /q?x=1&api_key={} HTTP/1.1", key_of(&w.value));
    assert!(heads.iter().any(|h| h.starts_with(&want)), "{heads:?}");
    assert!(env2["result"]["credentials"]["token"] != creds["token"], "a placeholder is made per call");
    for r in w.rows() {
        assert_eq!(r["egress"]["refused"], Value::Null, "{r}");
    }
    w.assert_value_nowhere(&format!("{env}{stderr}{env2}{stderr2}"));
    assert!(!env2.to_string().contains(&key_of(&w.value)), "{env2}");
}

#[test]
fn a_composite_placeholder_sent_anywhere_else_is_refused_and_audited() {
    let w = world();
    let bearer = r#"headers:={"authorization": "Bearer {cred:token}"}"#;
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("another allowed host", vec![w.url("other.test", "/v1/me"), bearer.into()], "header authorization"),
        ("the path", vec![w.url("api.test", "/leak/{cred:token}")], "the path"),
        (
            "another header",
            vec![w.url("api.test", "/v1/me"), r#"headers:={"x-leak": "{cred:token}"}"#.into()],
            "header x-leak",
        ),
        ("another query parameter", vec![w.url("api.test", "/q?other={cred:key}")], "query parameter other"),
        (
            "another field's slot",
            vec![w.url("api.test", "/v1/me"), r#"headers:={"authorization": "{cred:key}"}"#.into()],
            "header authorization",
        ),
        (
            "a body",
            vec![w.url("api.test", "/v1/post"), "method=POST".into(), "body=token {cred:token}".into()],
            "the body",
        ),
    ];
    for (i, (what, words, place)) in cases.iter().enumerate() {
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        let (rc, env, stderr) = w.fetch(&words);
        assert_eq!((rc, env["ok"].as_bool()), (1, Some(false)), "{what}: {env}");
        assert!(env["error"].as_str().unwrap_or("").contains("HttpRequestDenied"), "{what}: {env}");
        assert!(
            stderr.contains("(placeholder)") || env.to_string().contains("(placeholder)"),
            "{what}: {stderr} {env}"
        );
        assert!(w.heads().is_empty(), "{what} reached the origin: {:?}", w.heads());
        let rows = w.rows();
        assert_eq!(rows.len(), i + 1, "{what}: {rows:#?}");
        let e = &rows[i]["egress"];
        assert_eq!(e["refused"], "placeholder", "{what}: {e}");
        let reason = e["reason"].as_str().unwrap_or("");
        assert!(reason.contains("binding field") && reason.contains(place), "{what}: {reason}");
        w.assert_value_nowhere(&format!("{env}{stderr}"));
    }
}

#[test]
fn a_composite_never_reads_its_credential_echoed_by_the_origin() {
    let w = world();
    let (rc, env, stderr) =
        w.fetch(&[&w.url("api.test", "/echo"), r#"headers:={"authorization": "Bearer {cred:token}"}"#]);
    // The origin got the value and echoed it; the guest's read of the body failed before those bytes.
    assert!(w.heads().iter().any(|h| h.contains(&w.value)), "{:?}", w.heads());
    assert_eq!((rc, env["ok"].as_bool()), (1, Some(false)), "{env}");
    assert_eq!(env["error"], "incomplete HTTP response", "{env}");
    let rows = w.rows();
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0]["egress"]["refused"], "credential_echo", "{}", rows[0]);
    w.assert_value_nowhere(&format!("{env}{stderr}"));
}

#[test]
fn a_composite_whose_host_bound_field_is_not_stored_is_denied_at_step_5_and_sends_nothing() {
    let w = world();
    let rm = w.h.run(&["credential", "rm", "test-http", "key"]);
    assert_eq!(rm.status.code(), Some(0), "{}", String::from_utf8_lossy(&rm.stderr));
    // The guest would send the token's placeholder to its bound host; the call never gets that far.
    let (rc, env, _) =
        w.fetch(&[&w.url("api.test", "/v1/me"), r#"headers:={"authorization": "Bearer {cred:token}"}"#]);
    assert_ne!(rc, 0, "{env}");
    assert_eq!(env["code"], "binding_failed", "{env}");
    assert!(env["error"].as_str().unwrap().contains("hcpx credential set test-http key"), "{env}");
    assert!(w.heads().is_empty(), "a request reached the origin: {:?}", w.heads());
}
