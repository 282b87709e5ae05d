#!/usr/bin/env bash
# Why: requests per second and p50/p99 latency of `hcpx serve` for a composite read and a wrap read over
# loopback HTTP (oha, a real load generator), beside the same calls made in-process through `Runtime`, all
# from one run on one store. BENCH_BASELINE=<an older hcpx, its hcpx-serve beside it> starts that build's server
# on the same store too, and each round times its rows and this build's in turn (the in-process rows between
# them), so the two servers and the in-process call are compared side by side in one run. Bounded: a fixed
# number of requests per row and of rounds, loopback only.
# Usage: BENCH_N=20000 BENCH_C=16 [BENCH_ROUNDS=3] [BENCH_BASELINE=/path/to/old/hcpx] [BENCH_HCPX=/path/to/hcpx]
#        [BENCH_WRAP=0] [BENCH_INPROCESS=/path/to/a/built/http_inprocess] [BENCH_THIN=/path/to/a/built/http_thin]
#        benches/http.sh
#        Each HTTP row also gives `cpu_us`: the server's CPU time per request over that row (user + system, its
#        threads' and its reaped children's, /proc/PID/stat), which the load generator and the machine's other load
#        move far less than req/s.
#        BENCH_THIN adds a server `thin`: the thinnest hyper server around the same exec_async (benches/http_thin.rs,
#        no auth, log or metrics), the floor any server on this machine could reach.
#        (needs oha: `cargo install oha`; prints Markdown tables)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-20000}"
C="${BENCH_C:-16}"
ROUNDS="${BENCH_ROUNDS:-1}"
WRAP="${BENCH_WRAP:-1}"
command -v oha >/dev/null || { echo "benches/http.sh needs oha: cargo install oha" >&2; exit 2; }

if [ -z "${BENCH_HCPX:-}" ]; then
  cargo build --release --bins >&2
  BENCH_HCPX="$PWD/target/release/hcpx"
fi
if [ -z "${BENCH_INPROCESS:-}" ]; then
  cargo bench --bench http_inprocess --no-run >&2
  BENCH_INPROCESS="$(ls -t target/release/deps/http_inprocess-* | grep -v '\.d$' | head -1)"
fi
echo "load at the start: $(uptime)" >&2

TMP="$(mktemp -d)"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$TMP"
}
trap cleanup EXIT
# Every build runs from a fresh copy (docs/perf.md: the file the linker wrote measured slower than a copy).
copy() { # name binary: a fresh copy of it and its hcpx-serve, its path printed
  mkdir -p "$TMP/$1" && install -m 755 "$2" "$(dirname "$2")/hcpx-serve" "$TMP/$1/" && echo "$TMP/$1/hcpx"
}
HCPX="$(copy this "$BENCH_HCPX")"
if [ -n "${BENCH_BASELINE:-}" ]; then BENCH_BASELINE="$(copy baseline "$BENCH_BASELINE")"; fi
export HCP_HOME="$TMP/home"

P="$TMP/trivial"
. benches/trivial_pack.sh
trivial_pack "$P"
for dir in "$P" packs/transit-composite; do
  "$HCPX" install "$dir" --json > /dev/null
  "$HCPX" activate "$(basename "$dir")" > /dev/null 2>&1
done
TOKEN="$("$HCPX" principal add bench --tenant bench --grant 'verb.exec.read:*' 2>/dev/null)"

# Each server with its access log to a file (as a deployment keeps it), calls limited well above the load.
SERVERS=()
declare -A SPID
start() { # label binary: a server on a free port, added to SERVERS as label=addr
  "$2" serve --listen 127.0.0.1:0 --max-calls 1024 2> "$TMP/$1.log" &
  PIDS+=($!)
  SPID[$1]=$!
  for _ in $(seq 200); do grep -q "listening on" "$TMP/$1.log" 2>/dev/null && break; sleep 0.05; done
  SERVERS+=("$1=$(sed -n 's/.*listening on http:\/\///p' "$TMP/$1.log" | head -1)")
}
if [ -n "${BENCH_BASELINE:-}" ]; then start baseline "$BENCH_BASELINE"; fi
start this "$HCPX"
if [ -n "${BENCH_THIN:-}" ]; then
  install -m 755 "$BENCH_THIN" "$TMP/http_thin"
  HTTP_BENCH_HOME="$HCP_HOME" "$TMP/http_thin" 2> "$TMP/thin.log" &
  PIDS+=($!)
  SPID[thin]=$!
  for _ in $(seq 200); do grep -q "listening on" "$TMP/thin.log" 2>/dev/null && break; sleep 0.05; done
  SERVERS+=("thin=$(sed -n 's/.*listening on http:\/\///p' "$TMP/thin.log" | head -1)")
