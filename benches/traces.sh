#!/usr/bin/env bash
# Why: the trace work's cost on a served composite call (#38: ≤ 2% with tracing off, ≤ 10% on), side by side in
# one run: an older build's server (BENCH_BASELINE, its hcpx-serve beside it), this build's with tracing off, and
# this build's with tracing on, exporting every call (always_on) to a loopback collector that reads and accepts
# each export, all on one file store, in interleaved rounds (benches/traces_http.py). Loopback only; a fixed
# number of rounds (BENCH_N, default 3000).
# Usage: BENCH_N=3000 BENCH_BASELINE=/path/to/old/hcpx [BENCH_HCPX=/path/to/hcpx] benches/traces.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-3000}"
if [ -z "${BENCH_HCPX:-}" ]; then
  cargo build --release --bin hcpx --bin hcpx-serve >&2
  BENCH_HCPX="$PWD/target/release/hcpx"
fi
TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
export HCP_HOME="$TMP/home"
"$BENCH_HCPX" install packs/transit-composite --json > /dev/null
"$BENCH_HCPX" activate transit-composite > /dev/null 2>&1
TOKEN="$("$BENCH_HCPX" principal add bench --tenant bench --grant 'verb.exec.read:*' 2>/dev/null)"

# The collector: reads each export whole and answers 200 (what it costs to decode is the collector's, not hcpx's).
python3 - > "$TMP/sink.port" <<'PY' &
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()
    def log_message(self, *a): pass
s = HTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
PY
PIDS+=($!)
for _ in $(seq 100); do [ -s "$TMP/sink.port" ] && break; sleep 0.05; done

SERVERS=()
start() { # label binary [VAR=value…]: a server on a free port, added to SERVERS as label=addr
  local label="$1" bin="$2"; shift 2
  env "$@" "$bin" serve --listen 127.0.0.1:0 --max-calls 1024 > /dev/null 2> "$TMP/$label.log" &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$TMP/$label.log" 2>/dev/null && break; sleep 0.05; done
  SERVERS+=("$label=$(sed -n 's/.*listening on http:\/\///p' "$TMP/$label.log" | head -1)")
}
if [ -n "${BENCH_BASELINE:-}" ]; then start baseline "$BENCH_BASELINE"; fi
start off "$BENCH_HCPX"
start on "$BENCH_HCPX" OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:$(cat "$TMP/sink.port")" \
  OTEL_TRACES_SAMPLER=always_on OTEL_BSP_MAX_QUEUE_SIZE=65536

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $N rounds" >&2
python3 benches/traces_http.py "$TOKEN" "$N" "${SERVERS[@]}" > "$TMP/rows.jsonl"
python3 - "$TMP/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"| server | p50 µs | p90 µs | p99 µs | p50 over {rows[0]['server']} | mean over {rows[0]['server']} |")
print("|---|---:|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['server']} | {r['p50_us']} | {r['p90_us']} | {r['p99_us']} | {r['p50_ratio']}× | {r['mean_ratio']}× |")
PY
