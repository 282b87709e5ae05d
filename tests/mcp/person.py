"""A client whose user is asked (elicitation) and a model that tries to get past them: a plan of calls of
`ledger__transfer`, each with the arguments the model sends (perhaps `"confirm": true`), and the person's answers
in turn. Reports every answer and every question the person saw.

Usage: person.py HCPX_BIN HCP_HOME PLAN [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)

PLAN is JSON: {"calls": [{args}, …], "answers": ["yes" | "no" | "decline", …],
               "modern": bool (the SDK's default mcp.Client, protocol 2026-07-28),
               "single": bool (`hcpx mcp --single-tool`: `exec ledger transfer {args}` of the one hcp tool)}
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import ElicitResult, InputRequiredResult
from transport import client_for, env_for, open_transport

HCPX, HOME, PLAN = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
URL, TOKEN = (sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else (None, None)


def seen(r):
    if isinstance(r, InputRequiredResult):
        return {"input_required": True}
    return {"is_error": bool(r.is_error), "structured": r.structured_content,
            "text": r.content[0].text if r.content else ""}


def tool_and_args(args):
    if PLAN.get("single"):
        return "hcp", {"command": "exec ledger transfer " + json.dumps(args)}
    return "ledger__transfer", args


async def main() -> None:
    asked = []
    answers = iter(PLAN["answers"])

    async def person(context, params):
        asked.append(params.message)
        said = next(answers)
        if said == "decline":
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"approve": said == "yes"})

    results = []
    if PLAN.get("modern"):
        async with client_for(HCPX, HOME, URL, TOKEN, elicitation_callback=person) as client:
            for args in PLAN["calls"]:
                results.append(seen(await client.call_tool(*tool_and_args(args))))
    else:
        transport = open_transport(HCPX, HOME, URL, TOKEN)
        if PLAN.get("single"):
            params = StdioServerParameters(command=HCPX, args=["mcp", "--single-tool"], env=env_for(HOME), cwd=HOME)
            transport = stdio_client(params)
        async with transport as streams:
            async with ClientSession(streams[0], streams[1], elicitation_callback=person) as session:
                await session.initialize()
                for args in PLAN["calls"]:
                    results.append(seen(await session.call_tool(*tool_and_args(args))))
    print(json.dumps({"asked": asked, "results": results}))


asyncio.run(main())
