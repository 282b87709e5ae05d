"""Drives a confirm-gated write with the SDK's default `mcp.Client`, which negotiates protocol 2026-07-28: the
server asks for the person's approval with an `input_required` answer (an elicitation and a sealed
`requestState`) instead of a request of its own. An approval runs the call once, a refusal runs nothing, and a
replayed, altered or moved request state is refused.

Usage: modern.py HCPX_BIN HCP_HOME [MCP_URL BEARER_TOKEN]   (with a URL: over Streamable HTTP)
"""

import asyncio
import json
import sys

from mcp.types import ElicitResult, InputRequiredResult
from transport import client_for

HCPX, HOME = sys.argv[1], sys.argv[2]
URL, TOKEN = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else (None, None)
ARGS = {"amount": "2.80", "payee": "demo-transit"}
YES = {"approve": {"action": "accept", "content": {"approve": True}}}


def seen(r):
    if isinstance(r, InputRequiredResult):
        return {"input_required": True, "requests": sorted((r.input_requests or {}).keys()),
                "has_state": bool(r.request_state)}
    return {"is_error": bool(r.is_error), "structured": r.structured_content,
            "text": r.content[0].text if r.content else ""}


async def main() -> None:
    asked = []
    answers = iter([("accept", True), ("decline", None), ("accept", False)])

    async def person(context, params):
        asked.append(params.message)
        action, approve = next(answers)
        return ElicitResult(action=action, content=None if approve is None else {"approve": approve})

    report = {}
    async with client_for(HCPX, HOME, URL, TOKEN, elicitation_callback=person) as client:
        report["protocol"] = client.session.protocol_version
        # The SDK drives the rounds itself: the person approves once, then declines, then says no.
        for key in ("approved", "declined", "said_no"):
            report[key] = seen(await client.call_tool("ledger__transfer", ARGS))

        # The rounds by hand, as an attacker replaying or editing them would.
        s = client.session
        first = await s.call_tool("ledger__transfer", ARGS, allow_input_required=True)
        report["first"] = seen(first)
        state = first.request_state
        # The same state with other arguments, and an edited state: refused; the approval is still unused.
        moved = dict(ARGS, amount="999.00")
        report["moved"] = seen(await s.call_tool("ledger__transfer", moved, input_responses=YES,
                                                 request_state=state, allow_input_required=True))
        cut = state[:-2] + ("AA" if not state.endswith("AA") else "BB")
        report["altered"] = seen(await s.call_tool("ledger__transfer", ARGS, input_responses=YES,
                                                   request_state=cut, allow_input_required=True))
        report["forged"] = seen(await s.call_tool("ledger__transfer", ARGS, input_responses=YES,
                                                  request_state="hs1.bm90LWEtc3RhdGU", allow_input_required=True))
        report["resumed"] = seen(await s.call_tool("ledger__transfer", ARGS, input_responses=YES,
                                                   request_state=state, allow_input_required=True))
        report["replayed"] = seen(await s.call_tool("ledger__transfer", ARGS, input_responses=YES,
                                                    request_state=state, allow_input_required=True))
    report["asked"] = asked
    print(json.dumps(report))


asyncio.run(main())
