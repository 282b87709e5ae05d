#!/usr/bin/env bash
# The ip pack's proof script: lint, install, allow the bare bin, eval, reads, and the twin-face check
# against ip run directly. ip needs no fixture: it reads the machine's own network state.
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
"$HCPX" activate ip --json
"$HCPX" allow ip --json
# ip reads interfaces, addresses and routes over netlink (its manifest says so in wrap.network)
"$HCPX" allow-network ip netlink --json

# 1. every eval case
"$HCPX" eval "$here"
# every rule, with probes: nothing to fix, warnings fail too (docs/spec.md §21)
"$HCPX" check "$here" --probe --strict --no-eval

# 2. reads: a bare word fills the x-position argument
"$HCPX" exec ip link.show lo --json | grep -q '"ifname": "lo"'
"$HCPX" exec ip rules --json | grep -q '"table": "main"'

# 3. the twin-face check: ip run directly and through hcpx give the same result
ip -json -details link show dev lo | jq -S . > "$tmp/cli.json"
"$HCPX" exec ip link.show --json -- device=lo | jq -S .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"
ip -json rule show | jq -S . > "$tmp/cli.json"
"$HCPX" exec ip rules --json | jq -S .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"

# 4. a value that looks like a flag is refused before ip runs
set +o pipefail
"$HCPX" exec ip route.get --json -- destination=--version | grep -q '"invalid_args"'
set -o pipefail

# 5. availability shows the four flags
"$HCPX" availability ip --json | grep -q '"runnable": true'
echo "ip proof: ok"
