#!/usr/bin/env bash
# Builds the {{id}} pack's component from guest/ (Rust, wasm32-wasip2, release) and copies it to ./adapter.wasm,
# where surface.json names it. Cargo's output goes outside the pack ($CARGO_TARGET_DIR, else a directory in the
# system temp dir): everything in a pack is copied on install.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-${TMPDIR:-/tmp}/hcpx-guest-{{id}}}"
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
cargo build --manifest-path "$here/guest/Cargo.toml" --release --target wasm32-wasip2 --target-dir "$target"
cp "$target/wasm32-wasip2/release/adapter.wasm" "$here/adapter.wasm"
echo "built $here/adapter.wasm; next: hcpx check $here --probe --strict"
