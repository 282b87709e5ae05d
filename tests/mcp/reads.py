"""What a model reads of a call, with the official MCP Python SDK: a read's whole tool result as it crosses the
wire (structured content, text block, `_meta`), a denial's, progress notifications through a slow call, and the
resource list changing when a pack is installed mid-session. The older `ClientSession` (handshake, 2025-11-25)
and the default `mcp.Client` (2026-07-28) each make the calls.

Usage: reads.py HCPX_BIN HCP_HOME LATE_PACK [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)
"""

import asyncio
import json
import os
import subprocess
import sys
import time

from mcp import ClientSession
from transport import client_for, env_for, envelope_of, open_transport

HCPX, HOME, LATE_PACK = sys.argv[1], sys.argv[2], sys.argv[3]
URL, TOKEN = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)


def wire(r):
    """The tool result as the server sent it, and its envelope."""
    return {"raw": r.model_dump(by_alias=True, exclude_none=True, mode="json"), "envelope": envelope_of(r)}


async def calls(api):
    report = {"read": wire(await api.call_tool("pause__peek", {})),
              "text": wire(await api.call_tool("pause__say", {})),
              "denied": wire(await api.call_tool("ledger__transfer", {"amount": "2.80", "payee": "demo-transit"}))}
    notes = []
    start = time.monotonic()

    async def on_progress(progress, total, message):
        notes.append({"progress": progress, "total": total, "message": message, "at": time.monotonic() - start})

    r = await api.call_tool("pause__wait", {}, progress_callback=on_progress)
    answered, at_answer = time.monotonic() - start, len(notes)
    # Anything still coming would come now.
    await asyncio.sleep(2.5)
    report["slow"] = {"result": wire(r), "notes": notes, "answered_at": answered, "notes_at_answer": at_answer}
    return report


async def main() -> None:
    seen = []

    async def on_message(message):
        seen.append(repr(message)[:200])

    report = {}
    async with open_transport(HCPX, HOME, URL, TOKEN) as streams:
        async with ClientSession(streams[0], streams[1], message_handler=on_message) as session:
            init = await session.initialize()
            report["legacy"] = await calls(session)
            report["legacy"]["protocol"] = init.protocol_version
            before = [r.uri for r in (await session.list_resources()).resources]
            # A pack installed and activated mid-session: its Skill is listed, and the client is told.
            for cmd in (["install", LATE_PACK], ["activate", os.path.basename(LATE_PACK.rstrip("/"))]):
                subprocess.run([HCPX, *cmd], env=env_for(HOME), check=True, capture_output=True)
            changed = lambda: any("ResourceListChanged" in s or "resources/list_changed" in s for s in seen)
            for _ in range(100):
                if changed():
                    break
                await asyncio.sleep(0.05)
            report["resources_changed"] = changed()
            report["resources_before"] = [str(u) for u in before]
            report["resources_after"] = [str(r.uri) for r in (await session.list_resources()).resources]
    async with client_for(HCPX, HOME, URL, TOKEN) as client:
        report["modern"] = await calls(client)
        report["modern"]["protocol"] = client.session.protocol_version
    print(json.dumps(report))


asyncio.run(main())
