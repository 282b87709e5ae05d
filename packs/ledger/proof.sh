#!/usr/bin/env bash
# The ledger pack's proof script (docs/spec.md §21): lint, install, a read, a live confirm deny,
# the confirmed write, availability. Runs against a temp HCP_HOME unless one is given.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${HCPX:-hcpx}"
if [ -z "${HCP_HOME:-}" ]; then
  HCP_HOME="$(mktemp -d)"
  trap 'rm -rf "$HCP_HOME"' EXIT
fi
export HCP_HOME

"$HCPX" lint "$here" --json
"$HCPX" install "$here" --json
"$HCPX" activate ledger --json

# 1. one read
"$HCPX" exec ledger list --json

# 2. gated write without confirm: live deny
set +o pipefail
"$HCPX" exec ledger transfer --json -- amount=2.80 payee=demo-transit | grep -q '"confirm required"'
set -o pipefail

# 3. the same write with confirm; the ledger keeps its state in its own workspace
"$HCPX" exec ledger transfer --json -- amount=2.80 payee=demo-transit confirm=true | grep -q '"balance": "97.20"'
test -f "$HCP_HOME/workspaces/ledger/ledger-store.json"
"$HCPX" exec ledger list --json | grep -q '"payee": "demo-transit"'

# 4. availability shows the four flags
"$HCPX" availability ledger --json | grep -q '"runnable": true'

# 5. Sense: the trigger is declared with its stimuli row (delivery arrives with Sense support).
echo "ledger proof: ok"
