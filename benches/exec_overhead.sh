#!/usr/bin/env bash
# Why: measures the wall-time overhead of `hcpx exec` over running the same bin directly, side by side in one run.
# Usage: BENCH_N=200 benches/exec_overhead.sh   (prints a Markdown table for docs/perf.md on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-200}"

cargo build --release >&2
HCPX="$PWD/target/release/hcpx"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export HCP_HOME="$TMP/home"

# A pack whose bin does nearly nothing, so the table shows hcpx's own cost.
P="$TMP/trivial"
. benches/trivial_pack.sh
trivial_pack "$P"
"$HCPX" lint "$P" >&2

for dir in "$P" packs/transit packs/transit-composite; do
  id="$(basename "$dir")"
  "$HCPX" install "$dir" --json > /dev/null
  "$HCPX" activate "$id" > /dev/null 2>&1
done
# The same store with every confinement layer turned off, to show what the layers cost side by side.
OFF="$TMP/home-off"
cp -a "$HCP_HOME" "$OFF"
echo '{"disable":["landlock","landlock-net","landlock-scope","seccomp","capabilities","no-new-privs","pid-namespace","mount-namespace","rlimits","process-limit"]}' > "$OFF/sandbox.json"

python3 - "$N" "$HCPX" "$HCP_HOME" "$OFF" <<'PY'
import os, statistics, subprocess, sys, time
n, hcpx, home, off = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
# (label, pack id, bin, argv hcpx renders, hcpx exec words)
cases = [
    ("trivial `ping`", "trivial", "bin/trivial", ["ping"], ["ping", "--json"]),
    ("transit `plan A B`", "transit", "bin/transit.mjs", ["plan", "A", "B", "--json"],
     ["plan", "--json", "--", "from=A", "to=B"]),
]

def run(argv, cwd, env=None):
    t = time.perf_counter_ns()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)  # exec exits 0 only when ok
    return (time.perf_counter_ns() - t) / 1e6

print(f"{time.strftime('%Y-%m-%d')}, nproc {os.cpu_count()}, {n} interleaved pairs per case, "
      f"`BENCH_N={n} benches/exec_overhead.sh`\n")
print("| case | direct p50 | hcpx p50 | hcpx, layers off, p50 | direct mean | hcpx mean | ratio p50 | added p50 | layers add p50 |")
print("|------|-----------:|---------:|----------------------:|------------:|----------:|----------:|----------:|---------------:|")
for label, pid, bin_, argv, words in cases:
    pack = os.path.join(home, "packs", pid)
    direct_cmd = [os.path.join(pack, bin_)] + argv
    # The environment hcpx builds for the child (src/adapter/wrap.rs), not ours: an inherited
    # NODE_EXTRA_CA_CERTS alone makes node ~90 ms slower on the project machine.
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.path.join(home, "workspaces", pid),
           "TMPDIR": os.path.join(home, "tmp"), "HCP_SANDBOX": "native-local"}
    hcpx_cmd = [hcpx, "exec", pid] + words
    off_env = dict(os.environ, HCP_HOME=off)
    for _ in range(5):  # warm up caches, not counted
        run(direct_cmd, pack, env); run(hcpx_cmd, pack); run(hcpx_cmd, pack, off_env)
    d, h, o = [], [], []
    for _ in range(n):  # interleaved so machine noise hits all three alike
        d.append(run(direct_cmd, pack, env))
        h.append(run(hcpx_cmd, pack))
        o.append(run(hcpx_cmd, pack, off_env))
    dp, hp, op = statistics.median(d), statistics.median(h), statistics.median(o)
    dm, hm = statistics.fmean(d), statistics.fmean(h)
    print(f"| {label} | {dp:.2f} ms | {hp:.2f} ms | {op:.2f} ms | {dm:.2f} ms | {hm:.2f} ms "
          f"| {hp / dp:.2f}× | {hp - dp:+.2f} ms | {hp - op:+.2f} ms |")

# A composite has no direct run: report the whole `hcpx exec` process, warm (its cache filled).
cmd = [hcpx, "exec", "transit-composite", "plan", "--json", "--", "from=A", "to=B"]
for _ in range(5):
    run(cmd, home)
xs = [run(cmd, home) for _ in range(n)]
print(f"\n| whole process, warm cache | p50 | mean |\n|---|---:|---:|\n"
      f"| `hcpx exec transit-composite plan A B` | {statistics.median(xs):.2f} ms | {statistics.fmean(xs):.2f} ms |")
PY
