"""Calls one tool over Streamable HTTP with the SDK's default `mcp.Client`, the caller's span in the request's
`_meta` (`traceparent` and `tracestate`, as SEP-414 and the SDK's own propagation put them), for the trace tests
(tests/integration/traces.rs).

Usage: traced.py HCPX_BIN HCP_HOME MCP_URL BEARER_TOKEN TOOL TRACEPARENT TRACESTATE
"""

import asyncio
import json
import sys

from transport import client_for

HCPX, HOME, URL, TOKEN, TOOL, TRACEPARENT, TRACESTATE = sys.argv[1:8]


async def main() -> None:
    async with client_for(HCPX, HOME, URL, TOKEN) as client:
        r = await client.call_tool(TOOL, {}, meta={"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
        print(json.dumps({"is_error": bool(r.is_error), "structured": r.structured_content}))


asyncio.run(main())
