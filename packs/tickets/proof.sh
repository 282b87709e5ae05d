#!/usr/bin/env bash
# The tickets pack's proof script: a wrap over curl calling an HTTP API with a host-bound credential. It makes a
# throwaway test CA and a certificate for tickets.test, starts the example API (server.py) on a free port of
# 127.0.0.1, and runs a copy of the pack whose port is that one (the pack declares tickets.test:9443). hcpx
# maps tickets.test to 127.0.0.1 (sandbox.json egress) and trusts the test CA (SSL_CERT_FILE); curl in the
# sandbox goes through the call's proxy (HTTPS_PROXY, CURL_CA_BUNDLE, set by the runtime) and holds only a
# placeholder. Checks: lint, install, list, the confirm gate on create, a confirmed create, every eval case; the
# API saw the real token on each request, and nothing hcpx printed or audited holds it.
# Runs against a temp HCP_HOME unless one is given.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${HCPX:-hcpx}"
PYTHON="${PYTHON:-$(command -v python3)}"
tmp="$(mktemp -d)"
if [ -z "${HCP_HOME:-}" ]; then
  HCP_HOME="$tmp/home"
fi
export HCP_HOME
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
  [ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
pack="${1:-tickets}"
src="$here/../$pack"

# 1. a throwaway CA and a server certificate for tickets.test
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=tickets proof test ca" \
  -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=tickets.test" -keyout "$tmp/server.key" -out "$tmp/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:tickets.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$tmp/ext.cnf"
openssl x509 -req -in "$tmp/server.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial -days 2 \
  -extfile "$tmp/ext.cnf" -out "$tmp/server.pem" 2>/dev/null

# 2. the API on a free loopback port, with a fresh token
token="tk-proof-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$token" > "$tmp/token"
"$PYTHON" "$here/server.py" --cert "$tmp/server.pem" --key "$tmp/server.key" --token-file "$tmp/token" \
  --port-file "$tmp/port" --seen "$tmp/seen.log" --lifetime 300 &
server=$!
for _ in $(seq 1 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { echo "the example API did not start (python3 packs/tickets/server.py)" >&2; exit 1; }
port="$(cat "$tmp/port")"

# 3. the pack with that port (copied: the pack declares 9443)
cp -r "$src" "$tmp/pack"
sed -i "s/tickets\.test:9443/tickets.test:$port/g" "$tmp/pack/surface.json" "$tmp/pack/fixture.sh"
"$HCPX" lint "$tmp/pack" --json > /dev/null
"$HCPX" install "$tmp/pack" --json > /dev/null
"$HCPX" activate "$pack" --json > /dev/null
printf '%s' "$token" | "$HCPX" credential set "$pack" token > /dev/null 2>&1
mkdir -p "$HCP_HOME"
cat > "$HCP_HOME/sandbox.json" <<JSON
{ "egress": { "hosts": { "tickets.test": ["127.0.0.1"] }, "internal": ["tickets.test"] } }
JSON
"$HCPX" allow-host "$pack" "tickets.test:$port" --json > /dev/null
export SSL_CERT_FILE="$tmp/ca.pem"
# every rule and the eval cases: nothing to fix, warnings fail too (docs/spec.md §21)
"$HCPX" check "$tmp/pack" --strict > /dev/null

# 4. the commands, from the fixture project
bash "$tmp/pack/fixture.sh" "$tmp/project"
cd "$tmp/project"
out="$tmp/out.log"
# hcpx's answer to one call, kept in $out for the final check; then grep it.
call() { "$HCPX" "$@" > "$tmp/last" || true; cat "$tmp/last" >> "$out"; }
call exec "$pack" list --json
grep -q '"Login page times out"' "$tmp/last"
call exec "$pack" create new-ticket.json --json
grep -q '"confirm required"' "$tmp/last"
call exec "$pack" create --json -- file=new-ticket.json confirm=true
grep -q '"id": "T-3"' "$tmp/last"
call exec "$pack" list --json
grep -q '"Search ignores accents"' "$tmp/last"

# 5. every eval case
"$HCPX" eval "$tmp/pack" > "$tmp/last" 2>&1 || { cat "$tmp/last"; exit 1; }
cat "$tmp/last" >> "$out"

# 6. the API saw the real token on every request, never a placeholder; hcpx never showed it
grep -q "auth=Bearer $token" "$tmp/seen.log"
if grep -v "auth=Bearer $token\$" "$tmp/seen.log"; then echo "a request reached the API without the token" >&2; exit 1; fi
if grep -q "hcpx-ph-" "$tmp/seen.log"; then echo "a placeholder reached the API" >&2; exit 1; fi
"$HCPX" audit --json >> "$out"
"$HCPX" audit --egress --json > "$tmp/last"
cat "$tmp/last" >> "$out"
# (only the credential store itself holds it)
if grep -rqF --exclude-dir=credentials "$token" "$out" "$HCP_HOME"; then
  echo "the token is in hcpx's output, audit log or home" >&2
  exit 1
fi
# each request to the API is an audit row (list, create, list)
test "$(grep -c '"rule": "https://tickets.test:'"$port"'"' "$tmp/last")" -ge 3
echo "$pack proof: ok"
