"""Why: what the trace work costs a served composite call (docs/perf.md, #38's target: ≤ 2% with tracing off, ≤ 10%
with it on), side by side in one run against the servers benches/traces.sh started: each round makes one
`POST /v1/exec/transit-composite/plan` on each server in turn, on the connection each keeps alive, with a
`traceparent` header (as a traced caller sends it); the time is from the request's first byte to the response's
last. Loopback only, a fixed number of rounds.

Usage: traces_http.py TOKEN ROUNDS LABEL=HOST:PORT…   (the first LABEL is the reference)
Prints one JSON line per server: its label, p50/p90/p99 in µs, and its p50 and mean over the reference's.
"""

import http.client
import json
import statistics
import sys
import time

TOKEN, ROUNDS = sys.argv[1], int(sys.argv[2])
SERVERS = [a.split("=", 1) for a in sys.argv[3:]]
BODY = json.dumps({"from": "A", "to": "B"})
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json",
           "traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}


def call(conn):
    conn.request("POST", "/v1/exec/transit-composite/plan", body=BODY, headers=HEADERS)
    r = conn.getresponse()
    text = r.read()
    assert r.status == 200, (r.status, text)


def main():
    conns = [(label, http.client.HTTPConnection(addr)) for label, addr in SERVERS]
    times = {label: [] for label, _ in conns}
    for _ in range(200):  # warm every server: its component compiled, its pools filled
        for _, c in conns:
            call(c)
    for i in range(ROUNDS):
        # The order rotates each round, so no server always follows another.
        k = i % len(conns)
        for label, c in conns[k:] + conns[:k]:
            t = time.perf_counter_ns()
            call(c)
            times[label].append((time.perf_counter_ns() - t) / 1000)
    ref = conns[0][0]
    ref_p50, ref_mean = statistics.median(times[ref]), statistics.fmean(times[ref])
    for label, _ in conns:
        t = sorted(times[label])
        q = lambda p: round(t[min(len(t) - 1, int(p * len(t)))], 1)
        print(json.dumps({"server": label, "p50_us": q(0.5), "p90_us": q(0.9), "p99_us": q(0.99),
                          "p50_ratio": round(statistics.median(t) / ref_p50, 3),
                          "mean_ratio": round(statistics.fmean(t) / ref_mean, 3)}))


main()
