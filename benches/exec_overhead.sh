#!/usr/bin/env bash
# Why: measures whole-process `hcpx` calls as a host that runs one `hcpx exec` per tool call pays them: the median
# and the tail (p90, p99), side by side in one run with `/bin/true`, `hcpx --version` and each wrap's bin run
# directly, interleaved round by round so the machine's noise hits every case alike.
# Usage: BENCH_N=200 benches/exec_overhead.sh   (prints Markdown tables for docs/perf.md on stdout)
#   BENCH_BASELINE=/path/to/an/older/hcpx adds that binary's `--version`, trivial wrap and composite rows, each
#   call next to the current one's, with a store of its own.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-200}"

cargo build --release --locked --bin hcpx >&2
# The link order (build.rs, scripts/link-order.sh) names functions with the toolchain's and the dependencies'
# hashes: say how many of them this binary has, so a stale file shows here rather than as a slower table.
if [ -f link/hcpx.order ]; then
  found=$(nm --defined-only target/release/hcpx | awk '{print $3}' | sort -u | comm -12 - <(sort -u link/hcpx.order) | wc -l)
  listed=$(wc -l < link/hcpx.order)
  echo "link order: $found of $listed functions of link/hcpx.order are in this binary" >&2
  if [ $((found * 10)) -lt $((listed * 9)) ]; then
    echo "note: link/hcpx.order is stale (a new toolchain or dependency); run scripts/link-order.sh" >&2
  fi
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Both binaries run from fresh copies in one directory, as `cargo install` copies one: the file the linker
# wrote in target/ was measured 0.5 ms slower per call than a copy of it on this kernel (docs/perf.md), which
# would otherwise count against whichever binary was built last.
mkdir -p "$TMP/bin"
install -m 755 target/release/hcpx "$TMP/bin/hcpx"
HCPX="$TMP/bin/hcpx"
BASE=""
if [ -n "${BENCH_BASELINE:-}" ]; then
  install -m 755 "$BENCH_BASELINE" "$TMP/bin/hcpx-base"
  BASE="$TMP/bin/hcpx-base"
fi
export HCP_HOME="$TMP/home"

# A pack whose bin does nearly nothing, so the table shows hcpx's own cost (and the sandbox's).
P="$TMP/trivial"
. benches/trivial_pack.sh
trivial_pack "$P"
"$HCPX" lint "$P" >&2

install_all() { # BIN HOME
  for dir in "$P" packs/transit packs/transit-composite; do
    HCP_HOME="$2" "$1" install "$dir" --json > /dev/null
    HCP_HOME="$2" "$1" activate "$(basename "$dir")" > /dev/null 2>&1
  done
}
install_all "$HCPX" "$HCP_HOME"
# The same store with every confinement layer turned off, to show what the layers cost side by side.
OFF="$TMP/home-off"
cp -a "$HCP_HOME" "$OFF"
echo '{"disable":["landlock","landlock-net","landlock-scope","seccomp","capabilities","no-new-privs","pid-namespace","private-proc","read-only-mounts","mount-namespace","rlimits","process-limit"]}' > "$OFF/sandbox.json"
# And with the call's view turned off, one layer and then both (#34, #40): what its own /proc and the read-only
# mounts each cost beside the other layers.
NOPROC="$TMP/home-noproc"
NOVIEW="$TMP/home-noview"
cp -a "$HCP_HOME" "$NOPROC"
cp -a "$HCP_HOME" "$NOVIEW"
echo '{"disable":["private-proc"]}' > "$NOPROC/sandbox.json"
echo '{"disable":["private-proc","read-only-mounts"]}' > "$NOVIEW/sandbox.json"
if [ -n "$BASE" ]; then install_all "$BASE" "$TMP/home-base"; fi

python3 - "$N" "$HCPX" "$HCP_HOME" "$OFF" "$BASE" "$TMP/home-base" "$NOPROC" "$NOVIEW" <<'PY'
import os, statistics, subprocess, sys, time
n, hcpx, home, off, base, base_home, noproc, noview = int(sys.argv[1]), *sys.argv[2:]
if n < 200:
    print(f"note: BENCH_N={n}; the tail (p99) needs at least 200 rounds to mean much", file=sys.stderr)

def run(argv, cwd, env=None):
    t = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)  # exec exits 0 only when ok
    return (time.perf_counter_ns() - t) / 1e6

def child_env(pid):
    # The environment hcpx builds for the child (crates/hcpx-runtime/src/adapter/wrap.rs), not ours: an inherited
    # NODE_EXTRA_CA_CERTS alone makes node ~90 ms slower on the project machine.
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.path.join(home, "workspaces", pid),
            "TMPDIR": os.path.join(home, "tmp"), "HCP_SANDBOX": "native-local"}

