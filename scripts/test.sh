#!/usr/bin/env bash
# Runs every test: installs what is missing, then the whole cargo test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The cosign verifier the interop test runs (sigstore-rs, its own workspace and target dir: its openssl backend
# never enters hcpx's build) is a test tool, like the Python and JavaScript toolchains: it is built once per
# version of its sources, lock file and compiler into a cache of this user's, private to them, and reused by
# later runs on the machine (HCPX_COSIGN_VERIFY tells the test where it is; without it the test builds it).
# A cold build of it is about 165 CPU-seconds, a sixth of a cold CI's compile (#23, docs/perf-log.md).
tools="${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/hcpx-test-tools"
mkdir -p "$tools"
# Only a directory of this user's that no one else can write (what is cached here is run by the tests).
[ -O "$tools" ] && chmod 700 "$tools" || { echo "test.sh: $tools is not this user's; remove it" >&2; exit 1; }
cosign_key=$(cat tests/cosign-verify/Cargo.toml tests/cosign-verify/Cargo.lock tests/cosign-verify/src/*.rs \
  <(rustc -vV) | sha256sum | cut -c1-16)
cosign_dir="$tools/cosign-verify-$cosign_key"
export HCPX_COSIGN_VERIFY="$cosign_dir/cosign-verify"
bg_log="$(mktemp)"
bg_pids=()
if [ ! -x "$HCPX_COSIGN_VERIFY" ]; then
  (
    cargo build --locked --quiet --manifest-path tests/cosign-verify/Cargo.toml --target-dir "$cosign_dir/target" &&
      cp "$cosign_dir/target/debug/cosign-verify" "$HCPX_COSIGN_VERIFY.tmp" &&
      mv "$HCPX_COSIGN_VERIFY.tmp" "$HCPX_COSIGN_VERIFY" && rm -rf "$cosign_dir/target"
  ) >"$bg_log.cosign" 2>&1 &
  bg_pids+=("$!:the cosign verifier (tests/cosign-verify):$bg_log.cosign")
fi
# The composite guests, built from source; the tests use these builds (and check the example's
# committed component against its build).
# Never through CI's clippy wrapper: clippy-driver builds other bytes, and the example's component must be
# reproducible (gates.sh lints the guests on its own).
(cd guest-adapters && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo build --release --locked --target wasm32-wasip2)
# The Python and JavaScript composites (packs/transit-py, packs/transit-js, the misbehaving test guests), built
# from their lock files with their packs' build.sh; the toolchains are kept in the temp dir between runs. They
# build beside hcpx, filling the cores where its build runs one crate or one link at a time (#23).
bash scripts/build-lang-guests.sh >"$bg_log.lang" 2>&1 &
bg_pids+=("$!:the Python and JavaScript guests (scripts/build-lang-guests.sh):$bg_log.lang")
cargo build --locked --quiet
for entry in "${bg_pids[@]}"; do
  IFS=: read -r pid what log <<<"$entry"
  if ! wait "$pid"; then
    cat "$log" >&2
    echo "test.sh: $what did not build" >&2
    exit 1
  fi
  tail -n 1 "$log"
  rm -f "$log"
done
rm -f "$bg_log"
# What this kernel enforces (the escape suite skips, with a printed reason, what it does not).
HCP_HOME="$(mktemp -d)" target/debug/hcpx doctor 2>&1 | grep '^[a-z]* *sandbox ' || true
# Under .ci/run clippy lints what is built; the benches are the one target the tests do not build, so they are
# built with the test targets, in one cargo run that keeps both cores busy.
if [ "${HCPX_CLIPPY_IN_BUILD:-}" = 1 ]; then
  cargo test --locked --workspace --no-run --quiet --lib --tests --benches
fi
# Three test threads on two cores: about 90 core-seconds of a two-thread run are idle, in tests that wait on
# the servers and clients they start (#23, docs/perf-log.md); the tests' limits are sized for a busy machine.
export RUST_TEST_THREADS="${RUST_TEST_THREADS:-3}"
cargo test --locked --workspace
# The escape suite and the packs' proofs again as an unprivileged user (as root: a user made for it), and that
# user's `hcpx doctor` checked against what held.
bash scripts/test-nonroot.sh
