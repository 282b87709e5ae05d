#!/usr/bin/env bash
# Runs every test: installs what is missing, then the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The cosign verifier the interop test runs (sigstore-rs, its own workspace and target dir: its openssl backend
# never enters hcpx's build); the test builds it too when missing, this only keeps the build out of its time.
# It builds beside the guests and hcpx, filling the cores while their builds run one crate or one link at a
# time (#23: a cold CI's compile is most of its time).
cosign_log="$(mktemp)"
cargo build --locked --quiet --manifest-path tests/cosign-verify/Cargo.toml >"$cosign_log" 2>&1 &
cosign=$!
# The composite guests, built from source; the tests use these builds (and check the example's
# committed component against its build).
# Never through CI's clippy wrapper: clippy-driver builds other bytes, and the example's component must be
# reproducible (gates.sh lints the guests on its own).
(cd guest-adapters && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo build --release --locked --target wasm32-wasip2)
# The Python and JavaScript composites (packs/transit-py, packs/transit-js, the misbehaving test guests), built
# from their lock files with their packs' build.sh; the toolchains are kept in the temp dir between runs.
bash scripts/build-lang-guests.sh
# What this kernel enforces (the escape suite skips, with a printed reason, what it does not).
cargo build --locked --quiet
if ! wait "$cosign"; then
  cat "$cosign_log" >&2
  echo "test.sh: the cosign verifier (tests/cosign-verify) did not build" >&2
  exit 1
fi
rm -f "$cosign_log"
HCP_HOME="$(mktemp -d)" target/debug/hcpx doctor 2>&1 | grep '^[a-z]* *sandbox ' || true
cargo test --locked
# Under .ci/run clippy lints what is built; the benches are the one target the tests do not build.
if [ "${HCPX_CLIPPY_IN_BUILD:-}" = 1 ]; then
  cargo test --locked --benches --no-run --quiet
fi
# The escape suite and the packs' proofs again as an unprivileged user (as root: a user made for it), and that
# user's `hcpx doctor` checked against what held.
bash scripts/test-nonroot.sh
