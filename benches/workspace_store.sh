#!/usr/bin/env bash
# Why: what keeping a `workspace`-mode pack's directory in PostgreSQL costs per call (#38 point 3: the copy
# brought to the stored version before the call, the directory stored after it when it changed). First in
# process, interleaved call by call (crates/hcpx-store/benches/workspace.rs: the turn alone, as before, beside
# the turn with the workspace kept). Then, with OLD_HCPX (an hcpx from before, its hcpx-serve beside it), end
# to end beside it: a tiny wrap pack (`tally`: one file, a count) called N times in a row over HTTP keep-alive,
# a read (`get`, nothing changes), a write (`add`, a new version each call) on one replica, and the write
# alternating between two replicas (each call's copy one version behind: the archive fetched every call).
# Usage: [OLD_HCPX=/path/to/old/hcpx] [HCPX=target/release/hcpx] BENCH_N=200 benches/workspace_store.sh
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-200}"
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)"
[ -x "$PGBIN/initdb" ] || { echo "benches/workspace_store.sh needs PostgreSQL: bash scripts/setup.sh" >&2; exit 2; }
if [ -n "${OLD_HCPX:-}" ] && [ -z "${HCPX:-}" ]; then cargo build --release --bins >&2; HCPX="$PWD/target/release/hcpx"; fi
TMP="$(mktemp -d)"
chmod 755 "$TMP"
PIDS=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  [ -f "$TMP/pg/postmaster.pid" ] && as_pg "$PGBIN/pg_ctl" -D "$TMP/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/pg" && [ "$(id -u)" = 0 ] && chown postgres "$TMP/pg"
as_pg "$PGBIN/initdb" -D "$TMP/pg" -A trust -U postgres >/dev/null
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
as_pg "$PGBIN/pg_ctl" -D "$TMP/pg" -l "$TMP/pg/log" -w \
  -o "-p $PORT -k $TMP/pg -c listen_addresses=127.0.0.1" start >/dev/null
for db in inproc old new; do "$PGBIN/psql" -X -q -h 127.0.0.1 -p "$PORT" -U postgres -c "CREATE DATABASE $db" postgres; done
head -c 32 /dev/urandom > "$TMP/seal.key" && chmod 600 "$TMP/seal.key"
export HCP_SEAL_KEY_FILE="$TMP/seal.key"

WS_BENCH_URL="postgres://postgres@127.0.0.1:$PORT/inproc" WS_BENCH_N="${BENCH_N_INPROC:-400}" \
  cargo bench -p hcpx-store --bench workspace 2>${WS_BENCH_ERR:-/dev/null}
echo
[ -x "${OLD_HCPX:-}" ] || exit 0

PACK="$TMP/tally"
mkdir -p "$PACK/bin"
cat > "$PACK/surface.json" <<'JSON'
{ "id": "tally", "name": "Tally", "kind": "wrap", "cliBin": "tally", "binding": { "mode": "public" },
  "wrap": { "bin": "./bin/tally", "json_flag": [], "workspace": { "mode": "workspace" } },
  "verbs": { "add": { "description": "Count one more.", "cli": ["tally", "add"] },
             "get": { "description": "Read the count.", "cli": ["tally", "get"] } } }
JSON
echo '{ "surface_id": "tally", "verbs": { "add": { "operation": "write" }, "get": { "operation": "read" } } }' > "$PACK/policy.json"
printf '# Tally\n\nCounts in its workspace.\n' > "$PACK/HARNESS.md"
cat > "$PACK/bin/tally" <<'SH'
#!/bin/sh
n=$(cat count 2>/dev/null || echo 0)
[ "$1" = add ] && { n=$((n + 1)); echo "$n" > count; }
echo "{\"count\":$n}"
SH
chmod 755 "$PACK/bin/tally"

start() { # binary store home
  HCP_STORE="$2" HCP_HOME="$3" "$1" serve --listen 127.0.0.1:0 > /dev/null 2> "$3.log" &
  PIDS+=($!)
  for _ in $(seq 200); do grep -q "listening on" "$3.log" 2>/dev/null && break; sleep 0.05; done
}
addr() { sed -n 's/.*listening on http:\/\///p' "$1.log" | head -1; }

echo "| hcpx | call | replicas | calls | mean | p50 | p90 |"
echo "|---|---|---:|---:|---:|---:|---:|"
for which in old new; do
  BIN="$HCPX"; [ "$which" = old ] && BIN="$OLD_HCPX"
  DB="postgres://postgres@127.0.0.1:$PORT/$which"
  export HCP_STORE="$DB"
  HCP_HOME="$TMP/$which-admin" "$BIN" install "$PACK" --json >/dev/null
  HCP_HOME="$TMP/$which-admin" "$BIN" activate tally >/dev/null 2>&1
  TOKEN=$(HCP_HOME="$TMP/$which-admin" "$BIN" principal add bench --tenant bench \
    --grant 'verb.exec.read:*' --grant 'verb.exec.write:*' 2>/dev/null)
  unset HCP_STORE
  start "$BIN" "$DB" "$TMP/$which-r1"; start "$BIN" "$DB" "$TMP/$which-r2"
  python3 - "$which" "$N" "$TOKEN" "$(addr "$TMP/$which-r1")" "$(addr "$TMP/$which-r2")" <<'PY'
import http.client, json, statistics, sys, time
which, n, token, a1, a2 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
conns = {a: http.client.HTTPConnection(a) for a in (a1, a2)}
def call(a, verb):
    c = conns[a]
    c.request("POST", f"/v1/exec/tally/{verb}", body="{}",
              headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    r = c.getresponse(); body = json.loads(r.read())
    assert r.status == 200 and body.get("ok"), body
    return body
def row(label, verb, addrs):
    for i in range(5):
        call(addrs[i % len(addrs)], verb)
    ms = []
    for i in range(n):
        t = time.perf_counter(); call(addrs[i % len(addrs)], verb); ms.append((time.perf_counter() - t) * 1000)
    ms.sort()
    print(f"| {which} | {label} | {len(addrs)} | {n} | {statistics.mean(ms):.2f} ms | {ms[n // 2]:.2f} ms | {ms[n * 9 // 10]:.2f} ms |")
row("read (`get`)", "get", [a1])
row("write (`add`)", "add", [a1])
row("write (`add`), alternating", "add", [a1, a2])
got = call(a2, "get")["result"]["count"]
print(f"<!-- {which}: count on replica 2 after the run: {got} -->")
PY
done
