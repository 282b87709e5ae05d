#!/usr/bin/env bash
# The tickets-composite pack's proof script: the tickets pack's own proof (packs/tickets/proof.sh: a throwaway
# CA, the example API on a free loopback port, a copy of the pack with that port), run on this pack, whose
# component sends the requests through wasi:http and hcpx's send hook instead of curl through the proxy.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
exec bash "$here/../tickets/proof.sh" tickets-composite
