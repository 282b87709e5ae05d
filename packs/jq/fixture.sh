#!/usr/bin/env bash
# Writes the jq pack's fixture, inventory.json, into DIR (created if missing). The eval cases expect these values.
set -euo pipefail
dir="${1:?usage: fixture.sh DIR}"
mkdir -p "$dir"
cat > "$dir/inventory.json" <<'JSON'
{
  "store": "north-depot",
  "open": true,
  "address": { "city": "Lyon", "zip": "69001" },
  "items": [
    { "sku": "A-100", "name": "anvil", "qty": 3, "tags": ["heavy", "metal"] },
    { "sku": "B-200", "name": "bucket", "qty": 12, "tags": ["plastic"] },
    { "sku": "C-300", "name": "crate", "qty": 0, "tags": [] }
  ]
}
JSON
