#!/usr/bin/env bash
# The house gates (docs/architecture.md): one layout, no clippy warnings, no blessing in CI.
# Run before the tests by .ci/run; run it yourself before you push.
set -euo pipefail
cd "$(dirname "$0")/.."
# INSTA_FORCE_PASS would turn every snapshot mismatch into a pass.
if [ -n "${HCPX_BLESS:-}${INSTA_UPDATE:-}${INSTA_FORCE_PASS:-}" ] && [ -n "${CI:-}" ]; then
  echo "gates: HCPX_BLESS, INSTA_UPDATE or INSTA_FORCE_PASS is set in CI; expected files are only ever written by hand" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
cargo fmt --all --check
(cd guest-adapters && cargo fmt --check)
(cd fuzz && cargo fmt --check)
(cd tests/cosign-verify && cargo fmt --check)
# The guests are small: linted on their own (their build must stay byte-for-byte reproducible, so it never runs
# through clippy-driver).
(cd guest-adapters && env -u RUSTC_WORKSPACE_WRAPPER -u CLIPPY_ARGS cargo clippy --locked --release --target wasm32-wasip2 -- -D warnings)
if [ "${HCPX_CLIPPY_IN_BUILD:-}" = 1 ]; then
  # .ci/run: clippy-driver is the compiler wrapper of every build that follows (scripts/test.sh builds every
  # target of the crate, then the benches), so a lint fails the build there.
  echo "gates: fmt and the guests' clippy clean; the crate's clippy runs in its build (RUSTC_WORKSPACE_WRAPPER=$RUSTC_WORKSPACE_WRAPPER)"
  exit 0
fi
cargo clippy --locked --workspace --all-targets -- -D warnings
echo "gates: fmt and clippy clean"
