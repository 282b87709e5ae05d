"""Drives `hcpx mcp --single-tool` with the official MCP Python SDK: one `hcp` tool and its command language.

Usage: single.py HCPX_BIN HCP_HOME
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HCPX, HOME = sys.argv[1], sys.argv[2]
ENV = {"HCP_HOME": HOME, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": HOME}


async def main() -> None:
    report = {}
    params = StdioServerParameters(command=HCPX, args=["mcp", "--single-tool"], env=ENV, cwd=HOME)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            report["tools"] = [t.name for t in tools]
            report["annotations"] = tools[0].annotations.model_dump(by_alias=True, exclude_none=True)
            for key, line in [
                ("list", "list"),
                ("commands", "commands ledger"),
                ("skill", "skill ledger"),
                ("read", 'exec transit-composite plan {"from": "A", "to": "B"}'),
                ("gated", 'exec ledger transfer {"amount": "2.80", "payee": "demo-transit"}'),
                ("confirmed", 'exec ledger transfer {"amount": "2.80", "payee": "demo-transit", "confirm": true}'),
                ("nonsense", "frobnicate"),
            ]:
                r = await session.call_tool("hcp", {"command": line})
                report[key] = {"is_error": bool(r.is_error), "structured": r.structured_content,
                               "text": r.content[0].text if r.content else ""}
    print(json.dumps(report))


asyncio.run(main())
