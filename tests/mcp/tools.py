"""Lists the tools `hcpx mcp` (stdio) or `hcpx serve`'s /mcp (Streamable HTTP, a bearer token) offers one
session, with the official MCP Python SDK, and prints their names as one JSON document.

Usage: tools.py HCPX_BIN HCP_HOME [MCP_URL BEARER_TOKEN]
"""

import asyncio
import json
import sys

from mcp import ClientSession
from transport import open_transport

HCPX, HOME = sys.argv[1], sys.argv[2]
URL, TOKEN = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)


async def main() -> None:
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            tools = await session.list_tools()
            print(json.dumps({"tools": sorted(t.name for t in tools.tools)}))


asyncio.run(main())
