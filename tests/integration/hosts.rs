//! Hosts in the pack, allowed by the operator (docs/security.md, Hosts), through the real `hcpx`: lint refuses
//! a bad entry with its own kind, `allow-host` / `disallow-host` edit `sandbox.json` on both stores (for every
//! tenant or one) and only with hosts the pack declares, `check` and `doctor` show them (and a wrap asking for
//! `inet` as reaching anywhere), an update that adds a host names it, and a command gets a socket only for its
//! own allowed hosts, which reaches the egress proxy only (tests/integration/egress.rs proves the rest).

use serde_json::{json, Value};
use std::time::Duration;

use crate::escape::{evil_with, go, home_if, said};
use crate::helpers::{stdout_json, Fixture, Home};

/// `hcpx ARGS --json` in `h`, asserting the exit code; the JSON document.
fn run(h: &Home, args: &[&str], code: i32) -> Value {
    let out = h.run(&[args, &["--json"]].concat());
    assert_eq!(
        out.status.code(),
        Some(code),
        "hcpx {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout_json(&out)
}

/// The wrap fixture declaring `api.example.com` and `*.cdn.example.com` for every command, and
/// `http://admin.example.com:8080` for `remove` alone.
fn with_hosts() -> Fixture {
    let mut f = Fixture::wrap();
    f.surface["hosts"] = json!(["api.example.com", "*.cdn.example.com"]);
    f.surface["verbs"]["remove"]["hosts"] = json!(["http://admin.example.com:8080"]);
    f
}

/// The hosts of `packs.demo` in `sandbox.json`, read back through `hcpx check`'s view of them.
fn allowed(h: &Home, dir: &std::path::Path) -> Value {
    let out = h.run(&["check", dir.to_str().unwrap(), "--no-eval", "--json"]);
    stdout_json(&out)["network"].clone()
}

#[test]
fn lint_refuses_each_bad_host_with_its_own_kind_and_pointer() {
    let h = Home::new();
    let mut f = Fixture::wrap();
    f.surface["hosts"] = json!([
        "api.example.com",
        "10.0.0.1",
        "api.example.com/v1",
        "api.example.com:70000",
        "api.*.example.com"
    ]);
    f.surface["verbs"]["list"]["hosts"] = json!(["user@api.example.com", "[::1]"]);
    let dir = f.write(h.t.path());
    let out = h.run(&["lint", dir.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = stdout_json(&out);
    let got = crate::helpers::issue_pointers(&v);
    let want = [
        ("host_ip_literal", "/hosts/1"),
        ("host_not_bare", "/hosts/2"),
        ("host_port_range", "/hosts/3"),
        ("host_malformed", "/hosts/4"),
        ("host_not_bare", "/verbs/list/hosts/0"),
        ("host_ip_literal", "/verbs/list/hosts/1"),
    ];
    for (kind, ptr) in want {
        assert!(got.iter().any(|(k, p)| k == kind && p == ptr), "no {kind} at {ptr}: {got:?}");
    }
    assert_eq!(got.len(), want.len(), "{got:?}");
    let text = v.to_string();
    assert!(text.contains("write \\\"api.example.com\\\""), "the fix names the bare host: {text}");
    // The good entries alone lint clean.
    let dir = with_hosts().write(&h.t.join("good"));
    assert_eq!(h.run(&["lint", dir.to_str().unwrap()]).status.code(), Some(0));
}

/// allow-host and disallow-host on the store `h` uses: declared hosts only, every tenant or one.
fn round_trip(h: &Home) {
    h.install(&with_hosts(), "demo");
    let v = run(h, &["allow-host", "demo", "API.example.com", "*.cdn.example.com"], 0);
    assert_eq!(
        (v["tenant"].clone(), v["hosts"].clone()),
        (Value::Null, json!(["api.example.com", "*.cdn.example.com"])),
        "{v}"
    );
    // Another port, scheme or a name below a wildcard is not what the pack declares.
    for other in ["evil.example.com", "api.example.com:8443", "http://api.example.com", "img.cdn.example.com"]
    {
        let v = run(h, &["allow-host", "demo", other], 1);
        let e = v["error"].as_str().unwrap();
        assert!(e.contains("does not declare host") && e.contains("http://admin.example.com:8080"), "{e}");
    }
    let v = run(h, &["allow-host", "demo", "10.0.0.1"], 1);
    assert!(v["error"].as_str().unwrap().contains("is an IP address"), "{v}");
    let v = run(h, &["allow-host", "nope", "api.example.com"], 1);
    assert!(v["error"].as_str().unwrap().contains("pack nope is not installed"), "{v}");
    // One tenant: refused until a Principal belongs to it, then kept apart from every tenant's list.
    let v = run(h, &["allow-host", "demo", "http://admin.example.com:8080", "--tenant", "acme"], 1);
    assert!(v["error"].as_str().unwrap().contains("no Principal belongs to tenant"), "{v}");
    run(h, &["principal", "add", "alice", "--tenant", "acme"], 0);
    let v = run(h, &["allow-host", "demo", "http://admin.example.com:8080", "--tenant", "acme"], 0);
    assert_eq!(
        (v["tenant"].clone(), v["hosts"].clone()),
        (json!("acme"), json!(["http://admin.example.com:8080"])),
        "{v}"
    );
    let dir = h.t.join("src-demo/pack");
    let net = allowed(h, &dir);
    let row =
        |host: &str| net["hosts"].as_array().unwrap().iter().find(|r| r["host"] == host).unwrap().clone();
    assert_eq!(
        (row("api.example.com")["allowed"].clone(), row("api.example.com")["commands"].clone()),
        (json!(true), json!(["list", "show"])),
        "{net}"
    );
    let admin = row("http://admin.example.com:8080");
    assert_eq!(
        (admin["allowed"].clone(), admin["tenants"].clone(), admin["commands"].clone()),
        (json!(false), json!(["acme"]), json!(["remove"])),
        "{net}"
    );
    // disallow-host takes one host back, then every one of a scope; the tenant's list is its own.
    let v = run(h, &["disallow-host", "demo", "api.example.com"], 0);
    assert_eq!(v["hosts"], json!(["*.cdn.example.com"]), "{v}");
    let v = run(h, &["disallow-host", "demo"], 0);
    assert_eq!(v["hosts"], json!([]), "{v}");
    assert_eq!(
        allowed(h, &dir)["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["tenants"] == json!(["acme"]))
            .count(),
        1
    );
    run(h, &["disallow-host", "demo", "--tenant", "acme"], 0);
    let net = allowed(h, &dir);
    assert!(
        net["hosts"].as_array().unwrap().iter().all(|r| r["allowed"] == false && r["tenants"] == json!([])),
        "{net}"
    );
}

#[test]
fn allow_and_disallow_host_round_trip_on_the_file_store() {
    let h = Home::new();
    round_trip(&h);
    // The marker grant `install` wrote is all that is left of the pack's entry.
    let cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(h.store().join("sandbox.json")).unwrap()).unwrap();
    assert_eq!(cfg["packs"]["demo"].as_object().unwrap().keys().collect::<Vec<_>>(), vec!["write"], "{cfg}");
}

#[test]
fn allow_and_disallow_host_round_trip_on_the_postgres_store() {
    if crate::pg::unavailable() {
        return;
    }
    let h = Home::postgres();
    round_trip(&h);
    assert!(!h.store().join("sandbox.json").exists(), "sandbox.json went to local files");
}

#[test]
fn check_and_doctor_show_the_hosts_and_name_inet_as_anywhere() {
    let h = Home::new();
    let mut f = with_hosts();
    f.surface["wrap"]["network"] = json!(["inet"]);
    h.install(&f, "demo");
    run(&h, &["allow-host", "demo", "api.example.com"], 0);
    let dir = h.t.join("src-demo/pack");
    let out = h.run(&["check", dir.to_str().unwrap(), "--no-eval"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("network: hosts api.example.com (list, show) allowed"), "{text}");
    assert!(text.contains("http://admin.example.com:8080 (remove) not allowed: hcpx allow-host demo http://admin.example.com:8080"), "{text}");
    assert!(
        text.contains("*.cdn.example.com (list, show) not allowed: hcpx allow-host demo '*.cdn.example.com'"),
        "{text}"
    );
    assert!(
        text.contains("network: reaches anywhere") && text.contains("hcpx allow-network demo inet"),
        "{text}"
    );
    let v = stdout_json(&h.run(&["check", dir.to_str().unwrap(), "--no-eval", "--json"]));
    assert_eq!(
        (v["network"]["anywhere"].clone(), v["network"]["anywhere_allowed"].clone()),
        (json!(true), json!(false)),
        "{v}"
    );
    run(&h, &["allow-network", "demo", "inet"], 0);
    let out = h.run(&["doctor", "--json"]);
    let v = stdout_json(&out);
    let lines: Vec<&str> = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["check"] == "pack demo network")
        .map(|c| c["detail"].as_str().unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{v}");
    assert!(
        lines[0].starts_with("hosts api.example.com (list, show) allowed;")
            && lines[0].contains("through its call's egress proxy"),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("reaches anywhere") && lines[1].ends_with("(allowed)"), "{lines:?}");
    // A pack with neither hosts nor inet shows no network line, in check or doctor.
    let plain = Fixture::wrap().write(&h.t.join("plain"));
    let v = stdout_json(&h.run(&["check", plain.to_str().unwrap(), "--no-eval", "--json"]));
    assert!(v.get("network").is_none(), "{v}");
}

/// `hcpx install DIR` says which hosts the new pack reaches and the line that allows each (none is allowed at
/// install), as it says which bin and paths it needs.
#[test]
fn install_names_the_hosts_a_pack_reaches_and_how_to_allow_them() {
    let h = Home::new();
    let dir = with_hosts().write(h.t.path());
    let out = h.run(&["install", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "demo hosts api.example.com (list, show) not allowed: hcpx allow-host demo api.example.com"
        ),
        "{text}"
    );
    assert!(text.contains("'*.cdn.example.com'"), "{text}");
    let v = run(&h, &["install", dir.to_str().unwrap()], 0);
    assert_eq!(v["reach"]["hosts"][0]["host"], "api.example.com", "{v}");
    assert_eq!(v["reach"]["hosts"][0]["allowed"], json!(false), "{v}");
}

#[test]
fn an_update_that_adds_a_host_names_it_in_its_review() {
    use crate::distribution::{example, key, publish, reference, run_json, trust};
    if crate::registry::unavailable() {
        return;
    }
    let h = Home::new();
    let v1 = example(&h, "transit-composite");
    let v2 = h.t.join("src-transit-hosts");
    crate::helpers::copy_tree(&v1, &v2);
    let p = v2.join("surface.json");
    let mut surface: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    surface["hosts"] = json!(["api.transit.example"]);
    surface["verbs"]["plan"]["hosts"] = json!(["api.transit.example", "maps.transit.example:8443"]);
    std::fs::write(&p, serde_json::to_string_pretty(&surface).unwrap()).unwrap();
    let (private, public) = key(&h, "a.pem");
    let r1 = reference("hosts", "1");
    publish(&h, &v1, &r1, Some(&private));
    publish(&h, &v2, &reference("hosts", "2"), Some(&private));
    trust(&h, "a", &public, &crate::registry::registry().addr);
    run_json(&h, &["install", &r1], 0);
    let v = run_json(&h, &["update", "transit-composite", "--tag", "2"], 0);
    let changes = &v["update"]["changes"];
    assert!(
        changes
            .as_array()
            .unwrap()
            .contains(&json!({ "kind": "new_host", "host": "api.transit.example", "verbs": [] })),
        "{v}"
    );
    assert!(
        changes
            .as_array()
            .unwrap()
            .contains(&json!({ "kind": "new_host", "host": "maps.transit.example:8443", "verbs": ["plan"] })),
        "{v}"
    );
    let text =
        String::from_utf8_lossy(&h.run(&["update", "transit-composite", "--tag", "2"]).stderr).to_string();
    assert!(text.contains("a new host: maps.transit.example:8443 (plan)"), "{text}");
}

#[test]
fn a_command_gets_a_socket_only_for_its_own_allowed_hosts_and_reaches_only_the_proxy() {
    let Some(h) = home_if("seccomp") else { return };
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let port = l.local_addr().unwrap().port();
    let script = format!(
        "perl -MSocket -e 'socket(my $s, AF_INET, SOCK_STREAM, 0) or print \"no socket\\n\"; print \"tried\\n\"'; bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' 2>/dev/null && echo connected; exit 0"
    );
    evil_with(&h, &script, "read", "none", |f| {
        f.surface["hosts"] = json!(["api.example.com"]);
        f.surface["verbs"]["go"]["hosts"] = json!(["localhost.example.com"]);
    });
    // The pack's host is allowed, but `go` declares its own, which is not: no network, as before hosts.
    run(&h, &["allow-host", "evil", "api.example.com"], 0);
    let v = go(&h);
    assert_eq!(v["ok"], true, "the pack runs, with no network: {v}");
    assert!(
        said(&v).contains("no socket") && said(&v).contains("tried") && !said(&v).contains("connected"),
        "{v}"
    );
    // `go`'s own host allowed: a TCP socket, whose connects reach the call's egress proxy only.
    run(&h, &["allow-host", "evil", "localhost.example.com"], 0);
    let v = go(&h);
    assert_eq!(v["ok"], true, "{v}");
    assert!(
        !said(&v).contains("no socket") && said(&v).contains("tried") && !said(&v).contains("connected"),
        "{v}"
    );
    std::thread::sleep(Duration::from_millis(50));
    assert!(l.accept().is_err(), "allowed hosts let it around the proxy: {v}");
}
