#!/usr/bin/env bash
# Builds the {{id}} pack's component from guest/ (Python, with componentize-py) and writes ./adapter.wasm, where
# surface.json names it. The toolchain is installed from guest/requirements.txt into a virtual environment outside
# the pack ($HCPX_PY_VENV, else a directory in the system temp dir named after the requirements' digest, reused
# by every pack with the same pins): everything in a pack is copied on install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-python3}"
lock="$here/guest/requirements.txt"
venv="${HCPX_PY_VENV:-${TMPDIR:-/tmp}/hcpx-py-$(sha256sum "$lock" | cut -c1-16)}"
if [ ! -x "$venv/bin/componentize-py" ]; then
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -r "$lock"
fi
# componentize-py runs the module's top level once at build time and snapshots the result (pre-initialised):
# imports cost nothing per call. It builds from a copy of guest/, so no __pycache__ is left in the pack.
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
cp -R "$here/guest/." "$stage/"
"$venv/bin/componentize-py" -d "$stage/wit" -w composite componentize -p "$stage" app -o "$here/adapter.wasm"
echo "built $here/adapter.wasm; next: hcpx check $here --probe --strict"
