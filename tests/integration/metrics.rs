//! Issue #38 point 5: `/metrics` answers "which tenant is failing, and since when" alone. Two tenants on three
//! replicas of one PostgreSQL store: tenant beta's calls fail (its pack deactivated for it) and every replica
//! shows it by tenant with when its failures began, while acme is fine; tenants past the limit fold into
//! `_other`; approvals waiting and task counts follow the store as they are made and settled; a replica given
//! the wrong seal key counts the credentials it cannot open; the store's latency buckets fill; and every metric
//! the Grafana dashboard and the alert rules in docs/ name is on a real scrape.

use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::helpers::{repo, Home};
use crate::serve::{on_both_stores, principal, request_raw, request_with, Server, ALL};
use crate::store_pg::{write_key, write_pack, PgStore};
use crate::store_pg_replicas::Replica;

/// The page `/metrics` answers `token` at `addr`.
pub fn scrape(addr: &str, token: &str) -> String {
    let (st, _, text) = request_raw(addr, "GET", "/metrics", Some(token), None, &[]);
    assert_eq!(st, 200, "{text}");
    text
}

/// The value of the one sample whose series (name and labels) is `series`; `None` when absent.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map(|v| v.trim().parse().unwrap_or_else(|_| panic!("{series}: {v:?} is no number")))
}

