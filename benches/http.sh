#!/usr/bin/env bash
# Why: requests per second and p50/p99 latency of `hcpx serve` for a composite read and a wrap read over
# loopback HTTP (oha, a real load generator), beside the same calls made in-process through `Runtime`, all
# from one run on one store. Bounded: a fixed number of requests per row, loopback only.
# Usage: BENCH_N=20000 BENCH_C=16 benches/http.sh   (needs oha: `cargo install oha`; prints a Markdown table)
#   BENCH_BASELINE=/path/to/an/older/hcpx (its hcpx-serve beside it) also serves that build, on a store of its
#   own, and hits both servers in alternating rows (BENCH_ROUNDS rounds, default 3, the order turned round every
#   other round) for the wrap read and the composite read at c=BENCH_C, with the ratio of each pair.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-20000}"
C="${BENCH_C:-16}"
command -v oha >/dev/null || { echo "benches/http.sh needs oha: cargo install oha" >&2; exit 2; }

cargo build --release --bins >&2
cargo bench --bench http_inprocess --no-run >&2
echo "load at the start: $(uptime)" >&2
TMP="$(mktemp -d)"
SERVER=""
BASE_SERVER=""
trap '[ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; [ -n "$BASE_SERVER" ] && kill "$BASE_SERVER" 2>/dev/null; rm -rf "$TMP"' EXIT
# Both builds run from fresh copies (docs/perf.md: the file the linker wrote measured slower than a copy).
mkdir -p "$TMP/bin" "$TMP/base"
install -m 755 target/release/hcpx target/release/hcpx-serve "$TMP/bin/"
HCPX="$TMP/bin/hcpx"
BASE=""
if [ -n "${BENCH_BASELINE:-}" ]; then
  install -m 755 "$BENCH_BASELINE" "$(dirname "$BENCH_BASELINE")/hcpx-serve" "$TMP/base/"
  BASE="$TMP/base/hcpx"
fi
export HCP_HOME="$TMP/home"

P="$TMP/trivial"
. benches/trivial_pack.sh
trivial_pack "$P"
prepare() { # BIN HOME: the store with both packs and a token
  for dir in "$P" packs/transit-composite; do
    HCP_HOME="$2" "$1" install "$dir" --json > /dev/null
    HCP_HOME="$2" "$1" activate "$(basename "$dir")" > /dev/null 2>&1
  done
  HCP_HOME="$2" "$1" principal add bench --tenant bench --grant 'verb.exec.read:*' 2>/dev/null
}
TOKEN="$(prepare "$HCPX" "$HCP_HOME")"

start_server() { # BIN HOME LOG: its access log to a file (as a deployment keeps it), calls limited well above the load
  HCP_HOME="$2" "$1" serve --listen 127.0.0.1:0 --max-calls 1024 2> "$3" &
  STARTED=$!
  for _ in $(seq 100); do grep -q "listening on" "$3" 2>/dev/null && break; sleep 0.05; done
}
start_server "$HCPX" "$HCP_HOME" "$TMP/serve.log"
SERVER=$STARTED
ADDR="$(sed -n 's/.*listening on http:\/\///p' "$TMP/serve.log" | head -1)"
if [ -n "$BASE" ]; then
  BASE_TOKEN="$(prepare "$BASE" "$TMP/home-base")"
  start_server "$BASE" "$TMP/home-base" "$TMP/serve-base.log"
  BASE_SERVER=$STARTED
  BASE_ADDR="$(sed -n 's/.*listening on http:\/\///p' "$TMP/serve-base.log" | head -1)"
fi

row() { # label path body n c [addr token]
  oha --no-tui --output-format json -n "$4" -c "$5" -m POST -T application/json \
    -H "Authorization: Bearer ${7:-$TOKEN}" -d "$3" "http://${6:-$ADDR}$2" > "$TMP/oha.json"
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
  if [ -n "$BASE" ]; then
    for r in $(seq "${BENCH_ROUNDS:-3}"); do
      for side in $( [ $((r % 2)) = 1 ] && echo "new base" || echo "base new"); do
        if [ "$side" = base ]; then a=("$BASE_ADDR" "$BASE_TOKEN"); l="baseline "; else a=("$ADDR" "$TOKEN"); l=""; fi
        row "${l}wrap read, round $r" /v1/exec/trivial/ping '{}' "$((N / 10))" "$C" "${a[@]}"
        row "${l}composite read, round $r" /v1/exec/transit-composite/plan '{"from":"A","to":"B"}' "$N" "$C" "${a[@]}"
      done
    done
  fi
} > "$TMP/rows.jsonl"
LOAD_END="$(uptime)"
echo "load at the end: $LOAD_END" >&2

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
# Each round's pair, this build over the baseline (req/s, and p50 the other way round).
pairs = {}
for r in rows:
    if ", round " in r["call"]:
        label = r["call"].removeprefix("baseline ")
        pairs.setdefault(label, {})["base" if r["call"].startswith("baseline ") else "new"] = r
if pairs:
    print("\n| call, round | req/s, this build / baseline | p50, baseline / this build |")
    print("|---|---:|---:|")
    for label, p in pairs.items():
        if "base" in p and "new" in p:
            print(f"| {label} | {p['new']['rps'] / p['base']['rps']:.2f}x | {p['base']['p50_us'] / p['new']['p50_us']:.2f}x |")
PY
