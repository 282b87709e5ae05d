#!/usr/bin/env bash
# Why: measures `hcpx install` of the example composite from a loopback OCI registry (Debian's docker-registry)
# as a host pays it, cold (empty cache: manifest, signature and every layer fetched and verified) and cached
# (the blobs, manifest and signature already verified in $HCP_HOME/cache/oci), by digest (no registry asked)
# and by tag (the tag resolved at the registry by a HEAD), side by side with a directory install of the same pack, interleaved round
# by round so the machine's noise hits every case alike. Also the first `hcpx exec` after a cached reinstall:
# the component's compiled form is reused (same component digest), not compiled again.
# Usage: BENCH_N=50 benches/install_registry.sh   (prints a Markdown table for docs/perf.md on stdout)
#   BENCH_HCPX=target/debug/hcpx measures that binary instead of building and using the release one.
#   BENCH_BASE=/path/to/old/hcpx also runs the cached cases with that binary, in the same rounds (a change's
#   before and after side by side, on the same registry, homes and noise).
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-50}"

command -v docker-registry >/dev/null || { echo "install docker-registry (scripts/setup.sh)" >&2; exit 1; }
if [ -n "${BENCH_HCPX:-}" ]; then
  HCPX="$(realpath "$BENCH_HCPX")"
else
  cargo build --release --locked --bin hcpx >&2
  HCPX="$PWD/target/release/hcpx"
fi

TMP="$(mktemp -d)"
REG_PID=""
trap '[ -n "$REG_PID" ] && kill "$REG_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
mkdir -p "$TMP/data"
cat > "$TMP/registry.yml" <<YML
version: 0.1
log:
  level: error
storage:
  filesystem:
    rootdirectory: $TMP/data
http:
  addr: 127.0.0.1:$PORT
YML
docker-registry serve "$TMP/registry.yml" > "$TMP/registry.log" 2>&1 &
REG_PID=$!
for _ in $(seq 100); do python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/v2/')" 2>/dev/null && break; sleep 0.1; done

# The author: a key, and the composite published signed.
export HCP_HOME="$TMP/author"
"$HCPX" key generate "$TMP/k.pem" > /dev/null 2>&1
REF="oci://127.0.0.1:$PORT/bench/transit:1.0"
DIGEST="$("$HCPX" publish packs/transit-composite "$REF" --sign "$TMP/k.pem" 2>/dev/null)"
PINNED="oci://127.0.0.1:$PORT/bench/transit@$DIGEST"

# Template homes: `fresh` trusts the key and has nothing else; `warm` also holds the verified artifact in its
# cache and the component's compiled form (one install, one exec, then uninstalled).
HCP_HOME="$TMP/fresh" "$HCPX" trust add bench "$TMP/k.pem.pub" --prefix "127.0.0.1:$PORT" > /dev/null 2>&1
cp -a "$TMP/fresh" "$TMP/warm"
HCP_HOME="$TMP/warm" "$HCPX" install "$PINNED" > /dev/null 2>&1
HCP_HOME="$TMP/warm" "$HCPX" activate transit-composite > /dev/null 2>&1
HCP_HOME="$TMP/warm" "$HCPX" exec transit-composite plan A B > /dev/null 2>&1
HCP_HOME="$TMP/warm" "$HCPX" uninstall transit-composite > /dev/null 2>&1

BASE="${BENCH_BASE:+$(realpath "$BENCH_BASE")}"
python3 - "$N" "$HCPX" "$TMP" "$REF" "$PINNED" "$BASE" <<'PY'
import os, shutil, statistics, subprocess, sys, time
n, hcpx, tmp, ref, pinned, base = int(sys.argv[1]), *sys.argv[2:]
def run(argv, home, binary=None):
    t = time.perf_counter_ns()
    subprocess.run([binary or hcpx, *argv], env=dict(os.environ, HCP_HOME=home), stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter_ns() - t) / 1e6
def home_from(template):
    h = os.path.join(tmp, "round")
    shutil.rmtree(h, ignore_errors=True)
    shutil.copytree(template, h, symlinks=True)
    return h
fresh, warm = os.path.join(tmp, "fresh"), os.path.join(tmp, "warm")
cases = {
    "install DIR (packs/transit-composite), for reference": lambda: run(["install", "packs/transit-composite"], home_from(fresh)),
    "install oci://…@digest, cold (empty cache)": lambda: run(["install", pinned], home_from(fresh)),
    "install oci://…:tag, cold (empty cache)": lambda: run(["install", ref], home_from(fresh)),
    "install oci://…@digest, cached (no registry request)": lambda: run(["install", pinned], home_from(warm)),
    "install oci://…:tag, cached (the tag resolved by a HEAD)": lambda: run(["install", ref], home_from(warm)),
}
if base:
    cases["BENCH_BASE: install oci://…@digest, cached"] = lambda: run(["install", pinned], home_from(warm), base)
    cases["BENCH_BASE: install oci://…:tag, cached"] = lambda: run(["install", ref], home_from(warm), base)
times = {k: [] for k in cases}
first_exec = []
for _ in range(n):
    for k, f in cases.items():
        times[k].append(f())
    h = home_from(warm)
    run(["install", pinned], h)
    run(["activate", "transit-composite"], h)
    first_exec.append(run(["exec", "transit-composite", "plan", "A", "B"], h))
times["first exec after a cached install (compiled component reused)"] = first_exec
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(p * len(xs)))]
print(f"| case (N={n}, interleaved) | p50 ms | p90 ms | min ms |")
print("|---|---:|---:|---:|")
for k, xs in times.items():
    print(f"| {k} | {statistics.median(xs):.1f} | {q(xs, 0.9):.1f} | {min(xs):.1f} |")
PY