fn sample(text: &str, series: &str) -> f64 {
    value(text, series).unwrap_or(0.0)
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// `f` until it is true, for at most `bound`; whether it became true.
fn eventually(bound: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    loop {
        if f() {
            return true;
        }
        if start.elapsed() > bound {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The metric families the page declares (its `# TYPE` lines).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

/// Every `hcp_…` metric a document names, as its family (a histogram's `_bucket`, `_sum` and `_count` are its
/// family's).
pub fn named_in(doc: &str) -> BTreeSet<String> {
    let bytes = doc.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while let Some(at) = doc[i..].find("hcp_") {
        let start = i + at;
        let fresh = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let end = doc[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(doc.len(), |e| start + e);
        if fresh {
            let name = &doc[start..end];
            let family =
                ["_bucket", "_sum", "_count"].iter().find_map(|s| name.strip_suffix(s)).unwrap_or(name);
            out.insert(family.to_string());
        }
        i = end;
    }
    out
}

/// The dashboard's and the alert rules' text.
fn docs_texts() -> Vec<(String, String)> {
    ["docs/grafana/hcpx.json", "docs/alerts.yml"]
        .iter()
        .map(|p| (p.to_string(), std::fs::read_to_string(repo().join(p)).unwrap()))
        .collect()
}

fn token_of(v: &Value) -> String {
    v["token"].as_str().unwrap().to_string()
}

#[test]
fn a_failing_tenant_shows_on_every_replica_with_when_its_failures_began() {
    let Some(db) = PgStore::new() else { return };
    let pack = write_pack(db.t.path());
    db.ok("admin", &["install", pack.to_str().unwrap()]);
    db.ok("admin", &["activate", "transit-db"]);
    let grant = ["--grant", "verb.exec.read:*"];
    let alice =
        token_of(&db.ok("admin", &[&["principal", "add", "alice", "--tenant", "acme"][..], &grant].concat()));
    let bob =
        token_of(&db.ok("admin", &[&["principal", "add", "bob", "--tenant", "beta"][..], &grant].concat()));
    let ops = token_of(&db.ok("admin", &["principal", "add", "ops", "--tenant", "acme", "--operator"]));
    // Beta's pack is taken away from it: every call of beta fails, acme's are served.
    db.ok("admin", &["deactivate", "transit-db", "--tenant", "beta"]);

    let replicas: Vec<Replica> = (0..3).map(|i| Replica::start(&db, &format!("r{i}"), &db.url)).collect();
    let plan = json!({ "from": "Argument-Value-A", "to": "B" });
    let first_failure = unix_now();
    let mut failed_code = String::new();
    for r in &replicas {
        for _ in 0..2 {
            let (st, v) = r.post("/v1/exec/transit-db/plan", &alice, &plan);
            assert_eq!((st, v["ok"].as_bool()), (200, Some(true)), "{v}");
            let (st, v) = r.post("/v1/exec/transit-db/plan", &bob, &plan);
            assert!(st >= 400 && v["ok"] == false, "beta's call was served: {v}");
            failed_code = v["code"].as_str().unwrap().to_string();
        }
    }
    let scraped = unix_now();

    let call = |tenant: &str, code: &str| {
        format!("hcp_calls_total{{tenant=\"{tenant}\",invoker=\"http\",pack=\"transit-db\",verb=\"plan\",code=\"{code}\"}}")
    };
    for (i, r) in replicas.iter().enumerate() {
        let text = scrape(&r.addr, &ops);
        assert_eq!(sample(&text, &call("acme", "ok")), 2.0, "replica {i}: {text}");
        assert_eq!(sample(&text, &call("beta", &failed_code)), 2.0, "replica {i}: {text}");
        assert_eq!(sample(&text, &call("beta", "ok")), 0.0, "replica {i}: {text}");
        let denial = |t: &str| format!("hcp_denials_total{{tenant=\"{t}\",code=\"{failed_code}\"}}");
        assert_eq!((sample(&text, &denial("beta")), sample(&text, &denial("acme"))), (2.0, 0.0), "{text}");
        // Since when: beta's run of failures began during the calls above; acme is not failing.
        let since = value(&text, "hcp_tenant_failing_since_seconds{tenant=\"beta\"}").unwrap();
        assert!(
            since >= first_failure - 1.0 && since <= scraped + 1.0,
            "replica {i}: beta failing since {since}"
        );
        assert_eq!(value(&text, "hcp_tenant_failing_since_seconds{tenant=\"acme\"}"), Some(0.0), "{text}");
        assert!(sample(&text, "hcp_tenant_last_success_seconds{tenant=\"acme\"}") >= first_failure - 1.0);
        assert_eq!(sample(&text, "hcp_tenant_last_success_seconds{tenant=\"beta\"}"), 0.0, "{text}");
        assert!(sample(&text, "hcp_tenant_last_failure_seconds{tenant=\"beta\"}") >= since, "{text}");
        assert_eq!(sample(&text, "hcp_call_duration_seconds_count{tenant=\"beta\"}"), 2.0, "{text}");
        // The store's latency, by back end and operation: a call reads documents, and each read landed in a
        // bucket whose counts only grow towards `+Inf`, which is the count.
        let reads = "store=\"postgres\",op=\"doc_read\"";
        let count = sample(&text, &format!("hcp_store_operation_duration_seconds_count{{{reads}}}"));
        assert!(count > 0.0, "no document read timed: {text}");
        let buckets: Vec<f64> = text
            .lines()
            .filter(|l| l.starts_with(&format!("hcp_store_operation_duration_seconds_bucket{{{reads},")))
            .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
            .collect();
        assert!(buckets.len() > 10 && buckets.windows(2).all(|w| w[0] <= w[1]), "{buckets:?}");
        assert_eq!(buckets.last(), Some(&count), "{text}");
        assert!(
            buckets[..buckets.len() - 1].iter().any(|b| *b > 0.0),
            "every read past the last bound: {text}"
        );
        // No label carries an argument value, a token or a Principal.
        for secret in [alice.as_str(), bob.as_str(), ops.as_str(), "Argument-Value-A", "alice", "bob"] {
            assert!(!text.contains(secret), "{secret:?} is on the page");
        }
        // The dashboard and the alert rules name only metrics the page has.
        let have = families(&text);
        for (doc, body) in docs_texts() {
            let named = named_in(&body);
            assert!(!named.is_empty(), "{doc} names no metric");
            let missing: Vec<&String> = named.iter().filter(|n| !have.contains(*n)).collect();
            assert!(missing.is_empty(), "{doc} names metrics /metrics does not have: {missing:?}\n{text}");
        }
    }

    // Beta gets its pack back: the first call it makes through replica 0 ends its streak there.
    db.ok("admin", &["activate", "transit-db", "--tenant", "beta"]);
    let back = eventually(Duration::from_secs(10), || {
        replicas[0].post("/v1/exec/transit-db/plan", &bob, &plan).1["ok"] == true
    });
    assert!(back, "beta's calls never came back");
    let text = scrape(&replicas[0].addr, &ops);
    assert_eq!(value(&text, "hcp_tenant_failing_since_seconds{tenant=\"beta\"}"), Some(0.0), "{text}");
    let recovered = sample(&text, "hcp_tenant_last_success_seconds{tenant=\"beta\"}");
    assert!(recovered >= scraped - 1.0, "{text}");
    // Replicas beta has not reached since still show their streak, begun before that success: the dashboard's
    // and the alert's `failing_since > on (tenant) group_left max(last_success)` leaves them out.
    for r in &replicas[1..] {
        let text = scrape(&r.addr, &ops);
        let stale = sample(&text, "hcp_tenant_failing_since_seconds{tenant=\"beta\"}");
        assert!(stale > 0.0 && stale < recovered, "{stale} vs {recovered}: {text}");
    }
}

/// A served home with transit-composite installed, activated and callable by `n` tenants `t0…`; their tokens,
/// and an operator's.
fn tenants_home(n: usize) -> (Home, Vec<String>, String) {
    let h = Home::new();
    let out = h.run(&["install", repo().join("packs/transit-composite").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(h.run(&["activate", "transit-composite"]).status.code(), Some(0));
    let tokens = (0..n).map(|i| principal(&h, &format!("p{i}"), &format!("t{i}"), ALL, false)).collect();
    let ops = principal(&h, "ops", "t0", &[], true);
    (h, tokens, ops)
}

fn serve_with(h: &Home, env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .envs(h.store_env())
        .envs(env.iter().copied())
        .current_dir(h.t.path());
    Server::launch(cmd)
}

#[test]
fn tenants_past_the_limit_fold_into_other() {
    let (h, tokens, ops) = tenants_home(4);
    let s = serve_with(&h, &[("HCP_METRICS_MAX_TENANTS", "2")]);
    let plan = json!({ "from": "A", "to": "B" });
    for t in &tokens {
        let (st, v) = s.post("/v1/exec/transit-composite/plan", t, &plan);
        assert_eq!(st, 200, "{v}");
    }
    let text = scrape(&s.addr, &ops);
    let ok = |t: &str| {
        format!("hcp_calls_total{{tenant=\"{t}\",invoker=\"http\",pack=\"transit-composite\",verb=\"plan\",code=\"ok\"}}")
    };
    // The first two tenants seen are named; the two after them are counted together under `_other`.
    assert_eq!((sample(&text, &ok("t0")), sample(&text, &ok("t1"))), (1.0, 1.0), "{text}");
    assert_eq!(sample(&text, &ok("_other")), 2.0, "{text}");
    assert_eq!(sample(&text, "hcp_call_duration_seconds_count{tenant=\"_other\"}"), 2.0, "{text}");
    assert!(!text.contains("tenant=\"t2\"") && !text.contains("tenant=\"t3\""), "{text}");
    drop(s);

    // A limit that is no number is refused at start, naming the variable.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hcpx"));
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .env("HCP_HOME", h.store())
        .envs(h.store_env())
        .env("HCP_METRICS_MAX_TENANTS", "lots")
        .current_dir(h.t.path());
    let out = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("HCP_METRICS_MAX_TENANTS is \"lots\""), "{err}");
}

on_both_stores! {
    fn approvals_waiting_and_tasks_follow_the_store / approvals_waiting_and_tasks_follow_the_store_postgres (h) {
        assert_eq!(h.run(&["install", repo().join("packs/ledger").to_str().unwrap()]).status.code(), Some(0));
        assert_eq!(h.run(&["activate", "ledger"]).status.code(), Some(0));
        let cfg = json!({ "human_approval": {
            "commands": [{ "pack_id": "ledger", "verb_keys": ["transfer"] }], "ttl_s": 600 },
            "timeout_ms": 600000 });
        h.write_store("sandbox.json", &cfg.to_string());
        let id = crate::composite::install_guest_with(&h, "test-loop", &["sleep", "ok"], None, |f| {
            f.surface["verbs"]["sleep"]["long"] = json!(true);
        });
        let alice = principal(&h, "alice", "acme", ALL, false);
        let bob = {
            let out = h.run(&["principal", "add", "bob", "--tenant", "acme", "--approver", "--json"]);
            crate::helpers::stdout_json(&out)["token"].as_str().unwrap().to_string()
        };
        let ops = principal(&h, "ops", "acme", &[], true);
        let s = Server::start(&h, &[]);
        let waiting = "hcp_approvals_waiting{tenant=\"acme\"}";
        let tasks = |state: &str| format!("hcp_tasks{{tenant=\"acme\",state=\"{state}\"}}");
        let text = scrape(&s.addr, &ops);
        assert_eq!(sample(&text, waiting), 0.0, "{text}");
        assert!(text.contains("# TYPE hcp_approvals_waiting gauge") && text.contains("# TYPE hcp_tasks gauge"));

        // Two transfers wait for a person: two approvals waiting, the oldest waiting for some time.
        let args = json!({"amount": "2.80", "payee": "demo-transit", "confirm": true});
        let mut ids = Vec::new();
        for _ in 0..2 {
            let (st, v) = s.post("/v1/exec/ledger/transfer", &alice, &args);
            assert_eq!((st, v["code"].as_str()), (428, Some("approval_pending")), "{v}");
            ids.push(v["approval_id"].as_str().unwrap().to_string());
        }
        let mut text = String::new();
        assert!(
            eventually(Duration::from_secs(6), || {
                text = scrape(&s.addr, &ops);
                sample(&text, waiting) == 2.0
            }),
            "{text}"
        );
        let age = value(&text, "hcp_approvals_oldest_waiting_seconds{tenant=\"acme\"}").unwrap();
        assert!((0.0..60.0).contains(&age), "{text}");
        // A scrape storm reads the store's approvals at most once per 2 s: twenty scrapes at once list them
        // once per 2 s they took (a loaded machine may spread them), never once per scrape.
        let lists = |t: &str| {
            let store = if t.contains("store=\"postgres\"") { "postgres" } else { "files" };
            sample(t, &format!("hcp_store_operation_duration_seconds_count{{store=\"{store}\",op=\"doc_list\"}}"))
        };
        let before = lists(&text);
        let started = Instant::now();
        let storm: Vec<std::thread::JoinHandle<()>> = (0..20)
            .map(|_| {
                let (addr, ops) = (s.addr.clone(), ops.clone());
                std::thread::spawn(move || {
                    scrape(&addr, &ops);
                })
            })
            .collect();
        storm.into_iter().for_each(|t| t.join().unwrap());
        let windows = 1.0 + (started.elapsed().as_secs_f64() / 2.0).ceil();
        let after = lists(&scrape(&s.addr, &ops));
        assert!(
            after - before <= windows + 1.0 && after - before < 20.0,
            "{} lists of the approvals for 20 scrapes in {:?}",
            after - before,
            started.elapsed()
        );
        // One is refused by a person: one waits.
        let (st, v) = s.post(&format!("/v1/approvals/{}/refuse", ids[0]), &bob, &json!({}));
        assert_eq!(st, 200, "{v}");
        assert!(
            eventually(Duration::from_secs(6), || {
                text = scrape(&s.addr, &ops);
                sample(&text, waiting) == 1.0
            }),
            "{text}"
        );

        // A task that works, then is cancelled.
        let prefer = [("Prefer", "respond-async")];
        let (st, _, v) =
            request_with(&s.addr, "POST", &format!("/v1/exec/{id}/sleep"), Some(&alice), Some(b"{}"), &prefer);
        assert_eq!(st, 202, "{v}");
        let task = v["task"]["id"].as_str().unwrap().to_string();
        assert!(
            eventually(Duration::from_secs(6), || {
                text = scrape(&s.addr, &ops);
                sample(&text, &tasks("working")) == 1.0
            }),
            "{text}"
        );
        assert_eq!(sample(&text, &tasks("cancelled")), 0.0, "{text}");
        let (st, _, v) = request_with(&s.addr, "DELETE", &format!("/v1/tasks/{task}"), Some(&alice), None, &[]);
        assert_eq!(st, 202, "{v}");
        assert!(
            eventually(Duration::from_secs(10), || {
                text = scrape(&s.addr, &ops);
                sample(&text, &tasks("working")) == 0.0 && sample(&text, &tasks("cancelled")) == 1.0
            }),
            "{text}"
        );
    }
}

#[test]
fn a_replica_given_the_wrong_seal_key_counts_the_credentials_it_cannot_open() {
    let Some(db) = PgStore::new() else { return };
    let out = db.run("a", &["install", repo().join("packs/ledger").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    db.ok("a", &["activate", "ledger"]);
    let alice = token_of(
        &db.ok("a", &["principal", "add", "alice", "--tenant", "acme", "--grant", "verb.exec.read:*"]),
    );
    let ops = token_of(&db.ok("a", &["principal", "add", "ops", "--tenant", "acme", "--operator"]));
    let set = db.run_with(
        "a",
        &["credential", "set", "ledger", "token", "--tenant", "acme"],
        &[],
        Some("s3cret-value"),
    );
    assert_eq!(set.status.code(), Some(0), "{}", String::from_utf8_lossy(&set.stderr));

    // A replica with the right key opens it (whatever the wrap then does): nothing counted.
    let good = Replica::start(&db, "good", &db.url);
    let _ = good.post("/v1/exec/ledger/status", &alice, &json!({}));
    assert_eq!(sample(&scrape(&good.addr, &ops), "hcp_seal_failures_total"), 0.0);

    // A replica given another key file: the call is refused, and the page counts the row it could not open.
    let wrong = db.t.join("wrong.key");
    write_key(&wrong, 9);
    let bad = db.serve("wrong", &wrong);
    let (st, v) = bad.post("/v1/exec/ledger/status", &alice, &json!({}));
    assert!(st >= 400 && v["ok"] == false, "{v}");
    let text = scrape(&bad.addr, &ops);
    assert!(sample(&text, "hcp_seal_failures_total") >= 1.0, "{text}");
    assert!(text.contains("# TYPE hcp_seal_failures_total counter"), "{text}");
    assert!(!text.contains("s3cret-value"), "{text}");
}

#[test]
fn the_docs_name_metrics_by_their_families() {
    // The reader the drift check above relies on: a histogram's series are its family's, and a name inside
    // another word is not a metric.
    let got = named_in(
        "rate(hcp_calls_total[5m]) / histogram_quantile(0.99, hcp_call_duration_seconds_bucket) x_hcp_no",
    );
    assert_eq!(got, BTreeSet::from(["hcp_calls_total".to_string(), "hcp_call_duration_seconds".to_string()]));
    for (doc, body) in docs_texts() {
        assert!(
            named_in(&body).contains("hcp_tenant_failing_since_seconds"),
            "{doc} does not show since when"
        );
    }
    // The dashboard: every panel has a title and queries, inside Grafana's 24-column grid.
    let dash: Value =
        serde_json::from_str(&std::fs::read_to_string(repo().join("docs/grafana/hcpx.json")).unwrap())
            .unwrap();
    let panels = dash["panels"].as_array().unwrap();
    assert!(panels.len() >= 8, "{dash}");
    for p in panels {
        assert!(p["title"].as_str().is_some_and(|t| !t.is_empty()), "{p}");
        let targets = p["targets"].as_array().unwrap();
        assert!(
            !targets.is_empty()
                && targets.iter().any(|t| t["expr"].as_str().is_some_and(|e| e.contains("hcp_")))
        );
        let g = &p["gridPos"];
        assert!(g["x"].as_u64().unwrap() + g["w"].as_u64().unwrap() <= 24, "{p}");
    }
    // The rules: YAML (read with PyYAML, which the test machine has for schemathesis) whose every rule has an
    // alert, an expression, a severity and a summary; and, where promtool is installed, rules Prometheus loads.
    let alerts = repo().join("docs/alerts.yml");
    let out = Command::new("python3")
        .args(["-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))"])
        .arg(&alerts)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let rules: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&Value> =
        rules["groups"].as_array().unwrap().iter().flat_map(|g| g["rules"].as_array().unwrap()).collect();
    assert!(rules.len() >= 5, "{rules:?}");
    for r in &rules {
        assert!(r["alert"].is_string() && r["expr"].is_string(), "{r}");
        assert!(r["labels"]["severity"].is_string() && r["annotations"]["summary"].is_string(), "{r}");
    }
    // Where promtool is installed: the rules load, and their unit tests (docs/alerts_test.yml: a failing tenant
    // fires, a replica's stale streak does not, seal failures, an approval waiting, a draining replica) pass.
    let tests = repo().join("docs/alerts_test.yml");
    for args in [["check", "rules"], ["test", "rules"]] {
        let file = if args[0] == "check" { &alerts } else { &tests };
        match Command::new("promtool").args(args).arg(file).output() {
            Ok(out) => assert_eq!(
                out.status.code(),
                Some(0),
                "promtool {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) => eprintln!("skipped: promtool is not installed; the rules' PromQL is not checked here"),
        }
    }
}

#[test]
fn a_draining_replica_says_it_is_not_ready_on_its_page() {
    let (h, _, ops) = tenants_home(1);
    let mut s = Server::start(&h, &["--drain-ms", "8000"]);
    // Ready once it has loaded its packs (0 until then, as /readyz).
    let ready =
        eventually(Duration::from_secs(5), || value(&scrape(&s.addr, &ops), "hcp_ready") == Some(1.0));
    assert!(ready, "{}", scrape(&s.addr, &ops));
    s.signal(libc::SIGTERM);
    // Draining, it still answers its page, which says what /readyz says.
    let mut text = String::new();
    assert!(
        eventually(Duration::from_secs(4), || {
            text = scrape(&s.addr, &ops);
            value(&text, "hcp_ready") == Some(0.0)
        }),
        "{text}"
    );
    assert_eq!(request_raw(&s.addr, "GET", "/readyz", None, None, &[]).0, 503);
    assert_eq!(s.terminate(), Some(0), "{}", s.log());
}
