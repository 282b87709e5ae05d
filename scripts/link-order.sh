#!/usr/bin/env bash
# Why: writes link/hcpx.order, the functions of hcpx that a one-shot wrap call, a warm one-shot composite call
# and `hcpx --version` run, which build.rs hands to the linker so it places them side by side: a whole-process
# call then faults in about 40 fewer 64 KiB windows of code (docs/perf-log.md, #25); the composite call's own
# functions (wasmtime's loading, linking and instantiating, about 1,900 of them) were added for #39. The names
# carry the toolchain's and the
# dependencies' hashes, so regenerate it after either changes (benches/exec_overhead.sh says when it went
# stale); a stale file costs that speed only, never correctness (the linker skips names it does not know).
# Usage: scripts/link-order.sh   (needs valgrind: apt-get install valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "link-order: valgrind is needed (apt-get install valgrind)" >&2; exit 1; }
cargo build --release --locked --bin hcpx >&2
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
install -m 755 target/release/hcpx "$TMP/hcpx"
export HCP_HOME="$TMP/home"
. benches/trivial_pack.sh
trivial_pack "$TMP/trivial"
"$TMP/hcpx" install "$TMP/trivial" --json > /dev/null
"$TMP/hcpx" activate trivial > /dev/null
profile() { # NAME CWD ARGV...
  (cd "$2" && valgrind --tool=callgrind --demangle=no --callgrind-out-file="$TMP/cg.$1" "${@:3}" > /dev/null 2>&1) || true
}
profile version "$TMP" "$TMP/hcpx" --version
# valgrind 3.19 knows neither landlock_create_ruleset nor pidfd_open, so under it a wrap call stops once its child
# is started (the envelope of that refusal is printed as any other): the runtime's own sandbox and wrap modules,
# which the rest of a wrap call runs, are listed whole below.
profile wrap "$HCP_HOME/packs/trivial" "$TMP/hcpx" exec trivial ping --json
# A composite call as a host makes it, warm: the compile cache filled, the digests remembered by earlier calls.
"$TMP/hcpx" install packs/transit-composite --json > /dev/null
"$TMP/hcpx" activate transit-composite > /dev/null
sleep 2.5  # the digest memo remembers only files changed at least 2 s before (hcpx-store's memo.rs)
for _ in 1 2 3; do "$TMP/hcpx" exec transit-composite plan --json -- from=A to=B > /dev/null; done
# Under valgrind the CPU's features differ, so the engine's compatibility hash does too: the first call under it
# compiles (a .cwasm of its own), the second remembers that file's digest once it has settled, and the third,
# the one kept, is warm.
for _ in 1 2 3; do
  sleep 0.1
  profile composite "$TMP" "$TMP/hcpx" exec transit-composite plan --json -- from=A to=B
done
python3 - "$TMP" > link/hcpx.order <<'PY'
import glob, re, subprocess, sys
tmp = sys.argv[1]
nm = lambda *flags: subprocess.run(["nm", "--defined-only", *flags, f"{tmp}/hcpx"], capture_output=True,
                                   text=True, check=True).stdout.splitlines()
# nm lists the same symbols in the same order with and without demangling.
functions = {}
for raw, shown in zip(nm(), nm("--demangle")):
    r, s = raw.split(" ", 2), shown.split(" ", 2)
    if len(r) == 3 and r[1] in "tTwW":
        functions[r[2]] = s[2]
ran = set()
for path in glob.glob(f"{tmp}/cg.*"):
    for line in open(path, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) ([^']+)", line)
        if m and m.group(1).strip() in functions:
            ran.add(m.group(1).strip())
modules = ("hcpx_sandbox::", "hcpx_runtime::adapter::wrap::")
ran |= {raw for raw, shown in functions.items() if any(m in shown for m in modules)}
print("\n".join(sorted(ran)))
PY
echo "link-order: $(wc -l < link/hcpx.order) functions in link/hcpx.order" >&2
