"""Calls tools in turn, with the official MCP Python SDK, and reports what each answered as the model and its
host see it: `isError`, `structuredContent` and the text block, and the envelope a client reads in `_meta`.

Usage: calls.py HCPX_BIN HCP_HOME PLAN [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)

PLAN is JSON: [[tool, {args}], …]
"""

import asyncio
import json
import sys

from mcp import ClientSession
from transport import envelope_of, open_transport

HCPX, HOME, PLAN = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
URL, TOKEN = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)


async def main() -> None:
    results = []
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            await session.initialize()
            for tool, args in PLAN:
                r = await session.call_tool(tool, args)
                results.append({"is_error": bool(r.is_error), "structured": r.structured_content,
                                "envelope": envelope_of(r),
                                "text": "\n".join(c.text for c in r.content if getattr(c, "text", None))})
    print(json.dumps({"results": results}))


asyncio.run(main())
