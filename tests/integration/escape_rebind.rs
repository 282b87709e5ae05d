//! DNS rebinding through a real resolver (issue #36): hcpx's proxy resolves a name with the system resolver
//! (`getaddrinfo`, /etc/resolv.conf) once per connection, checks every address, and connects to exactly the
//! addresses it checked (pinned). Run in a network namespace of its own with a scripted DNS server on
//! loopback (dns.rs), so no packet leaves the machine, as root and as the unprivileged user.

use serde_json::{json, Value};
use std::net::{Ipv4Addr, TcpListener, ToSocketAddrs};

use crate::dns::{isolated, Responder};
use crate::escape::home_if;
use crate::escape_egress::{entries, got, install, plain, requests, tries};

const LOOPBACK: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// The attack: the DNS server answers the check with an address the policy allows, and every later lookup of
/// the name with 127.0.0.1, where a server (standing for anything on the machine or in its network) counts
/// connections. A proxy that checked one lookup and connected by name (a second lookup, as a client that is
/// given the name does) would reach 127.0.0.1; hcpx connects to the address it checked.
///
/// - `rebind.test` (https, not internal): first `1.2.3.4`, a public address, allowed; then 127.0.0.1. The
///   pinned connect goes to 1.2.3.4, which the namespace cannot route (`ENETUNREACH`: nothing is sent), so the
///   first request is `connect_failed` naming 1.2.3.4; the second request's own lookup gets 127.0.0.1, which a
///   name that is not internal may not have: `private_address`. The server at 127.0.0.1 sees no connection.
/// - `pin.test` (http, internal, so loopback is allowed): first 127.0.0.2, then 127.0.0.1, where two servers
///   listen on the same port. The request lands at 127.0.0.2, the checked address, and 127.0.0.1 sees nothing:
///   pinning shown where the connect succeeds.
/// - Through the same resolver, `loop.test` answers 127.0.0.1 (not internal) and `meta.test` the cloud
///   metadata address (internal, which never allows it): both refused, nothing connected.
/// - The call's own lookup of `own.test` (python's `getaddrinfo`) reaches no DNS server (a UDP socket is refused
///   to it), where the test's own lookup, outside the call, gets its answer.
///
/// Each name is looked up exactly once per request (the DNS server counts `A` queries): no second lookup.
#[test]
fn a_name_that_rebinds_after_its_check_reaches_only_the_checked_address() {
    let Some(_ns) =
        isolated("escape_rebind::a_name_that_rebinds_after_its_check_reaches_only_the_checked_address")
    else {
        return;
    };
    let Some(h) = home_if("seccomp") else { return };
    let target = TcpListener::bind((LOOPBACK, 0)).unwrap();
    let port = target.local_addr().unwrap().port();
    let pinned = TcpListener::bind((Ipv4Addr::new(127, 0, 0, 2), port)).unwrap();
    let (target, pinned) = (plain(target), plain(pinned));
    let dns = Responder::start(&[
        ("rebind.test", &[&[Ipv4Addr::new(1, 2, 3, 4)], &[LOOPBACK]]),
        ("pin.test", &[&[Ipv4Addr::new(127, 0, 0, 2)], &[LOOPBACK]]),
        ("loop.test", &[&[LOOPBACK]]),
        ("meta.test", &[&[Ipv4Addr::new(169, 254, 169, 254)]]),
        ("own.test", &[&[LOOPBACK]]),
    ]);
    let hosts = [
        format!("rebind.test:{port}"),
        format!("http://pin.test:{port}"),
        format!("loop.test:{port}"),
        format!("http://meta.test:{port}"),
    ];
    // The call's own lookup, with a resolver on loopback that would answer it: UDP (and TCP to port 53) is
    // refused to the call, so only the proxy's lookups reach the DNS server.
    let lookup = "def lookup(name):\n    try:\n        return \"resolved %s\" % socket.getaddrinfo(name, 80)[0][4][0]\n    except Exception as e:\n        return \"refused \" + repr(e)\n";
    let tries_py = format!(
        "{lookup}print(json.dumps({{ \"own\": lookup(\"own.test\"), \"first\": get(\"https://rebind.test:{port}/\"), \"second\": get(\"https://rebind.test:{port}/\"), \"pin\": get(\"http://pin.test:{port}/\"), \"loop\": get(\"https://loop.test:{port}/\"), \"meta\": get(\"http://meta.test:{port}/\") }}))\n"
    );
    // No CA is needed: no TLS handshake can happen.
    install(&h, &tries_py, "", &hosts, &hosts);
    h.write_store(
        "sandbox.json",
        &json!({ "egress": { "internal": ["pin.test", "meta.test"] } }).to_string(),
    );
    let r = tries(&h);
    let seen = format!("{r}\nqueries: {:?}\n127.0.0.1: {:?}", dns.queries(), entries(&target));
    assert!(got(&r, "first").contains("502"), "{seen}");
    assert!(got(&r, "second").contains("403"), "{seen}");
    assert_eq!(
        got(&r, "pin"),
        format!("ok http://pin.test:{port}/ hello plain from 127.0.0.2:{port}"),
        "{seen}"
    );
    assert!(got(&r, "loop").contains("403"), "{seen}");
    assert!(got(&r, "meta").starts_with("refused 403 egress private_address"), "{seen}");
    assert!(got(&r, "own").starts_with("refused"), "{seen}");
    assert_eq!(dns.asked("own.test", "A") + dns.asked("own.test", "AAAA"), 0, "{seen}");
    // Which a process outside the call, here, resolves.
    let here: Vec<_> = ("own.test", 80).to_socket_addrs().unwrap().collect();
    assert_eq!((here[0].ip(), dns.asked("own.test", "A")), (LOOPBACK.into(), 1), "{seen}");
    // The rebound address saw nothing; the pinned one, the one request.
    assert_eq!(entries(&target), Vec::<String>::new(), "{seen}");
    assert_eq!(entries(&pinned), ["accept", "- GET /"], "{seen}");
    // One lookup per request, each checked on its own.
    for (name, n) in [("rebind.test", 2), ("pin.test", 1), ("loop.test", 1), ("meta.test", 1)] {
        assert_eq!(dns.asked(name, "A"), n, "{name}: {seen}");
    }
    assert_eq!(
        requests(&h),
        [
            format!("rebind.test:{port} connect_failed"),
            format!("rebind.test:{port} private_address"),
            format!("pin.test:{port} allowed"),
            format!("loop.test:{port} private_address"),
            format!("meta.test:{port} private_address"),
        ],
        "{seen}"
    );
    let rows: Vec<Value> = h
        .audit_log()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r["egress"].is_object())
        .collect();
    let reason = |i: usize| rows[i]["egress"]["reason"].as_str().unwrap_or("").to_string();
    assert!(reason(0).contains("1.2.3.4"), "the pinned address is the one that failed: {}", reason(0));
    assert!(reason(1).contains("127.0.0.1"), "{}", reason(1));
}
