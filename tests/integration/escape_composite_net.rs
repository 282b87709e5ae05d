//! A composite's only way out is the host's HTTP (issue #36): wasmtime's WASI sockets are linked, but the call's
//! context allows no socket address and no name lookup, so a component that opens a TCP connection or sends a UDP
//! datagram itself (a direct connect that ignores the egress policy, raw DNS to a resolver of its choosing) or
//! asks WASI to resolve a name reaches nothing, even a host its pack declares and the operator allowed.

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{Fixture, Home};

/// `test-escape` as composite pack `netp`, whose read `net` tries TCP and UDP to `addr` and a lookup of `name`;
/// it declares `http://net.test:PORT` (127.0.0.1) and the operator allows it as internal, so only the host's HTTP may go.
fn install(h: &Home, port: u16) {
    let mut f = Fixture::wrap();
    let host = format!("http://net.test:{port}");
    f.surface = json!({ "id": "netp", "kind": "composite", "component": { "path": "./adapter.wasm" },
        "hosts": [host],
        "verbs": { "net": { "description": "Try the network.", "args": { "type": "object", "properties": {
            "addr": { "type": "string", "description": "Where" }, "name": { "type": "string", "description": "What" } },
            "required": ["addr", "name"] } } } });
    f.policy = json!({ "surface_id": "netp", "verbs": { "net": { "operation": "read" } } });
    f.harness = "# Netp\n\nA test guest.\n".into();
    f.files.clear();
    let dir = f.write(&h.t.join("src-netp"));
    std::fs::copy(crate::composite::guest("test-escape"), dir.join("adapter.wasm")).unwrap();
    let out = h.run(&["install", dir.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(h.run(&["activate", "netp"]).status.code(), Some(0));
    let out = h.run(&["allow-host", "netp", &host]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let sandbox: Value =
        serde_json::from_str(&std::fs::read_to_string(h.store().join("sandbox.json")).unwrap()).unwrap();
    let mut sandbox = sandbox;
    sandbox["egress"] = json!({ "hosts": { "net.test": ["127.0.0.1"] }, "internal": ["net.test"] });
    h.write_store("sandbox.json", &sandbox.to_string());
}

#[test]
fn a_composite_cannot_open_a_socket_or_resolve_a_name_itself() {
    let h = Home::new();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = tcp.local_addr().unwrap().port();
    let udp = UdpSocket::bind(("127.0.0.1", port)).unwrap();
    tcp.set_nonblocking(true).unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    install(&h, port);
    let out =
        h.run(&["exec", "netp", "net", "--json", "--", &format!("addr=127.0.0.1:{port}"), "name=localhost"]);
    let v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(v["ok"], true, "{v}");
    for way in ["tcp", "udp", "dns"] {
        assert_eq!(v["result"][way], false, "{way}: {v}");
    }
    // Nothing arrived: no connection waits to be accepted, no datagram to be read.
    match tcp.accept() {
        Ok((mut s, _)) => {
            let mut got = String::new();
            let _ = s.read_to_string(&mut got);
            panic!("the component connected over TCP: {got:?}");
        }
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
    }
    let mut buf = [0u8; 64];
    assert!(udp.recv_from(&mut buf).is_err(), "the component sent a UDP datagram");
}
