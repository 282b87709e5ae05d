"""Drives `hcpx serve`'s /mcp on several replicas with the official SDK, each HTTP request sent to the next replica
in turn (transport.py's RoundRobin: a load balancer with no affinity), and prints one JSON report of what it saw,
for tests/integration/mcp_replicas.rs to check.

Usage: replicas.py HCPX_BIN HCP_HOME URLS BEARER_TOKEN MODE
  URLS  the replicas' MCP URLs, comma-separated
  MODE  `modern`: the SDK's default `mcp.Client` (protocol 2026-07-28, no session: `server/discover`);
        a version such as `2025-11-25` or `2025-03-26`: a `ClientSession` pinned to it, whose `initialize` opens
        a session every later request names (`Mcp-Session-Id`), ended with a DELETE when it closes; afterwards
        each replica is asked once more for a tools/list in that session (every one must answer 404).
"""

import asyncio
import json
import sys

import httpx2
import mcp.client.session as client_session
import transport
from mcp import ClientSession
from transport import ROUTES, client_for, open_transport

HCPX, HOME, URLS, TOKEN, MODE = sys.argv[1:6]
READ = ("ledger__status", {})


def result(r):
    return {"is_error": bool(r.is_error), "text": r.content[0].text if r.content else ""}


async def modern(report):
    async with client_for(HCPX, HOME, URLS, TOKEN) as client:
        s = client.session
        report["protocol"] = s.protocol_version
        report["discovered"] = s.discover_result is not None
        report["server"] = s.server_info.name if s.server_info else None
        report["rounds"] = []
        for _ in range(3):
            tools = await client.list_tools()
            read = await client.call_tool(*READ)
            report["rounds"].append({"tools": sorted(t.name for t in tools.tools), "read": result(read)})


async def legacy(report, version):
    # The SDK's ClientSession offers its newest handshake version; pin it to the one under test.
    client_session.LATEST_HANDSHAKE_VERSION = version
    async with open_transport(HCPX, HOME, URLS, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1]) as s:
            init = await s.initialize()
            report["protocol"] = init.protocol_version
            report["server"] = init.server_info.name
            report["rounds"] = []
            for _ in range(3):
                tools = await s.list_tools()
                read = await s.call_tool(*READ)
                report["rounds"].append({"tools": sorted(t.name for t in tools.tools), "read": result(read)})
            # One request more, so the closing DELETE goes to another replica than the initialize.
            await s.send_ping()
    issued = [r["session_id"] for r in ROUTES if r.get("session_id")]
    report["after_delete"] = []
    if not issued:
        return
    # The session was deleted: no replica may serve it any more, whichever held it in memory.
    body = {"jsonrpc": "2.0", "id": 99, "method": "tools/list", "params": {}}
    headers = {
        "Authorization": f"Bearer {TOKEN}",
        "Accept": "application/json, text/event-stream",
        "Mcp-Session-Id": issued[0],
        "MCP-Protocol-Version": version,
    }
    async with httpx2.AsyncClient(timeout=30) as http:
        for url in URLS.split(","):
            r = await http.post(url, json=body, headers=headers)
            report["after_delete"].append(r.status_code)


async def main() -> None:
    report = {}
    if MODE == "modern":
        await modern(report)
    else:
        await legacy(report, MODE)
    report["routes"] = [{k: v for k, v in r.items() if k != "session_id"} for r in transport.ROUTES]
    report["session_ids"] = sorted({r["session_id"] for r in transport.ROUTES if r.get("session_id")})
    print(json.dumps(report))


asyncio.run(main())
