"""The transit pack as a Python composite: the same commands and results as packs/transit/bin/transit.mjs
and guest-adapters/transit-composite (Rust). Built to a component by ../build.sh."""

import json
import re

import wit_world
from componentize_py_types import Err

STOPS = ["A", "B", "Central", "Central Park", "Harbour", "North Gate"]
COMMANDS = ["find", "plan", "show", "follow", "status"]
OPTION = re.compile(r"opt-\+?([0-9]+)")


def arg(args, name):
    value = args.get(name)
    if not isinstance(value, str):
        raise Err(f"{name} is required")
    return value


def option_of(id):
    m = OPTION.fullmatch(id)
    n = int(m.group(1)) if m else -1
    if not 0 <= n < 2**32:
        raise Err(f"option id {json.dumps(id, ensure_ascii=False)} is not like opt-1")
    return n


def run(verb, args):
    if verb == "find":
        q = arg(args, "query")
        lower = q.lower()
        return {"ok": True, "verb": "find", "query": q, "stops": [s for s in STOPS if lower in s.lower()]}
    if verb == "plan":
        return {"ok": True, "verb": "plan", "from": arg(args, "from"), "to": arg(args, "to"), "optionId": "opt-1"}
    if verb == "show":
        id = arg(args, "option")
        n = option_of(id)
        legs = [{"line": f"L{n}", "depart": f"08:0{n % 10}", "arrive": f"08:2{n % 10}"}]
        return {"ok": True, "verb": "show", "optionId": id, "legs": legs, "price": "2.80", "currency": "EUR"}
    if verb == "follow":
        id = arg(args, "option")
        n = option_of(id)
        return {"ok": True, "verb": "follow", "optionId": id, "leg": 1, "line": f"L{n}", "delayMinutes": 0}
    if verb == "status":
        return {"ok": True, "verb": "status", "lines": 4, "disruptions": []}
    raise Err(f"unknown command {verb}; commands: {', '.join(COMMANDS)}")


class WitWorld(wit_world.WitWorld):
    def exec(self, ctx, verb_key, args_json):
        try:
            args = json.loads(args_json)
        except ValueError as e:
            raise Err(f"args are not a JSON object: {e}")
        if not isinstance(args, dict):
            raise Err("args are not a JSON object")
        return json.dumps(run(verb_key, args), ensure_ascii=False, separators=(",", ":"))

    def describe(self):
        return list(COMMANDS)
