"""Reads the packs' Skills (resources) and the `use-packs` prompt with the official MCP Python SDK, as an agent
host does before the model's first call, with both the older `ClientSession` (handshake, 2025-11-25) and the
default `mcp.Client` (2026-07-28), and prints what each saw.

Usage: resources.py HCPX_BIN HCP_HOME URIS PACKS [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)

URIS is JSON: the resource URIs to read; PACKS is JSON: the `pack` arguments to get the prompt with ("" for none).
"""

import asyncio
import json
import sys

from mcp import ClientSession
from transport import client_for, open_transport

HCPX, HOME, URIS, PACKS = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
URL, TOKEN = (sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None)


def refused(e):
    error = getattr(e, "error", None)
    return {"code": getattr(error, "code", None), "message": getattr(error, "message", str(e))}


async def seen(api, init=None):
    report = {}
    if init is not None:
        caps = init.capabilities
        report["capabilities"] = {
            "resources": bool(caps.resources),
            "resources_list_changed": bool(caps.resources and caps.resources.list_changed),
            "prompts": bool(caps.prompts),
        }
    listed = await api.list_resources()
    report["resources"] = [r.model_dump(by_alias=True, exclude_none=True, mode="json") for r in listed.resources]
    report["reads"] = {}
    for uri in URIS:
        try:
            r = await api.read_resource(uri)
            report["reads"][uri] = {"contents": [c.model_dump(by_alias=True, exclude_none=True, mode="json")
                                                 for c in r.contents]}
        except Exception as e:  # the SDK raises on a JSON-RPC error
            report["reads"][uri] = {"error": refused(e)}
    prompts = await api.list_prompts()
    report["prompts"] = [p.model_dump(by_alias=True, exclude_none=True, mode="json") for p in prompts.prompts]
    report["prompt"] = {}
    for pack in PACKS:
        try:
            r = await api.get_prompt("use-packs", {"pack": pack} if pack else None)
            report["prompt"][pack] = {"messages": [m.model_dump(by_alias=True, exclude_none=True, mode="json")
                                                   for m in r.messages]}
        except Exception as e:
            report["prompt"][pack] = {"error": refused(e)}
    return report


async def main() -> None:
    report = {}
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            report["legacy"] = await seen(session, init)
            report["legacy"]["protocol"] = init.protocol_version
    async with client_for(HCPX, HOME, URL, TOKEN) as client:
        report["modern"] = await seen(client)
        report["modern"]["protocol"] = client.session.protocol_version
    print(json.dumps(report))


asyncio.run(main())
