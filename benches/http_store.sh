#!/usr/bin/env bash
# Why: requests per second and p50/p99 of a composite read and a confirmed write over loopback HTTP, with the
# file store (one replica) and the PostgreSQL store (one and three replicas), side by side in one run (docs/perf.md).
# The database is a throwaway cluster in a temp dir on a loopback port; each row is a bounded run of wrk
# (Debian's `wrk`), spread over the replicas by one wrk per replica.
# Usage: BENCH_SECS=5 BENCH_C=16 benches/http_store.sh   (prints a Markdown table)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${BENCH_SECS:-5}"
C="${BENCH_C:-16}"
command -v wrk >/dev/null || { echo "benches/http_store.sh needs wrk: apt-get install wrk" >&2; exit 2; }
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "benches/http_store.sh needs PostgreSQL: bash scripts/setup.sh" >&2; exit 2; }

cargo build --release --bins >&2
HCPX="$PWD/target/release/hcpx"
TMP="$(mktemp -d)"
chmod 755 "$TMP"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$TMP/pg/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$TMP/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
# initdb and postgres refuse root: run them as the `postgres` user the package creates.
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

mkdir -p "$TMP/pg" && [ "$(id -u)" = 0 ] && chown postgres "$TMP/pg"
as_pg "$PGBIN/initdb" -D "$TMP/pg" -A trust -U postgres >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg "$PGBIN/pg_ctl" -D "$TMP/pg" -l "$TMP/pg/log" -w \
  -o "-p $PORT -k $TMP/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
"$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -c 'CREATE DATABASE bench' postgres
DB="postgres://postgres@127.0.0.1:$PORT/bench"
head -c 32 /dev/urandom > "$TMP/seal.key" && chmod 600 "$TMP/seal.key"
export HCP_SEAL_KEY_FILE="$TMP/seal.key"

# transit-composite with `follow` a confirm-gated write, as pack transit-db.
PACK="$TMP/transit-db"
cp -r packs/transit-composite "$PACK"
rm -f "$PACK/hcp.eval.json"
python3 - "$PACK" <<'PY'
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/surface.json")); s["id"] = "transit-db"; json.dump(s, open(f"{d}/surface.json", "w"))
p = json.load(open(f"{d}/policy.json")); p["surface_id"] = "transit-db"
p["verbs"]["follow"] = {"operation": "write", "confirm": True, "privacy": {"land": "public"}}
json.dump(p, open(f"{d}/policy.json", "w"))
PY

setup() { # store-url-or-files home -> prints the token
  local store="$1" home="$2"
  HCP_STORE="$store" HCP_HOME="$home" "$HCPX" install "$PACK" --json >/dev/null
  HCP_STORE="$store" HCP_HOME="$home" "$HCPX" activate transit-db >/dev/null 2>&1
  HCP_STORE="$store" HCP_HOME="$home" "$HCPX" principal add bench --tenant bench \
    --grant 'verb.exec.read:*' --grant 'verb.exec.write:*' 2>/dev/null
}
start() { # store home: starts a replica (not in a subshell, so its pid is kept); `addr home` prints its address
  local store="$1" home="$2"
  HCP_STORE="$store" HCP_HOME="$home" "$HCPX" serve --listen 127.0.0.1:0 --max-calls 1024 \
    > /dev/null 2> "$home.log" &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$home.log" 2>/dev/null && break; sleep 0.05; done
}
addr() { sed -n 's/.*listening on http:\/\///p' "$1.log" | head -1; }

cat > "$TMP/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("TOKEN")
wrk.body = os.getenv("BODY")
local n = 0
request = function()
  n = n + 1
  if (os.getenv("UNIQUE") or "") ~= "" then
    return wrk.format(nil, nil, nil, string.format(os.getenv("BODY"), math.random(1, 1000000000)))
  end
  return wrk.format()
