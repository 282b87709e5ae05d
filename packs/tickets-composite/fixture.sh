#!/usr/bin/env bash
# Writes the tickets packs' fixture project into DIR: tickets.conf (where the API is) and new-ticket.json (what
# create posts). The proofs rewrite the port 9443 to the one their local server listens on.
set -euo pipefail
dir="${1:?usage: fixture.sh DIR}"
mkdir -p "$dir"
echo "api=https://tickets.test:9443" > "$dir/tickets.conf"
cat > "$dir/new-ticket.json" <<'JSON'
{ "title": "Search ignores accents", "body": "Searching for cafe does not find café." }
JSON
