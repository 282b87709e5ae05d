#!/usr/bin/env bash
# Runs every test: installs what is missing, then the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The composite guests, built from source; the tests use these builds (and check the example's
# committed component against its build).
(cd guest-adapters && cargo build --release --locked --target wasm32-wasip2)
# What this kernel enforces (the escape suite skips, with a printed reason, what it does not).
cargo build --locked --quiet
HCP_HOME="$(mktemp -d)" target/debug/hcpx doctor 2>&1 | grep '^[a-z]* *sandbox ' || true
cargo test --locked
