#!/usr/bin/env bash
# The main job: build hcpx and run every example pack's proof script against a temp HCP_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked --quiet
export HCPX="$PWD/target/release/hcpx"
for proof in packs/*/proof.sh; do
  echo "== $proof"
  HCP_HOME="$(mktemp -d)" bash "$proof"
done
