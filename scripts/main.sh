#!/usr/bin/env bash
# The main job: build hcpx and run it on the example packs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked --quiet
HCPX="$PWD/target/release/hcpx"
for pack in packs/ledger packs/transit; do
  "$HCPX" lint "$pack"
done
