#!/usr/bin/env python3
"""Why: what the metrics work adds to a served composite call, side by side. Two `hcpx serve` on one store
(BENCH_BASE, an hcpx built from the tree before the change, and this tree's), both over loopback, answering
transit-composite's `plan` one call at a time over a kept-alive connection, the two in turn call by call so
a machine's drift hits both alike; prints each one's p50 / p99 and the ratio of medians. Bounded: ROUNDS x N
calls per server, loopback only.

Usage: BENCH_BASE=/path/to/old/hcpx [BENCH_NEW=target/release/hcpx] [BENCH_N=2000] [BENCH_ROUNDS=5] \
       python3 benches/metrics_overhead.py
"""
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.environ.get("BENCH_BASE")
NEW = os.environ.get("BENCH_NEW", os.path.join(ROOT, "target/release/hcpx"))
N = int(os.environ.get("BENCH_N", "2000"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))
if not BASE:
    sys.exit("metrics_overhead.py needs BENCH_BASE: an hcpx built from the tree before the change")

tmp = tempfile.mkdtemp()
env = dict(os.environ, HCP_HOME=os.path.join(tmp, "home"), HCP_STORE="files")


def hcpx(*args):
    return subprocess.run([NEW, *args], env=env, check=True, capture_output=True, text=True).stdout


hcpx("install", os.path.join(ROOT, "packs/transit-composite"), "--json")
hcpx("activate", "transit-composite")
token = json.loads(hcpx("principal", "add", "bench", "--tenant", "bench", "--grant", "verb.exec.read:*", "--json"))[
    "token"
]


def serve(binary):
    p = subprocess.Popen(
        [binary, "serve", "--listen", "127.0.0.1:0", "--max-calls", "64"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = p.stderr.readline()
    m = re.search(r"http://([0-9.]+):([0-9]+)", first)
    if not m:
        sys.exit(f"{binary} did not start: {first}")
    # The access log is drained so the server never blocks on it.
    import threading

    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    return p, http.client.HTTPConnection(m.group(1), int(m.group(2)))


body = json.dumps({"from": "A", "to": "B"})
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}


def call(conn):
    t = time.perf_counter()
    conn.request("POST", "/v1/exec/transit-composite/plan", body, headers)
    r = conn.getresponse()
    data = r.read()
    took = time.perf_counter() - t
    if r.status != 200:
        sys.exit(f"{r.status}: {data[:200]}")
    return took


servers = {"before": serve(BASE), "after": serve(NEW)}
lat = {k: [] for k in servers}
try:
    for _, (_, conn) in servers.items():
        for _ in range(200):
            call(conn)
    # Call by call, the two in turn (which goes first alternates), so load from elsewhere hits both alike.
    order = list(servers.items())
    for i in range(ROUNDS * N):
        for k, (_, conn) in order if i % 2 == 0 else order[::-1]:
            lat[k].append(call(conn))
finally:
    for p, _ in servers.values():
        p.terminate()
        p.wait()

print("| server | calls | p50 | p99 |")
print("|---|---:|---:|---:|")
p50 = {}
for k, xs in lat.items():
    xs.sort()
    p50[k] = statistics.median(xs)
    print(f"| {k} | {len(xs)} | {p50[k] * 1e6:.1f} µs | {xs[int(len(xs) * 0.99)] * 1e6:.1f} µs |")
print(f"\nafter / before, p50: {p50['after'] / p50['before']:.4f}")
