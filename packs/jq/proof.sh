#!/usr/bin/env bash
# The jq pack's proof script: lint, install, allow the bare bin, eval in a fixture project, reads, and the
# twin-face check against jq run directly. Runs against a temp HCP_HOME unless one is given.
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
"$HCPX" activate jq --json
"$HCPX" allow jq --json

# project mode: jq runs in the caller's directory, so work from a fixture project
bash "$here/fixture.sh" "$tmp/project"
cd "$tmp/project"

# 1. every eval case, from the project
"$HCPX" eval "$here"
# every rule, with probes: nothing to fix, warnings fail too (docs/spec.md §21)
"$HCPX" check "$here" --probe --strict --no-eval

# 2. reads: bare words fill x-position arguments, k=v the rest
"$HCPX" exec jq get inventory.json items.0.sku --json | grep -q '"result": "A-100"'
"$HCPX" exec jq count --json -- file=inventory.json path=items | grep -q '"result": 3'

# 3. the twin-face check: jq run directly and through hcpx give the same result
jq -c '[.items[] | .sku]' inventory.json | jq -S . > "$tmp/cli.json"
"$HCPX" exec jq filter --json -- file=inventory.json 'filter=[.items[] | .sku]' | jq -S .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"

# 4. a filter that looks like a flag is refused before jq runs
set +o pipefail
"$HCPX" exec jq filter --json -- file=inventory.json filter=--slurp | grep -q '"invalid_args"'
set -o pipefail

# 5. availability shows the four flags
"$HCPX" availability jq --json | grep -q '"runnable": true'
echo "jq proof: ok"
