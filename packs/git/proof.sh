#!/usr/bin/env bash
# The git pack's proof script: lint, install, allow the bare bin, eval in a fixture repository, reads, and
# the twin-face check against git run directly. Runs against a temp HCP_HOME unless one is given.
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
"$HCPX" activate git --json
"$HCPX" allow git --json

# project mode: git runs in the caller's directory, so work from a fixture repository
bash "$here/fixture.sh" "$tmp/project"
cd "$tmp/project"

# 1. every eval case, from the repository
"$HCPX" eval "$here"
# every rule, with probes: no errors (git prints text, so R002 may warn: exit 2)
rc=0; "$HCPX" check "$here" --probe --no-eval || rc=$?; [ "$rc" -le 2 ]

# 2. reads: a bare word fills the x-position argument, k=v the rest
"$HCPX" exec git resolve HEAD --json | grep -q '24a54fa9512c80cce3d0f66bcea194ad45c84feb'
"$HCPX" exec git log --json -- limit=1 | grep -q 'Add greeting script'

# 3. the twin-face check: git prints text, so compare it as one JSON string
git log -n 20 --date=short '--format=%h %ad %an: %s' | jq -Rs . > "$tmp/cli.json"
"$HCPX" exec git log --json | jq .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"
git status --porcelain=v1 --branch | jq -Rs . > "$tmp/cli.json"
"$HCPX" exec git status --json | jq .result > "$tmp/exec.json"
diff "$tmp/cli.json" "$tmp/exec.json"

# 4. a ref that looks like an option is refused before git runs
set +o pipefail
"$HCPX" exec git show --json -- ref=--output=/tmp/x | grep -q '"invalid_args"'
set -o pipefail

# 5. availability shows the four flags
"$HCPX" availability git --json | grep -q '"runnable": true'
echo "git proof: ok"