on = dict(os.environ, HCP_HOME=home)
layers_off = dict(os.environ, HCP_HOME=off)
proc_off = dict(os.environ, HCP_HOME=noproc)
view_off = dict(os.environ, HCP_HOME=noview)
trivial, transit = os.path.join(home, "packs", "trivial"), os.path.join(home, "packs", "transit")
ping = ["exec", "trivial", "ping", "--json"]
plan = ["exec", "transit", "plan", "--json", "--", "from=A", "to=B"]
comp = ["exec", "transit-composite", "plan", "--json", "--", "from=A", "to=B"]
# (key, label, argv, cwd, env); one round runs each once, in this order.
cases = [
    ("true", "`/bin/true`", ["/bin/true"], home, on),
    ("version", "`hcpx --version`", [hcpx, "--version"], home, on),
    ("ping-direct", "trivial bin, direct", [os.path.join(trivial, "bin/trivial"), "ping"], trivial,
     child_env("trivial")),
    ("ping", "`hcpx exec trivial ping`", [hcpx, *ping], trivial, on),
    ("ping-off", "`hcpx exec trivial ping`, layers off", [hcpx, *ping], trivial, layers_off),
    ("ping-noproc", "`hcpx exec trivial ping`, without private-proc", [hcpx, *ping], trivial, proc_off),
    ("ping-noview", "`hcpx exec trivial ping`, without private-proc and read-only-mounts", [hcpx, *ping], trivial,
     view_off),
    ("comp", "`hcpx exec transit-composite plan A B`, warm cache", [hcpx, *comp], home, on),
    ("plan-direct", "transit bin (Node), direct", [os.path.join(transit, "bin/transit.mjs"), "plan", "A", "B",
     "--json"], transit, child_env("transit")),
    ("plan", "`hcpx exec transit plan A B` (Node)", [hcpx, *plan], transit, on),
    ("plan-off", "`hcpx exec transit plan A B`, layers off", [hcpx, *plan], transit, layers_off),
]
if base:
    b = dict(os.environ, HCP_HOME=base_home)
    bt = os.path.join(base_home, "packs", "trivial")
    cases += [
        ("b-version", "baseline `hcpx --version`", [base, "--version"], base_home, b),
        ("b-ping", "baseline `hcpx exec trivial ping`", [base, *ping], bt, b),
        ("b-comp", "baseline composite, warm cache", [base, *comp], base_home, b),
    ]
t = {k: [] for k, *_ in cases}
for _ in range(5):  # warm up the page cache and the compile cache, not counted
    for k, _, argv, cwd, env in cases:
        run(argv, cwd, env)
load = os.getloadavg()
for r in range(n):  # interleaved, and the order turned round every other round
    for k, _, argv, cwd, env in (cases if r % 2 == 0 else cases[::-1]):
        t[k].append(run(argv, cwd, env))
load_end = os.getloadavg()

def pct(xs, p):  # nearest rank
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, round(p / 100 * len(xs) + 0.5) - 1))]

def stats(k):
    return [pct(t[k], p) for p in (50, 90, 99)] + [statistics.fmean(t[k])]

print(f"{time.strftime('%Y-%m-%d %H:%M')}, nproc {os.cpu_count()}, load average {load[0]:.2f} at the start and "
      f"{load_end[0]:.2f} at the end, {n} interleaved rounds, `BENCH_N={n} benches/exec_overhead.sh`\n")
print("| case | p50 | p90 | p99 | mean |\n|------|----:|----:|----:|-----:|")
for k, label, *_ in cases:
    print(f"| {label} | " + " | ".join(f"{v:.2f} ms" for v in stats(k)) + " |")

def added(a, b, label):
    sa, sb = stats(a), stats(b)
    print(f"| {label} | " + " | ".join(f"{x - y:+.2f} ms" for x, y in zip(sa[:3], sb[:3])) + " |")

print("\n| added (same percentile, one minus the other) | p50 | p90 | p99 |\n|---|---:|---:|---:|")
added("ping", "ping-direct", "trivial wrap over its bin")
added("ping", "ping-off", "the confinement layers, trivial wrap")
added("ping", "ping-noproc", "private-proc (own /proc), trivial wrap")
added("ping-noproc", "ping-noview", "read-only-mounts (with its mount namespace), trivial wrap")
added("ping", "ping-noview", "the call's view (both), trivial wrap")
added("plan", "plan-direct", "transit wrap over its bin (Node)")
added("plan", "plan-off", "the confinement layers, transit (Node)")
sv, st = stats("version"), stats("true")
print(f"\n`hcpx --version` over `/bin/true`: p50 {sv[0] / st[0]:.2f}×, p90 {sv[1] / st[1]:.2f}×, "
      f"p99 {sv[2] / st[2]:.2f}×")
PY
