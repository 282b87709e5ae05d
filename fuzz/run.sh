#!/usr/bin/env bash
# A fuzz campaign on one target (docs/fuzz.md): `fuzz/run.sh TARGET [SECONDS]`, default 300 s.
# New inputs go to fuzz/work/TARGET (not committed); the committed corpus/TARGET is read as seeds.
# libFuzzer's log, whose last lines hold the figures docs/fuzz.md records, is kept as fuzz/work/TARGET.log.
# Afterwards `fuzz/run.sh TARGET merge [N]` adds to corpus/TARGET at most N (default 50) work inputs, those
# that reach the most edges the corpus does not (fuzz/pick.py over libFuzzer's merge control file).
set -euo pipefail
cd "$(dirname "$0")"
t=${1:?"usage: fuzz/run.sh pack_load|schema_compile|template|skill|words [SECONDS|merge]"}
mkdir -p "work/$t"
if [ "${2:-}" = merge ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  cp -r "corpus/$t" "$scratch/first"
  cargo +nightly fuzz run "$t" "$scratch/first" "work/$t" -- -merge=1 -use_counters=0 \
    -merge_control_file="$scratch/control" >"$scratch/log" 2>&1 || { cat "$scratch/log"; exit 1; }
  python3 pick.py "$scratch/control" "corpus/$t" "${3:-50}" >/dev/null
  exit 0
fi
cargo +nightly fuzz run "$t" "work/$t" "corpus/$t" -- -max_total_time="${2:-300}" -jobs=1 -print_final_stats=1 || status=$?
mv -f fuzz-0.log "work/$t.log" 2>/dev/null || true
tail -n 30 "work/$t.log" 2>/dev/null || true
exit "${status:-0}"
