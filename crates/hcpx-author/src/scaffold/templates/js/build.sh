#!/usr/bin/env bash
# Builds the {{id}} pack's component from guest/ (JavaScript, with componentize-js) and writes ./adapter.wasm,
# where surface.json names it. The toolchain is installed with `npm ci` from guest/package-lock.json into a
# directory outside the pack ($HCPX_JS_TOOLS, else one in the system temp dir named after the lock's digest,
# reused by every pack with the same lock): everything in a pack is copied on install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
lock="$here/guest/package-lock.json"
tools="${HCPX_JS_TOOLS:-${TMPDIR:-/tmp}/hcpx-js-$(sha256sum "$lock" | cut -c1-16)}"
if [ ! -x "$tools/node_modules/.bin/componentize-js" ]; then
  mkdir -p "$tools"
  cp "$here/guest/package.json" "$lock" "$tools/"
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error)
fi
# componentize-js runs the module's top level once at build time and snapshots the engine (pre-initialised with
# Wizer). Its `fetch` goes through wasi:http/outgoing-handler, which the world imports; a composite serves no
# HTTP, so the incoming side (`fetch-event`) is left out.
"$tools/node_modules/.bin/componentize-js" "$here/guest/app.js" --wit "$here/guest/wit" --world-name composite \
  --disable fetch-event -o "$here/adapter.wasm"
echo "built $here/adapter.wasm; next: hcpx check $here --probe --strict"
