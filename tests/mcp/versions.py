"""One protocol version, end to end, with the official MCP Python SDK: the client connects at VERSION (the
default `mcp.Client`, which discovers, for 2026-07-28; a `ClientSession` whose `initialize` offers VERSION for
the handshake versions), lists the tools, calls a read, takes a confirm-gated write through the gate (refused
with its card, then run with `confirm: true`; from 2025-06-18 on, where elicitation exists, also asked of the
person: one approval runs it, one refusal does not), lists the ledger to see what ran, and hears of a tool list
change (the `transit` pack activated or deactivated meanwhile): a notification on the session up to
2025-11-25, a `subscriptions/listen` stream from 2026-07-28 on.

Usage: versions.py HCPX_BIN HCP_HOME VERSION [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)
"""

import asyncio
import json
import subprocess
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.types import ElicitResult
from transport import client_for, env_for, envelope_of, open_transport

HCPX, HOME, VERSION = sys.argv[1], sys.argv[2], sys.argv[3]
URL, TOKEN = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
MODERN = "2026-07-28"
ELICITATION_SINCE = "2025-06-18"
# Each version's payments have amounts of their own, so the ledger says which of this run's calls ran.
N = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", MODERN].index(VERSION)
AMOUNT = {"confirmed": f"1.{N}1", "approved": f"1.{N}2", "refused": f"1.{N}3", "gated": f"1.{N}4"}
WAIT_S = 20  # for a list change: the server looks at the store every 300 ms


def seen(r):
    env = envelope_of(r) or {}
    return {"is_error": bool(r.is_error), "code": env.get("code"), "ok": env.get("ok"),
            "result": r.structured_content if not r.is_error else None, "preview_title": (env.get("preview") or {}).get("title"),
            "text": "\n".join(c.text for c in r.content if getattr(c, "text", None))}


def pay(key, **extra):
    return "ledger__transfer", {"amount": AMOUNT[key], "payee": "demo-transit", **extra}


def flip_transit(active):
    """Activates the transit pack where it is not, deactivates it where it is."""
    cmd = "deactivate" if active else "activate"
    subprocess.run([HCPX, cmd, "transit"], env=env_for(HOME), check=True, capture_output=True)


async def exercise(call, list_names, report):
    """What every version does once connected: `call(tool, args)` and `list_names()` are the session's."""
    names = await list_names()
    report["tools"] = sorted(names)
    report["read"] = seen(await call("transit-composite__plan", {"from": "A", "to": "B"}))
    report["gated"] = seen(await call(*pay("gated")))
    report["confirmed"] = seen(await call(*pay("confirmed", confirm=True)))
    return names


async def ledger_amounts(call):
    entries = ((await call("ledger__list", {})).structured_content or {}).get("entries", [])
    return sorted(e["amount"] for e in entries if e.get("amount", "").startswith(f"1.{N}"))


async def initialize_at(session, version, can_ask):
    """`ClientSession.initialize`, offering `version` instead of the SDK's newest handshake version: the same
    request, the SDK's own `adopt` of the answer, then `notifications/initialized`."""
    caps = types.ClientCapabilities(
        elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()) if can_ask else None)
    params = types.InitializeRequestParams(protocol_version=version, capabilities=caps,
                                           client_info=types.Implementation(name="versions.py", version="1"))
    result = await session.send_request(types.InitializeRequest(params=params), types.InitializeResult)
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


async def handshake(report):
    can_ask = VERSION >= ELICITATION_SINCE
    asked, answers = [], iter([True, False])
    notes = []

    async def person(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": next(answers)})

    async def on_message(message):
        notes.append(repr(message)[:200])

    # Without a person: the gate refuses, then `confirm: true` runs it.
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1], message_handler=on_message) as s:
            init = await initialize_at(s, VERSION, False)
            report["protocol"] = init.protocol_version
            report["session_protocol"] = s.protocol_version
            report["server"] = init.server_info.name
            report["list_changed_capability"] = bool(init.capabilities.tools and init.capabilities.tools.list_changed)
            names = await exercise(s.call_tool, lambda: names_of(s), report)
            # A tool list change while the session is open.
            flip_transit("transit__plan" in names)
            for _ in range(WAIT_S * 20):
                if any("ToolListChanged" in n or "tools/list_changed" in n for n in notes):
                    break
                await asyncio.sleep(0.05)
            report["list_changed"] = any("ToolListChanged" in n or "tools/list_changed" in n for n in notes)
            report["transit_before"] = "transit__plan" in names
            report["transit_after"] = "transit__plan" in await names_of(s)
    # With a person to ask (the versions that have elicitation): one approval runs it, one refusal does not.
    if can_ask:
        async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=person) as s:
                await initialize_at(s, VERSION, True)
                report["approved"] = seen(await s.call_tool(*pay("approved")))
                report["refused"] = seen(await s.call_tool(*pay("refused")))
                report["paid"] = await ledger_amounts(s.call_tool)
    else:
        async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await initialize_at(s, VERSION, False)
                report["paid"] = await ledger_amounts(s.call_tool)
    report["asked"] = asked


async def names_of(session):
    return [t.name for t in (await session.list_tools()).tools]


async def modern(report):
    asked, answers = [], iter([True, False])

    async def person(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": next(answers)})

    # Without a person: the gate refuses, then `confirm: true` runs it.
    async with client_for(HCPX, HOME, URL, TOKEN) as client:
        s = client.session
        report["protocol"] = s.protocol_version
        report["supported_versions"] = list(s.discover_result.supported_versions)
        report["server"] = client.server_info.name if client.server_info else None
        caps = s.discover_result.capabilities
        report["list_changed_capability"] = bool(caps.tools and caps.tools.list_changed)

        async def list_names():
            return [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]

        names = await exercise(client.call_tool, list_names, report)
        # A tool list change while a subscriptions/listen stream is open.
        report["transit_before"] = "transit__plan" in names
        report["list_changed"] = False
        try:
            async with client.listen(tools_list_changed=True) as sub:
                flip_transit("transit__plan" in names)
                async with asyncio.timeout(WAIT_S):
                    async for event in sub:
                        report["list_changed"] = type(event).__name__ == "ToolsListChanged"
                        break
        except Exception as e:  # no stream (the server refused the listen), or no event in time
            report["listen_error"] = f"{type(e).__name__}: {e}"
        report["transit_after"] = "transit__plan" in await list_names()
    # With a person to ask: the SDK answers the server's `input_required` rounds itself.
    async with client_for(HCPX, HOME, URL, TOKEN, elicitation_callback=person) as client:
        report["approved"] = seen(await client.call_tool(*pay("approved")))
        report["refused"] = seen(await client.call_tool(*pay("refused")))
        report["paid"] = await ledger_amounts(client.call_tool)
    report["asked"] = asked


async def main() -> None:
    report = {"version": VERSION, "amounts": AMOUNT}
    await (modern(report) if VERSION == MODERN else handshake(report))
    print(json.dumps(report))


asyncio.run(main())
