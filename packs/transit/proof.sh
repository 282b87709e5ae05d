#!/usr/bin/env bash
# The transit pack's proof script: lint, install, reads (bare words and k=v), and the twin-face check.
# Runs against a temp HCP_HOME unless one is given.
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
"$HCPX" activate transit --json

# 1. reads: positional bare words fill x-position arguments
"$HCPX" exec transit plan A B --json | grep -q '"optionId": "opt-1"'
"$HCPX" exec transit find --json -- query=Central | grep -q '"Central Park"'
"$HCPX" exec transit status --json

# 2. the twin-face check: both faces return the same result for the same arguments
"$here/bin/transit.mjs" plan A B --json | jq -S . > "$tmp/cli.json"
"$HCPX" exec transit plan --json -- from=A to=B | jq -S .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"

# 3. an unknown argument is refused before anything runs
set +o pipefail
"$HCPX" exec transit plan --json -- from=A to=B via=C | grep -q '"invalid_args"'
set -o pipefail

# 4. availability shows the four flags
"$HCPX" availability transit --json | grep -q '"runnable": true'
echo "transit proof: ok"
