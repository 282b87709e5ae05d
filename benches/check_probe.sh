#!/usr/bin/env bash
# Why: measures what `hcpx check --probe` spends of its own on a 12-command pack, beyond the time its commands
# take when run directly, side by side in one run (target: under 200 ms).
# Usage: BENCH_N=20 benches/check_probe.sh   (prints a Markdown table for docs/perf.md on stdout)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${BENCH_N:-20}"

cargo build --release >&2
HCPX="$PWD/target/release/hcpx"

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
export HCP_HOME="$TMP/home"

# A 12-command pack (10 reads, 2 gated writes) whose bin does nearly nothing; with evals for every read.
P="$TMP/twelve"
mkdir -p "$P/bin"
python3 - "$P" <<'PY'
import json, sys
p = sys.argv[1]
reads = [f"item{i}" for i in range(10)]
verbs, rows, cases, table = {}, {}, [], ["| command | when |", "|---|---|"]
for r in reads:
    verbs[r] = {"description": f"The {r} record as JSON, by its name.", "cli": ["twelve", r, "{{name}}"],
                "args": {"type": "object", "properties": {"name": {"type": "string", "description": "Record name", "examples": ["a"], "x-position": 0}}, "required": ["name"]},
                "title": {"live": [f"Reading {r} {{{{name}}}}", f"Reading {r}"], "done": [f"Read {r} {{{{name}}}}", f"Read {r}"]}}
    rows[r] = {"operation": "read"}
    cases.append({"name": f"{r} returns JSON", "verb": r, "args": {"name": "a"}, "expect": {"ok": True, "json": True, "max_ms": 3000, "max_tokens": 5000}})
    table.append(f"| `{r}` | Read {r}. |")
for w in ["purge", "reset"]:
    verbs[w] = {"description": f"Run {w} on every record; a person confirms first.", "cli": ["twelve", w, "--confirm"],
                "title": {"live": [f"Running {w}"], "done": [f"Ran {w}"]}, "preview": {"kind": "removal", "title": f"{w} every record"}}
    rows[w] = {"operation": "write", "confirm": True}
    cases.append({"name": f"{w} is refused without confirm", "verb": w, "args": {}, "expect": {"ok": False, "error": "confirm required"}})
    table.append(f"| `{w}` | {w}; needs `confirm=true`. |")
surface = {"id": "twelve", "name": "Twelve", "kind": "wrap", "cliBin": "twelve", "binding": {"mode": "public", "hub": "public"},
           "wrap": {"bin": "./bin/twelve", "json_flag": []}, "verbs": verbs}
json.dump(surface, open(f"{p}/surface.json", "w"))
json.dump({"surface_id": "twelve", "verbs": rows}, open(f"{p}/policy.json", "w"))
json.dump({"cases": cases}, open(f"{p}/hcp.eval.json", "w"))
open(f"{p}/HARNESS.md", "w").write("# Twelve\n\nA twelve-command benchmark pack: ten reads by record name, two writes that need `confirm=true`.\n\n## Hot path\n\n" + "\n".join(table) + "\n")
PY
printf '#!/bin/sh\nprintf %s "$1"\n' "'{\"record\":\"%s\"}\\n'" > "$P/bin/twelve"
chmod +x "$P/bin/twelve"
printf '#!/bin/sh\n"$HCPX" lint "$(dirname "$0")" --json\n' > "$P/proof.sh"
chmod +x "$P/proof.sh"
"$HCPX" check "$P" --probe --strict >&2

python3 - "$N" "$HCPX" "$P" <<'PY'
import json, os, statistics, subprocess, sys, time
n, hcpx, pack = int(sys.argv[1]), sys.argv[2], sys.argv[3]
reads = [f"item{i}" for i in range(10)]

def timed(argv, **kw):
    t = time.perf_counter_ns()
    out = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **kw)
    return (time.perf_counter_ns() - t) / 1e6, out

direct, whole, noeval, static = [], [], [], []
for _ in range(n):
    # The commands' own run time: every probe and every read eval case, run directly (20 bin runs).
    t = 0.0
    for r in reads * 2:
        t += timed([f"{pack}/bin/twelve", r, "a"], cwd=pack)[0]
    direct.append(t)
    whole.append(timed([hcpx, "check", pack, "--probe", "--json"])[0])
    noeval.append(timed([hcpx, "check", pack, "--probe", "--no-eval", "--json"])[0])
    static.append(timed([hcpx, "check", pack, "--no-eval", "--json"])[0])

p50 = statistics.median
print(f"{time.strftime('%Y-%m-%d')}, nproc {os.cpu_count()}, {n} interleaved rounds, `BENCH_N={n} benches/check_probe.sh`\n")
print("| run | p50 ms | of its own (p50 − direct bin runs) |")
print("|-----|--------|-------------------------------------|")
print(f"| the 20 bin runs, direct | {p50(direct):.1f} | |")
print(f"| `check --probe` (10 probes + 12 eval cases) | {p50(whole):.1f} | {p50(whole) - p50(direct):.1f} |")
print(f"| `check --probe --no-eval` (10 probes) | {p50(noeval):.1f} | {p50(noeval) - p50(direct) / 2:.1f} |")
print(f"| `check --no-eval` (static rules only) | {p50(static):.1f} | {p50(static):.1f} |")
PY
