#!/usr/bin/env bash
# The sqlite pack's proof script: lint, install, allow the bare bin, eval in a fixture project, reads, the
# twin-face check, a live confirm deny and the confirmed drop of a scratch table. Temp HCP_HOME unless given.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${HCPX:-hcpx}"
tmp="$(mktemp -d)"
if [ -z "${HCP_HOME:-}" ]; then
  HCP_HOME="$tmp/home"
fi
export HCP_HOME
trap 'rm -rf "$tmp"' EXIT

"$HCPX" lint "$here" --json
"$HCPX" install "$here" --json
"$HCPX" activate sqlite --json
"$HCPX" allow sqlite3 --json

# project mode: sqlite3 runs in the caller's directory, so work from a fixture project
bash "$here/fixture.sh" "$tmp/project"
cd "$tmp/project"

# 1. every eval case, from the project
"$HCPX" eval "$here"
# every rule, with probes: nothing to fix, warnings fail too (docs/spec.md §21)
"$HCPX" check "$here" --probe --strict --no-eval

# 2. reads: bare words fill x-position arguments
"$HCPX" exec sqlite count shop.db products --json | grep -q '"rows": 3'
"$HCPX" exec sqlite tables --json -- database=shop.db | grep -q '"name": "scratch"'

# 3. the twin-face check: sqlite3 run directly and through hcpx give the same rows
sql='SELECT name, price_cents FROM products ORDER BY id'
sqlite3 -readonly -safe shop.db "$sql" -json | jq -S . > "$tmp/cli.json"
"$HCPX" exec sqlite query shop.db "$sql" --json | jq -S .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"

# 4. the gated write without confirm: live deny, and the table is still there
set +o pipefail
"$HCPX" exec sqlite table.drop shop.db scratch --json | grep -q '"confirm required"'
set -o pipefail
test "$(sqlite3 shop.db "SELECT count(*) FROM sqlite_schema WHERE name = 'scratch'")" = 1

# 5. the same write with confirm drops it
"$HCPX" exec sqlite table.drop shop.db scratch confirm=true --json | grep -q '"dropped": "scratch"'
test "$(sqlite3 shop.db "SELECT count(*) FROM sqlite_schema WHERE name = 'scratch'")" = 0

# 6. availability shows the four flags
"$HCPX" availability sqlite --json | grep -q '"runnable": true'
echo "sqlite proof: ok"
