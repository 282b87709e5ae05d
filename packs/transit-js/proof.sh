#!/usr/bin/env bash
# The transit-js pack's proof script: build the component if it is not built, lint, install, reads through the
# component, and the twin face against the wrap `transit` pack and the Rust `transit-composite` (same arguments,
# same result envelope). Temp HCP_HOME unless given.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${HCPX:-hcpx}"
tmp="$(mktemp -d)"
if [ -z "${HCP_HOME:-}" ]; then
  HCP_HOME="$tmp/home"
fi
export HCP_HOME
trap 'rm -rf "$tmp"' EXIT

[ -f "$here/adapter.wasm" ] || "$here/build.sh"
"$HCPX" lint "$here" --json
"$HCPX" install "$here" --json
"$HCPX" install "$here/../transit" --json
"$HCPX" install "$here/../transit-composite" --json
"$HCPX" activate transit-js transit transit-composite --json

# 1. reads, in-process
"$HCPX" exec transit-js plan A B --json | grep -q '"optionId": "opt-1"'
"$HCPX" exec transit-js status --json

# 2. twin face: the same result (and title) from the wrap, the Rust composite and this one, for the same arguments
for call in "plan from=A to=B" "find query=Central" "find query=park" "show option=opt-2" "follow option=opt-3" "status"; do
  set -- $call
  verb="$1"; shift
  for id in transit transit-composite transit-js; do
    "$HCPX" exec "$id" "$verb" --json -- "$@" | jq -S '{ok, result, title}' > "$tmp/$id.json"
  done
  diff "$tmp/transit.json" "$tmp/transit-js.json"
  diff "$tmp/transit-composite.json" "$tmp/transit-js.json"
done
# A malformed option id fails on both composites with the same code and message.
for id in transit-composite transit-js; do
  "$HCPX" exec "$id" show --json -- option=one | jq -S '{ok, code, error}' > "$tmp/$id.json" || true
done
diff "$tmp/transit-composite.json" "$tmp/transit-js.json"

# 3. availability shows the four flags
"$HCPX" availability transit-js --json | grep -q '"runnable": true'
echo "transit-js proof: ok"
