"""Drives `hcpx mcp` over stdio, or `hcpx serve`'s /mcp over Streamable HTTP, with the official MCP Python SDK
(the way an agent host does) and prints one JSON document of what it saw, for tests/integration/mcp.rs to check.

Usage: client.py HCPX_BIN HCP_HOME PACK_TO_INSTALL_DURING_THE_SESSION [MCP_URL BEARER_TOKEN]
"""


import asyncio
import json
import os
import subprocess
import sys

from mcp import ClientSession
from transport import env_for, envelope_of, open_transport

HCPX, HOME, LATE_PACK = sys.argv[1], sys.argv[2], sys.argv[3]
URL, TOKEN = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)
ENV = env_for(HOME)


def result(r):
    return {
        "is_error": bool(r.is_error),
        "structured": r.structured_content,
        "envelope": envelope_of(r),
        "text": [c.text for c in r.content if getattr(c, "type", "") == "text"],
    }


async def main() -> None:
    seen = []

    async def on_message(message):
        seen.append(repr(message)[:200])

    report = {}
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, message_handler=on_message) as session:
            init = await session.initialize()
            report["server"] = init.server_info.name
            report["list_changed_capability"] = bool(init.capabilities.tools and init.capabilities.tools.list_changed)
            tools = await session.list_tools()
            report["tools"] = {
                t.name: {
                    "title": t.title,
                    "description": t.description,
                    "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True) if t.annotations else None,
                    "input_schema": t.input_schema,
                }
                for t in tools.tools
            }
            report["read"] = result(await session.call_tool("transit-composite__plan", {"from": "A", "to": "B"}))
            report["bad_args"] = result(await session.call_tool("transit-composite__plan", {"from": "A"}))
            args = {"amount": "2.80", "payee": "demo-transit"}
            report["gated"] = result(await session.call_tool("ledger__transfer", args))
            report["confirmed"] = result(await session.call_tool("ledger__transfer", {**args, "confirm": True}))
            try:
                await session.call_tool("nope__nothing", {})
                report["unknown_tool"] = "answered"
            except Exception as e:  # the SDK raises on a JSON-RPC error
                report["unknown_tool"] = {"code": getattr(getattr(e, "error", None), "code", None), "message": str(e)}
            # A long call the client gives up on: the SDK cancels it (notifications/cancelled).
            try:
                await session.call_tool("slow__wait", {}, read_timeout_seconds=1.0)
                report["cancelled"] = "answered"
            except Exception as e:
                report["cancelled"] = {"raised": type(e).__name__}
            # A pack installed and activated while the session runs: the server says the list changed.
            for cmd in (["install", LATE_PACK], ["activate", os.path.basename(LATE_PACK.rstrip("/"))]):
                subprocess.run([HCPX, *cmd], env=ENV, check=True, capture_output=True)
            for _ in range(100):
                if any("ToolListChanged" in s or "tools/list_changed" in s for s in seen):
                    break
                await asyncio.sleep(0.05)
            report["list_changed"] = any("ToolListChanged" in s or "tools/list_changed" in s for s in seen)
            report["tools_after"] = sorted(t.name for t in (await session.list_tools()).tools)
    print(json.dumps(report))


asyncio.run(main())
