#!/usr/bin/env bash
# Why: requests per second and p50/p99 latency of `hcpx serve` for a composite read and a wrap read over
# loopback HTTP (oha, a real load generator), beside the same calls made in-process through `Runtime`, all
# from one run on one store. Bounded: a fixed number of requests per row, loopback only.
# Usage: BENCH_N=20000 BENCH_C=16 benches/http.sh   (needs oha: `cargo install oha`; prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-20000}"
C="${BENCH_C:-16}"
command -v oha >/dev/null || { echo "benches/http.sh needs oha: cargo install oha" >&2; exit 2; }

cargo build --release --bins >&2
cargo bench --bench http_inprocess --no-run >&2
HCPX="$PWD/target/release/hcpx"

TMP="$(mktemp -d)"
SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
export HCP_HOME="$TMP/home"

P="$TMP/trivial"
. benches/trivial_pack.sh
trivial_pack "$P"
for dir in "$P" packs/transit-composite; do
  "$HCPX" install "$dir" --json > /dev/null
  "$HCPX" activate "$(basename "$dir")" > /dev/null 2>&1
done
TOKEN="$("$HCPX" principal add bench --tenant bench --grant 'verb.exec.read:*' 2>/dev/null)"

# The server, its access log to a file (as a deployment keeps it), calls limited well above the load.
"$HCPX" serve --listen 127.0.0.1:0 --max-calls 1024 2> "$TMP/serve.log" &
SERVER=$!
for _ in $(seq 100); do grep -q "listening on" "$TMP/serve.log" 2>/dev/null && break; sleep 0.05; done
ADDR="$(sed -n 's/.*listening on http:\/\///p' "$TMP/serve.log" | head -1)"

row() { # label path body n c
  oha --no-tui --output-format json -n "$4" -c "$5" -m POST -T application/json \
    -H "Authorization: Bearer $TOKEN" -d "$3" "http://$ADDR$2" > "$TMP/oha.json"
  python3 - "$1" "$5" "$TMP/oha.json" <<'PY'
import json, sys
label, c, path = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(path))
s, p = d["summary"], d["latencyPercentiles"]
codes = d.get("statusCodeDistribution", {})
print(json.dumps({"call": label, "face": f"HTTP c={c}", "rps": round(s["requestsPerSec"]),
                  "p50_us": round(p["p50"] * 1e6, 1), "p99_us": round(p["p99"] * 1e6, 1), "codes": codes}))
PY
}

{
  row "composite read" /v1/exec/transit-composite/plan '{"from":"A","to":"B"}' 2000 1
  row "composite read" /v1/exec/transit-composite/plan '{"from":"A","to":"B"}' "$N" "$C"
  row "wrap read" /v1/exec/trivial/ping '{}' 300 1
  row "wrap read" /v1/exec/trivial/ping '{}' "$((N / 10))" "$C"
  HTTP_BENCH_HOME="$HCP_HOME" HTTP_BENCH_N="$N" HTTP_BENCH_C="$C" \
    cargo bench --bench http_inprocess 2>/dev/null | grep '^{'
} > "$TMP/rows.jsonl"

python3 - "$TMP/rows.jsonl" "$C" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
c = sys.argv[2]
print("| call | face | req/s | p50 µs | p99 µs |")
print("|------|------|------:|-------:|-------:|")
for r in rows:
    rps = r.get("rps", r.get(f"rps_c{c}", ""))
    face = r["face"] if r["face"] != "in-process exec" else f"in-process exec (p50/p99 sequential, req/s exec_async c={c})"
    print(f"| {r['call']} | {face} | {rps} | {r['p50_us']} | {r['p99_us']} |")
    if r.get("codes") and set(r["codes"]) != {"200"}:
        print(f"|   | statuses | {r['codes']} | | |")
PY
