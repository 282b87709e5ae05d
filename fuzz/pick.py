#!/usr/bin/env python3
"""Picks the committed corpus from a campaign (docs/fuzz.md): reads a libFuzzer merge control file
(-merge=1 -use_counters=0 -merge_control_file=F, whose first corpus is the committed one) and copies
into that corpus at most N of the other inputs, greedily: each time the input that covers the most
edges not yet covered, the smaller one on a tie, until N are picked or none adds an edge.

usage: pick.py CONTROL_FILE CORPUS_DIR N
"""
import os
import shutil
import sys

control, corpus, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(control, encoding="utf-8", errors="surrogateescape").read().splitlines()
total, first = int(lines[0]), int(lines[1])
files = lines[2 : 2 + total]
cov = {}
for line in lines[2 + total :]:
    parts = line.split()
    if parts and parts[0] == "COV":
        cov[int(parts[1])] = set(map(int, parts[2:]))
covered = set().union(*(cov.get(i, set()) for i in range(first)))
candidates = {i for i in range(first, total) if i in cov}
picked = 0
while picked < limit:
    best = max(candidates, key=lambda i: (len(cov[i] - covered), -os.path.getsize(files[i])), default=None)
    if best is None or not cov[best] - covered:
        break
    gain = len(cov[best] - covered)
    covered |= cov[best]
    candidates.discard(best)
    name = os.path.basename(files[best])
    shutil.copyfile(files[best], os.path.join(corpus, name))
    picked += 1
    print(f"{name} +{gain} edges")
left = sum(1 for i in candidates if cov[i] - covered)
print(f"picked {picked}; {len(covered)} edges covered; {left} inputs still add edges", file=sys.stderr)
