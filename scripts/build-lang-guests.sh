#!/usr/bin/env bash
# Builds the Python and JavaScript composites from their lock files, each with its pack's own build.sh (the one
# `hcpx new composite --lang` writes): packs/transit-py and packs/transit-js (adapter.wasm, not committed), and the
# guests that misbehave on purpose into guest-adapters/target/lang/. Needs python3 (venv, pip) and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
out="guest-adapters/target/lang"
mkdir -p "$out"
started=$(date +%s)
packs/transit-py/build.sh
packs/transit-js/build.sh
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
# A test guest is built as a pack would build it: the pack's build.sh, the pinned toolchain, the WIT.
for lang in py js; do
  pack="$stage/$lang"
  mkdir -p "$pack/guest"
  cp "packs/transit-$lang/build.sh" "$pack/"
  cp -R "packs/transit-$lang/guest/wit" "$pack/guest/"
  cp guest-adapters/test-misbehave-$lang/* "$pack/guest/"
  if [ "$lang" = py ]; then
    cp packs/transit-py/guest/requirements.txt "$pack/guest/"
  else
    cp packs/transit-js/guest/package.json packs/transit-js/guest/package-lock.json "$pack/guest/"
  fi
  "$pack/build.sh"
  cp "$pack/adapter.wasm" "$out/test_misbehave_$lang.wasm"
done
echo "built the Python and JavaScript guests in $(( $(date +%s) - started ))s"
