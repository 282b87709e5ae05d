"""Why: `hcpx` must not start slower as faces are added. Compares two `hcpx` binaries (say, a release build of
an earlier commit and of now) whole-process, interleaved round by round (which one goes first alternates), each
with its own store holding a trivial wrap and transit-composite; prints medians and ratios as Markdown.

Usage: python3 benches/startup.py OLD_HCPX NEW_HCPX REPO [ROUNDS]
"""
import os, statistics, subprocess, sys, time, tempfile, shutil
old, new, repo = sys.argv[1], sys.argv[2], sys.argv[3]
rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 150
tmp = tempfile.mkdtemp()
P = os.path.join(tmp, "trivial"); os.makedirs(P + "/bin")
open(P + "/surface.json", "w").write('{"id":"trivial","kind":"wrap","cliBin":"trivial","binding":{"mode":"public"},"wrap":{"bin":"./bin/trivial","json_flag":[]},"verbs":{"ping":{"description":"Ping.","cli":["trivial","ping"]}}}')
open(P + "/policy.json", "w").write('{"surface_id":"trivial","verbs":{"ping":{"operation":"read"}}}')
open(P + "/HARNESS.md", "w").write("# Trivial\n\nA trivial pack for benchmarks.\n")
open(P + "/bin/trivial", "w").write("#!/bin/sh\nprintf '{\"ok\":true}\\n'\n"); os.chmod(P + "/bin/trivial", 0o755)
homes = {}
for name, b in (("old", old), ("new", new)):
    h = os.path.join(tmp, name); homes[name] = h
    env = dict(os.environ, HCP_HOME=h)
    for d in (P, os.path.join(repo, "packs/transit-composite")):
        subprocess.run([b, "install", d], env=env, check=True, capture_output=True)
        subprocess.run([b, "activate", os.path.basename(d)], env=env, check=True, capture_output=True)
cases = [("hcpx --version", ["--version"]), ("hcpx exec trivial ping", ["exec", "trivial", "ping"]),
         ("hcpx exec transit-composite plan A B", ["exec", "transit-composite", "plan", "A", "B"])]
res = {(c, n): [] for c, _ in cases for n in ("old", "new")}
for r in range(rounds):
    order = ("old", "new") if r % 2 == 0 else ("new", "old")
    for c, args in cases:
        for n in order:
            b = old if n == "old" else new
            env = dict(os.environ, HCP_HOME=homes[n])
            t = time.perf_counter(); p = subprocess.run([b, *args], env=env, capture_output=True); dt = time.perf_counter() - t
            assert p.returncode == 0, p.stderr
            res[(c, n)].append(dt * 1000)
print("| | before | now | ratio |\n|---|---:|---:|---:|")
for c, _ in cases:
    o, n = statistics.median(res[(c, "old")]), statistics.median(res[(c, "new")])
    print(f"| `{c}` | {o:.2f} ms | {n:.2f} ms | {n/o:.2f}× |")
shutil.rmtree(tmp)
