"""Why: what a tool call over `/mcp` costs a client on protocol 2026-07-28 (stateless: no session, every request on
its own) beside one on 2025-11-25 (a session, kept in the store so any replica serves it), side by side in one run
against the servers benches/mcp_http.sh started (docs/perf.md). Each round makes one call of each case, in turn, on
the connection each case keeps alive, with the headers and body the Python SDK sends for it (`Mcp-Name`, and for
2026-07-28 `Mcp-Method` and the per-request `_meta`); the time is from the request's first byte to the response's
last. Loopback only, a fixed number of rounds.

Usage: mcp_http.py TOKEN ROUNDS LABEL=HOST:PORT…   (each LABEL a server; the first is the one under test, the last
the reference: with one server, itself)
Prints one JSON line per case: its label, p50/p90/p99 in µs, and its p50 over the reference's session call.
"""

import http.client
import json
import statistics
import sys
import time

TOKEN, ROUNDS = sys.argv[1], int(sys.argv[2])
SERVERS = [a.split("=", 1) for a in sys.argv[3:]]
TOOL, ARGS = "transit-composite__plan", {"from": "A", "to": "B"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
BASE = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json"}


def post(conn, headers, body):
    """One POST on `conn`; (status, response headers, body text) once the whole response is read."""
    conn.request("POST", "/mcp", body=json.dumps(body), headers={**BASE, **headers})
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read().decode()


def answered(text):
    """Whether an SSE or JSON answer holds a successful tool result."""
    return '"isError":false' in text or '"isError": false' in text


class Stateless:
    def __init__(self, addr):
        self.conn = http.client.HTTPConnection(addr)
        self.n = 0

    def call(self):
        self.n += 1
        body = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                "params": {"name": TOOL, "arguments": ARGS, "_meta": META}}
        headers = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": TOOL}
        return post(self.conn, headers, body)


class Session:
    def __init__(self, addr):
        self.conn = http.client.HTTPConnection(addr)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
        status, headers, text = post(self.conn, {"MCP-Protocol-Version": "2025-11-25"}, init)
        sid = {k.lower(): v for k, v in headers.items()}.get("mcp-session-id")
        assert status == 200 and sid, (status, text)
        self.headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}
        status, _, text = post(self.conn, self.headers, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert status == 202, (status, text)
        self.n = 0

    def call(self):
        self.n += 1
        body = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call", "params": {"name": TOOL, "arguments": ARGS}}
        return post(self.conn, {**self.headers, "Mcp-Name": TOOL}, body)


def main():
    cases = []
    for label, addr in SERVERS:
        cases.append((f"{label}: 2025-11-25 session", Session(addr)))
        cases.append((f"{label}: 2026-07-28 stateless", Stateless(addr)))
    times = {label: [] for label, _ in cases}
    for _ in range(20):  # warm: the component compiled and loaded, the connections up
        for label, c in cases:
            status, _, text = c.call()
            assert status == 200 and answered(text), (label, status, text[:300])
    for r in range(ROUNDS):
        order = cases if r % 2 == 0 else list(reversed(cases))
        for label, c in order:
            t = time.perf_counter_ns()
            status, _, text = c.call()
            times[label].append((time.perf_counter_ns() - t) / 1000)
            if status != 200 or not answered(text):
                raise SystemExit(f"{label}: {status} {text[:300]}")
    base = statistics.median(times[f"{SERVERS[-1][0]}: 2025-11-25 session"])
    for label, _ in cases:
        t = sorted(times[label])
        q = statistics.quantiles(t, n=100)
        p50 = statistics.median(t)
        print(json.dumps({"case": label, "p50_us": round(p50, 1), "p90_us": round(q[89], 1),
                          "p99_us": round(q[98], 1), "over_reference_session": round(p50 / base, 3)}))


main()
