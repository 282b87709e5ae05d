#!/usr/bin/env bash
# The {{id}} pack's proof: lint, install and activate in a throw-away store (unless HCP_HOME is given), then
# each read through the component, checking what it returns.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
HCPX="${HCPX:-hcpx}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export HCP_HOME="${HCP_HOME:-$tmp/home}"

"$HCPX" lint "$here"
"$HCPX" install "$here"
"$HCPX" activate {{id}}
"$HCPX" exec {{id}} greet --json -- name=Ada | grep -q '"greeting": "Hello, Ada!"'
"$HCPX" exec {{id}} count --json -- 'phrase=two words' | grep -q '"words": 2'
echo "{{id}} proof: ok"
