"""Drives a confirm-gated write through `hcpx mcp` from a client that can ask its user (elicitation): the
person is shown the card; one approval runs the call, one refusal does not.

Usage: elicit.py HCPX_BIN HCP_HOME [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.types import ElicitResult
from transport import open_transport

HCPX, HOME = sys.argv[1], sys.argv[2]
URL, TOKEN = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)


async def main() -> None:
    asked = []
    answers = iter([True, False])

    async def person(context, params):
        asked.append(params.message)
        return ElicitResult(action="accept", content={"approve": next(answers)})

    report = {}
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write, elicitation_callback=person) as session:
            await session.initialize()
            args = {"amount": "2.80", "payee": "demo-transit"}
            for key in ("approved", "refused"):
                r = await session.call_tool("ledger__transfer", args)
                report[key] = {"is_error": bool(r.is_error), "structured": r.structured_content,
                               "text": r.content[0].text if r.content else ""}
    report["asked"] = asked
    print(json.dumps(report))


asyncio.run(main())
