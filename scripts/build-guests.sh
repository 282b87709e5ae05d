#!/usr/bin/env bash
# Builds every composite guest from source (wasm32-wasip2, release) and refreshes the example pack's
# components, packs/transit-composite/adapter.wasm and packs/tickets-composite/adapter.wasm, which must then equal
# the build byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# Never through a clippy-driver wrapper (CI's): it builds other bytes, and the example must be reproducible.
(cd guest-adapters && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo build --release --locked --target wasm32-wasip2)
cp guest-adapters/target/wasm32-wasip2/release/transit_composite.wasm packs/transit-composite/adapter.wasm
cp guest-adapters/target/wasm32-wasip2/release/tickets_composite.wasm packs/tickets-composite/adapter.wasm
bash scripts/build-lang-guests.sh
echo "built guests; packs/transit-composite/adapter.wasm and packs/tickets-composite/adapter.wasm refreshed"
