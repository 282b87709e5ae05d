#!/usr/bin/env bash
# The transit-composite pack's proof script: lint, install, reads through the WASI component, and the
# twin-face check against the wrap `transit` pack (same arguments, same result). Temp HCP_HOME unless given.
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
"$HCPX" install "$here/../transit" --json
"$HCPX" activate transit-composite transit --json

# 1. reads, in-process
"$HCPX" exec transit-composite plan A B --json | grep -q '"optionId": "opt-1"'
"$HCPX" exec transit-composite status --json

# 2. twin face: the composite and the wrap pack return the same result for the same arguments
for call in "plan from=A to=B" "find query=Central" "show option=opt-2" "follow option=opt-3" "status"; do
  set -- $call
  verb="$1"; shift
  "$HCPX" exec transit "$verb" --json -- "$@" | jq -S .result > "$tmp/wrap.json"
  "$HCPX" exec transit-composite "$verb" --json -- "$@" | jq -S .result > "$tmp/composite.json"
  diff "$tmp/wrap.json" "$tmp/composite.json"
done

# 3. availability shows the four flags
"$HCPX" availability transit-composite --json | grep -q '"runnable": true'
echo "transit-composite proof: ok"
