#!/usr/bin/env bash
# Why: #39's whole-process composite target is a ratio to a floor, not an absolute figure: `hcpx exec
# transit-composite plan A B` against a bare wasmtime host (benches/floor, `composite-floor`) that maps the same
# precompiled component from hcpx's compile cache, on an engine configured as hcpx's one-shot engine, and calls
# `plan` with the same arguments; nothing more (no store, no policy, no audit, no digest check). Side by side in
# one run with `/bin/true` and `hcpx --version`, interleaved round by round, the order turned round every other
# round, so the machine's noise hits every case alike.
# Usage: BENCH_N=300 benches/composite_floor.sh   (prints Markdown tables for docs/perf.md on stdout)
#   BENCH_BASELINE=/path/to/an/older/hcpx adds that binary's composite and `--version` rows, with a store of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-300}"

# Both in one cargo run, so the floor links the very wasmtime (features and all) the hcpx binary does.
cargo build --release --locked -p hcpx -p hcpx-bench-floor --bin hcpx --bin composite-floor >&2
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Every binary timed runs from a fresh copy in one directory (the file the linker wrote runs slower, docs/perf.md).
mkdir -p "$TMP/bin"
install -m 755 target/release/hcpx "$TMP/bin/hcpx"
install -m 755 target/release/composite-floor "$TMP/bin/composite-floor"
BASE=""
if [ -n "${BENCH_BASELINE:-}" ]; then
  install -m 755 "$BENCH_BASELINE" "$TMP/bin/hcpx-base"
  BASE="$TMP/bin/hcpx-base"
fi
unset HCP_CACHE_DIR HCP_STORE
export HCP_HOME="$TMP/home"

install_composite() { # BIN HOME
  HCP_HOME="$2" "$1" install packs/transit-composite --json > /dev/null
  HCP_HOME="$2" "$1" activate transit-composite > /dev/null 2>&1
  # The first call fills the compile cache; every timed call is a warm one.
  HCP_HOME="$2" "$1" exec transit-composite plan --json -- from=A to=B > /dev/null
}
install_composite "$TMP/bin/hcpx" "$HCP_HOME"
if [ -n "$BASE" ]; then install_composite "$BASE" "$TMP/home-base"; fi
# The digest memo remembers only files changed at least 2 s before (hcpx-store's memo.rs): from here on every call
# is warm, as a host's hundredth call is.
sleep 2.5
CWASM=$(ls "$HCP_HOME"/cache/*.cwasm)
[ "$(echo "$CWASM" | wc -l)" = 1 ] || { echo "composite_floor: expected one .cwasm in $HCP_HOME/cache" >&2; exit 1; }

python3 - "$N" "$TMP/bin/hcpx" "$TMP/bin/composite-floor" "$CWASM" "$HCP_HOME" "$BASE" "$TMP/home-base" <<'PY'
import json, os, statistics, subprocess, sys, time
n, hcpx, floor, cwasm, home, base, base_home = int(sys.argv[1]), *sys.argv[2:]
if n < 200:
    print(f"note: BENCH_N={n}; the tail (p90) needs at least 200 rounds to mean much", file=sys.stderr)
args = '{"from":"A","to":"B"}'
comp = ["exec", "transit-composite", "plan", "--json", "--", "from=A", "to=B"]
on = dict(os.environ, HCP_HOME=home)

# The floor answers what hcpx answers, or the comparison is not of the same call.
got = json.loads(subprocess.run([floor, cwasm, "plan", args], capture_output=True, check=True).stdout)
want = json.loads(subprocess.run([hcpx, *comp], env=on, capture_output=True, check=True).stdout)["result"]
if got != want:
    sys.exit(f"composite_floor: the floor answered {got!r}, hcpx {want!r}")

cpu = {}

def run(argv, env, key=None):
    t = time.perf_counter_ns()
    p = subprocess.Popen(argv, cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = (time.perf_counter_ns() - t) / 1e6
    if p.returncode != 0:  # both exit 0 only when the call answered ok
        sys.exit(f"composite_floor: {argv} exited {p.returncode}")
    if key:  # the process's own CPU time (user + system), which other processes' load does not stretch
        cpu.setdefault(key, []).append((ru.ru_utime + ru.ru_stime) * 1e3)
    return wall

# (key, label, argv, env); one round runs each once, in this order.
cases = [
    ("true", "`/bin/true`", ["/bin/true"], on),
    ("floor", "bare wasmtime host (`composite-floor`), same `.cwasm`, `plan A B`", [floor, cwasm, "plan", args], on),
    ("ticker", "the floor with hcpx's epoch ticker thread (`FLOOR_TICKER=1`)", [floor, cwasm, "plan", args],
     dict(on, FLOOR_TICKER="1")),
    ("imported", "the floor linking only the WASI interfaces the component imports, as hcpx does (`FLOOR_IMPORTED=1`)",
     [floor, cwasm, "plan", args], dict(on, FLOOR_IMPORTED="1")),
    ("version", "`hcpx --version`", [hcpx, "--version"], on),
    ("comp", "`hcpx exec transit-composite plan A B`, warm cache", [hcpx, *comp], on),
]
if base:
    b = dict(os.environ, HCP_HOME=base_home)
    cases += [
        ("b-version", "baseline `hcpx --version`", [base, "--version"], b),
        ("b-comp", "baseline `hcpx exec transit-composite plan A B`, warm cache", [base, *comp], b),
    ]
t = {k: [] for k, *_ in cases}
for _ in range(5):  # warm up the page cache, not counted
    for k, _, argv, env in cases:
        run(argv, env)
load = os.getloadavg()
for r in range(n):
    for k, _, argv, env in (cases if r % 2 == 0 else cases[::-1]):
        t[k].append(run(argv, env, k))
load_end = os.getloadavg()

def pct(xs, p):  # nearest rank
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]

def stats(k):
    return [pct(t[k], p) for p in (50, 90, 99)] + [statistics.fmean(t[k])]

print(f"{time.strftime('%Y-%m-%d %H:%M')}, nproc {os.cpu_count()}, load average {load[0]:.2f} at the start and "
      f"{load_end[0]:.2f} at the end, {n} interleaved rounds, `BENCH_N={n} benches/composite_floor.sh`\n")
print("| case | p50 | p90 | p99 | mean | p50 / floor | p90 / floor |\n|------|----:|----:|----:|-----:|----:|----:|")
fl = stats("floor")
for k, label, *_ in cases:
    s = stats(k)
    print(f"| {label} | " + " | ".join(f"{v:.2f} ms" for v in s) + f" | {s[0] / fl[0]:.2f}× | {s[1] / fl[1]:.2f}× |")
print("\nCPU time of each process (user + system, `wait4`), which a busy machine's waiting does not stretch:\n")
print("| case | CPU p50 | CPU p90 | p50 / floor |\n|------|----:|----:|----:|")
cf = pct(cpu["floor"], 50)
for k, label, *_ in cases:
    print(f"| {label} | {pct(cpu[k], 50):.2f} ms | {pct(cpu[k], 90):.2f} ms | {pct(cpu[k], 50) / cf:.2f}× |")
if base:
    c, bc = stats("comp"), stats("b-comp")
    print(f"\nthis build's composite over the baseline's: p50 {c[0] / bc[0]:.3f}×, p90 {c[1] / bc[1]:.3f}×")
PY
