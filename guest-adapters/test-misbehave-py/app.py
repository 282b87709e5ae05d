"""A Python composite that misbehaves on purpose, one way per command, for the runtime's limit tests
(tests/integration/composite_lang.rs): an endless loop, a 1 GiB allocation, recursion past every limit, and
a noisy answer in text for `hcpx check`'s advice."""

import json
import sys

import wit_world
from componentize_py_types import Err
from wit_world.imports import host

COMMANDS = ["spin", "bomb", "deep", "cdeep", "noisy", "ok"]


def deeper(n):
    return deeper(n + 1) + 1


class WitWorld(wit_world.WitWorld):
    def exec(self, ctx, verb_key, args_json):
        if verb_key == "spin":
            n = 0
            while True:
                n += 1
        if verb_key == "bomb":
            held = bytearray(1 << 30)
            return str(len(held))
        if verb_key == "deep":
            # Python's own guard: RecursionError, not caught, so the call traps.
            return str(deeper(0))
        if verb_key == "cdeep":
            # Past the guard: the recursion limit lifted, and recursion through C (the JSON encoder).
            sys.setrecursionlimit(1 << 30)
            nested = []
            for _ in range(1_000_000):
                nested = [nested]
            return json.dumps(nested)
        if verb_key == "noisy":
            # Logs on success and answers in text: what `hcpx check` advises against, in Python's words.
            host.log(host.Level.INFO, "working")
            return "done, in words"
        if verb_key == "ok":
            return '{"fine": true}'
        raise Err(f"unknown command {verb_key}")

    def describe(self):
        return list(COMMANDS)
