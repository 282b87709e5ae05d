#!/usr/bin/env bash
# Why: #39's "no call pays a compile". Each round installs the Python composite (packs/transit-py, 17.6 MiB) into
# a fresh HCP_HOME with a fresh, empty compile cache, activates it, then times the 1st and the 10th whole-process
# `hcpx exec` of it (and the install itself), for this build and for BENCH_BASELINE (an older hcpx, whose first
# call compiles), the two interleaved round by round. Prints p50s, the ratio first/tenth per build, and the load.
# Target: the first call at most 1.5x the tenth.
# Usage: BENCH_N=5 BENCH_BASELINE=/path/to/old/hcpx benches/first_call.sh   (BENCH_HCPX: this build's binary;
# default target/release/hcpx, built first). Bounded: BENCH_N rounds (default 5), each call capped at 120 s.
# BENCH_GAP (seconds, default 0): a pause between install and activate, as an operator reviews the pack. Install
# remembers the digests of what it wrote once the kernel's clock has moved past them (the digest memo's
# racily-clean rule, docs/security.md), so with or without a gap the first call hashes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-5}"
if [ -z "${BENCH_HCPX:-}" ]; then
  cargo build --release --locked >&2
  BENCH_HCPX="$PWD/target/release/hcpx"
fi
[ -f packs/transit-py/adapter.wasm ] || bash scripts/build-lang-guests.sh >&2
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Each binary timed is a fresh copy (docs/perf.md: a binary just written by the linker runs slower at first), with
# its hcpx-serve beside it as `hcpx serve` expects.
copy() {
  mkdir -p "$TMP/$1"
  cp "$2" "$TMP/$1/hcpx"
  [ -f "$(dirname "$2")/hcpx-serve" ] && cp "$(dirname "$2")/hcpx-serve" "$TMP/$1/hcpx-serve"
  echo "$TMP/$1/hcpx"
}
builds=("this=$(copy this "$BENCH_HCPX")")
[ -n "${BENCH_BASELINE:-}" ] && builds+=("baseline=$(copy baseline "$BENCH_BASELINE")")
unset HCP_CACHE_DIR HCP_STORE

python3 - "$N" "$TMP" "$PWD/packs/transit-py" "${BENCH_GAP:-0}" "${builds[@]}" <<'PY'
import os, statistics, subprocess, sys, time
n, tmp, pack, gap = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
builds = [b.split("=", 1) for b in sys.argv[5:]]

def timed(cmd, env):
    t = time.perf_counter_ns()
    subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, timeout=120)
    return (time.perf_counter_ns() - t) / 1e6

figures = {name: {"install": [], "first": [], "tenth": []} for name, _ in builds}
call = ["exec", "transit-py", "plan", "--json", "--", "from=A", "to=B"]
for r in range(n):
    for name, hcpx in builds:
        home = os.path.join(tmp, f"home-{name}-{r}")
        env = dict(os.environ, HCP_HOME=home)
        f = figures[name]
        f["install"].append(timed([hcpx, "install", pack, "--json"], env))
        time.sleep(gap)
        timed([hcpx, "activate", "transit-py"], env)
        calls = [timed([hcpx, *call], env) for _ in range(10)]
        f["first"].append(calls[0])
        f["tenth"].append(calls[9])
        subprocess.run(["rm", "-rf", home], check=True)

load = open("/proc/loadavg").read().split()[:3]
print(f"{time.strftime('%Y-%m-%d %H:%M')}, nproc {os.cpu_count()}, load average {' '.join(load)}, "
      f"{n} interleaved rounds, `BENCH_N={n} BENCH_GAP={gap:g} benches/first_call.sh`\n")
print("| build | install p50 | 1st `hcpx exec` p50 | 10th `hcpx exec` p50 | 1st / 10th |")
print("|-------|------------:|--------------------:|---------------------:|-----------:|")
for name, _ in builds:
    f = figures[name]
    p = {k: statistics.median(v) for k, v in f.items()}
    print(f"| {name} | {p['install']:.0f} ms | {p['first']:.1f} ms | {p['tenth']:.1f} ms | "
          f"{p['first'] / p['tenth']:.2f}x |")
PY
