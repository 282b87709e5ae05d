#!/usr/bin/env bash
# Runs every test: installs what is missing, then the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo test --locked