end
done = function(summary, latency, requests)
  io.write(string.format("JSON {\"requests\":%d,\"secs\":%f,\"non2xx\":%d,\"p50\":%f,\"p99\":%f}\n",
    summary.requests, summary.duration / 1e6, summary.errors.status, latency:percentile(50), latency:percentile(99)))
end
LUA

row() { # label store-label token body unique addrs...
  local label="$1" storelabel="$2" token="$3" body="$4" unique="$5"; shift 5
  local n=$#; local outs=()
  local i=0
  for a in "$@"; do
    # C connections in all, split as evenly as the replicas allow.
    local per=$(( C / n + (i < C % n ? 1 : 0) ))
    TOKEN="$token" BODY="$body" UNIQUE="$unique" wrk -t 1 -c "$per" -d "${SECS}s" -s "$TMP/post.lua" \
      "http://$a$PATH_" > "$TMP/wrk.$i" 2>&1 &
    outs+=($!); i=$((i + 1))
  done
  for p in "${outs[@]}"; do wait "$p"; done
  python3 - "$label" "$storelabel" "$n" "$C" "$TMP" "$i" <<'PY'
import json, sys
label, store, n, c, tmp, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6])
rows = []
for i in range(k):
    for line in open(f"{tmp}/wrk.{i}"):
        if line.startswith("JSON "):
            rows.append(json.loads(line[5:]))
rps = sum(r["requests"] / r["secs"] for r in rows)
bad = sum(r["non2xx"] for r in rows)
p50 = max(r["p50"] for r in rows) / 1000
p99 = max(r["p99"] for r in rows) / 1000
print(f"| {label} | {store} | {n} | {c} | {rps:,.0f} | {p50:.2f} ms | {p99:.2f} ms | {bad} |")
PY
}

FILES_HOME="$TMP/files"
FT="$(setup files "$FILES_HOME")"
PT="$(setup "$DB" "$TMP/pg-admin")"
start files "$FILES_HOME"
for r in r1 r2 r3; do start "$DB" "$TMP/pg-$r"; done
F1="$(addr "$FILES_HOME")" P1="$(addr "$TMP/pg-r1")" P2="$(addr "$TMP/pg-r2")" P3="$(addr "$TMP/pg-r3")"

READ='{"from":"A","to":"B"}'
WRITE='{"option":"opt-%d","confirm":true}'
# Warm each replica (its compile cache, its pool, the pack's files in its home) before anything is measured.
for a in "$F1" "$P1" "$P2" "$P3"; do
  t="$PT"; [ "$a" = "$F1" ] && t="$FT"
  for _ in 1 2 3; do
    curl -s -o /dev/null -X POST -H "Authorization: Bearer $t" -H 'Content-Type: application/json' -d "$READ" "http://$a/v1/exec/transit-db/plan"
    curl -s -o /dev/null -X POST -H "Authorization: Bearer $t" -H 'Content-Type: application/json' \
      -d '{"option":"opt-1","confirm":true}' "http://$a/v1/exec/transit-db/follow"
  done
done
echo "| call | store | replicas | c | req/s | p50 | p99 | non-2xx |"
echo "|---|---|---:|---:|---:|---:|---:|---:|"
PATH_=/v1/exec/transit-db/plan
row "composite read" files "$FT" "$READ" "" "$F1"
row "composite read" postgres "$PT" "$READ" "" "$P1"
row "composite read" postgres "$PT" "$READ" "" "$P1" "$P2" "$P3"
PATH_=/v1/exec/transit-db/follow
row "confirmed write (audited)" files "$FT" "$WRITE" 1 "$F1"
row "confirmed write (audited)" postgres "$PT" "$WRITE" 1 "$P1"
row "confirmed write (audited)" postgres "$PT" "$WRITE" 1 "$P1" "$P2" "$P3"
# Every write acknowledged above has its row: the chains verify.
HCP_STORE="$DB" HCP_HOME="$TMP/pg-admin" "$HCPX" audit verify >&2
HCP_HOME="$FILES_HOME" "$HCPX" audit verify >&2