fi

ticks() { # pid: its CPU time so far (user + system, its threads' and its reaped children's), in clock ticks
  awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat"
}
row() { # server addr label path body n c round
  local before after
  before="$(ticks "${SPID[$1]}")"
  oha --no-tui --output-format json -n "$6" -c "$7" -m POST -T application/json \
    -H "Authorization: Bearer $TOKEN" -d "$5" "http://$2$4" > "$TMP/oha.json"
  after="$(ticks "${SPID[$1]}")"
  python3 - "$1" "$3" "$7" "$8" "$TMP/oha.json" "$((after - before))" "$(getconf CLK_TCK)" "$6" <<'PY'
import json, sys
server, label, c, rnd, path = sys.argv[1:6]
cpu_us = int(sys.argv[6]) / int(sys.argv[7]) * 1e6 / int(sys.argv[8])
d = json.load(open(path))
s, p = d["summary"], d["latencyPercentiles"]
codes = d.get("statusCodeDistribution", {})
print(json.dumps({"round": int(rnd), "call": label, "face": f"HTTP c={c}", "server": server,
                  "rps": round(s["requestsPerSec"]), "p50_us": round(p["p50"] * 1e6, 1),
                  "p99_us": round(p["p99"] * 1e6, 1), "cpu_us": round(cpu_us, 1), "codes": codes}))
PY
}

inprocess() { # round only
  HTTP_BENCH_HOME="$HCP_HOME" HTTP_BENCH_N="$N" HTTP_BENCH_C="$C" HTTP_BENCH_ONLY="$2" \
    "$BENCH_INPROCESS" --bench 2>/dev/null | grep '^{' | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l); r["round"] = int(sys.argv[1]); r["server"] = "in-process"; print(json.dumps(r))' "$1"
}

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg), $ROUNDS round(s), N=$N, c=$C" >&2
for r in $(seq "$ROUNDS"); do
  for s in "${SERVERS[@]}"; do
    row "${s%%=*}" "${s#*=}" "composite read" /v1/exec/transit-composite/plan '{"from":"A","to":"B"}' 2000 1 "$r"
    row "${s%%=*}" "${s#*=}" "composite read" /v1/exec/transit-composite/plan '{"from":"A","to":"B"}' "$N" "$C" "$r"
    if [ "$WRAP" = 1 ]; then
      row "${s%%=*}" "${s#*=}" "wrap read" /v1/exec/trivial/ping '{}' 300 1 "$r"
      row "${s%%=*}" "${s#*=}" "wrap read" /v1/exec/trivial/ping '{}' "$((N / 10))" "$C" "$r"
    fi
  done
  if [ "$WRAP" = 1 ]; then inprocess "$r" ""; else inprocess "$r" composite; fi
done > "$TMP/rows.jsonl"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

python3 - "$TMP/rows.jsonl" "$C" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
c = sys.argv[2]
print("| round | call | server | face | req/s | p50 µs | p99 µs | server CPU µs/request |")
print("|------:|------|--------|------|------:|-------:|-------:|------:|")
for r in rows:
    rps = r.get("rps", r.get(f"rps_c{c}", ""))
    face = r["face"] if r["face"] != "in-process exec" else f"exec (p50/p99 sequential, req/s exec_async c={c})"
    print(f"| {r['round']} | {r['call']} | {r['server']} | {face} | {rps} | {r['p50_us']} | {r['p99_us']} | {r.get('cpu_us', '')} |")
    if r.get("codes") and set(r["codes"]) != {"200"}:
        print(f"|   |   |   | statuses | {r['codes']} | | |")
# Per round: each server's HTTP c=C req/s over the in-process exec_async c=C of the same round.
print()
print(f"| round | call | server | HTTP c={c} req/s / in-process c={c} req/s | p99 µs |")
print("|------:|------|--------|------:|------:|")
for r in rows:
    if r["server"] == "in-process" or r["face"] != f"HTTP c={c}":
        continue
    ref = [x for x in rows if x["server"] == "in-process" and x["round"] == r["round"]
           and x["call"] == r["call"] and f"rps_c{c}" in x]
    if ref:
        print(f"| {r['round']} | {r['call']} | {r['server']} | {r['rps'] / ref[0][f'rps_c{c}']:.3f} | {r['p99_us']} |")
PY
