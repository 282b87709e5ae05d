#!/usr/bin/env bash
# Why: a tool call over `/mcp` from a client on protocol 2026-07-28 (stateless) beside one from a 2025-11-25
# session (kept in the store), side by side in one run against one `hcpx serve` (docs/perf.md; #37's target: the
# stateless call within 1.2x of the session call). BENCH_BASELINE=<an older hcpx, its hcpx-serve beside it> adds
# that binary's two calls, from a second server on the same store, in the same rounds, and the ratios are then
# over its session call. Loopback only; a fixed
# number of rounds (BENCH_N, default 2000). The store is the files under a temp HCP_HOME, or HCP_STORE if set.
# Usage: BENCH_N=2000 [BENCH_BASELINE=/path/to/old/hcpx] benches/mcp_http.sh   (prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-2000}"

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

SERVERS=()
start() { # label binary: a server on a free port, its address added to SERVERS as label=addr
  "$2" serve --listen 127.0.0.1:0 --max-calls 1024 > /dev/null 2> "$TMP/$1.log" &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$TMP/$1.log" 2>/dev/null && break; sleep 0.05; done
  SERVERS+=("$1=$(sed -n 's/.*listening on http:\/\///p' "$TMP/$1.log" | head -1)")
}
start now "$BENCH_HCPX"
if [ -n "${BENCH_BASELINE:-}" ]; then start baseline "$BENCH_BASELINE"; fi

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $N rounds, store: ${HCP_STORE:-files}" >&2
python3 benches/mcp_http.py "$TOKEN" "$N" "${SERVERS[@]}" > "$TMP/rows.jsonl"
python3 - "$TMP/rows.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = rows[-2]["case"].split(":")[0]
print(f"| tool call over /mcp | p50 µs | p90 µs | p99 µs | p50 over {ref}'s session call |")
print("|---|---:|---:|---:|---:|")
for r in rows:
    print(f"| {r['case']} | {r['p50_us']} | {r['p90_us']} | {r['p99_us']} | {r['over_reference_session']}× |")
PY
