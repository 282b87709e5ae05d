#!/usr/bin/env bash
# Why: per guest language (Rust, Python, JavaScript), the transit component's size, its first compile (the first
# `hcpx exec` in a fresh store, which compiles and writes the cache) and the warm whole-process `hcpx exec` of `plan`,
# measured side by side in one run (the calls interleaved). The in-process ratios are benches/lang_composites.rs's.
# Usage: BENCH_N=100 benches/lang_exec.sh   (prints a Markdown table for docs/perf.md on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-100}"
cargo build --release --locked >&2
[ -f packs/transit-py/adapter.wasm ] && [ -f packs/transit-js/adapter.wasm ] || bash scripts/build-lang-guests.sh >&2
HCPX="$PWD/target/release/hcpx"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export HCP_HOME="$TMP/home"
for p in transit-composite transit-py transit-js; do
  "$HCPX" install "packs/$p" --json > /dev/null
  "$HCPX" activate "$p" > /dev/null 2>&1
done

python3 - "$N" "$HCPX" <<'PY'
import os, statistics, subprocess, sys, time
n, hcpx = int(sys.argv[1]), sys.argv[2]
packs = [("Rust", "transit-composite"), ("Python", "transit-py"), ("JavaScript", "transit-js")]

def run(pid):
    t = time.perf_counter_ns()
    subprocess.run([hcpx, "exec", pid, "plan", "--json", "--", "from=A", "to=B"], stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - t) / 1e6

first = {pid: run(pid) for _, pid in packs}  # compiles, writes the cache
for _ in range(3):
    for _, pid in packs:
        run(pid)
warm = {pid: [] for _, pid in packs}
for _ in range(n):
    for _, pid in packs:
        warm[pid].append(run(pid))
print(f"{time.strftime('%Y-%m-%d')}, nproc {os.cpu_count()}, {n} interleaved rounds, `BENCH_N={n} benches/lang_exec.sh`\n")
print("| guest | component | first `hcpx exec` (compiles) | warm `hcpx exec` p50 | p95 | mean |")
print("|-------|----------:|-----------------------------:|---------------------:|----:|-----:|")
for lang, pid in packs:
    size = os.path.getsize(os.path.join("packs", pid, "adapter.wasm")) / (1 << 20)
    w = sorted(warm[pid])
    print(f"| {lang} | {size:.1f} MiB | {first[pid]:.0f} ms | {statistics.median(w):.1f} ms | "
          f"{w[int(len(w) * 0.95) - 1]:.1f} ms | {statistics.mean(w):.1f} ms |")
PY
