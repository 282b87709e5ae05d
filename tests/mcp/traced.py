"""Calls one tool over Streamable HTTP with the SDK's default `mcp.Client`, the caller's span in the request's
`_meta` (`traceparent` and `tracestate`, as SEP-414 and the SDK's own propagation put them), or in the HTTP
request's `traceparent` and `tracestate` headers, for the trace tests (tests/integration/traces.rs).

Usage: traced.py HCPX_BIN HCP_HOME MCP_URL BEARER_TOKEN TOOL TRACEPARENT TRACESTATE meta|header
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

HCPX, HOME, URL, TOKEN, TOOL, TRACEPARENT, TRACESTATE, WHERE = sys.argv[1:9]


async def main() -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    meta = None
    if WHERE == "header":
        headers.update({"traceparent": TRACEPARENT, "tracestate": TRACESTATE})
    else:
        meta = {"traceparent": TRACEPARENT, "tracestate": TRACESTATE}
    http = create_mcp_http_client(headers=headers)
    async with Client(streamable_http_client(URL, http_client=http)) as client:
        r = await client.call_tool(TOOL, {}, meta=meta)
        print(json.dumps({"is_error": bool(r.is_error), "structured": r.structured_content}))


asyncio.run(main())
