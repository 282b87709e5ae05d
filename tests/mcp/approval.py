"""An MCP client that cannot ask its user, against a runtime whose operator requires a person's approval of
`ledger.transfer` (`sandbox.json` `human_approval`): the model's own `"confirm": true` runs nothing; the call
answers `approval_pending` with an approval id and the card; a person approves it out of band (`hcpx approve ID`
at the store's terminal, or an approver Principal over HTTP) and the retry with the id runs once. A replayed,
altered, refused, expired or made-up approval is refused.

Usage: approval.py HCPX_BIN HCP_HOME TTL_S [MCP_URL BEARER_TOKEN APPROVER_TOKEN]   (with a URL: over HTTP)
"""

import asyncio
import json
import subprocess
import sys
import time
import urllib.request

from transport import client_for, env_for

HCPX, HOME, TTL = sys.argv[1], sys.argv[2], float(sys.argv[3])
URL, TOKEN, APPROVER = (sys.argv[4], sys.argv[5], sys.argv[6]) if len(sys.argv) > 6 else (None, None, None)
ARGS = {"amount": "2.80", "payee": "demo-transit"}


def decide(approval_id, verb):
    """The person's decision, out of band: the terminal's `hcpx approve|refuse`, or the HTTP endpoint."""
    if URL is None:
        out = subprocess.run([HCPX, verb, approval_id, "--json"], env=env_for(HOME), cwd=HOME,
                             capture_output=True, text=True)
        return {"status": out.returncode, "body": json.loads(out.stdout or "{}")}
    base = URL.rsplit("/mcp", 1)[0]
    req = urllib.request.Request(f"{base}/v1/approvals/{approval_id}/{verb}", method="POST", data=b"",
                                 headers={"Authorization": f"Bearer {APPROVER}"})
    try:
        with urllib.request.urlopen(req) as r:
            return {"status": r.status, "body": json.loads(r.read())}
    except urllib.error.HTTPError as e:
        return {"status": e.code, "body": json.loads(e.read())}


def seen(r):
    s = r.structured_content or {}
    return {"is_error": bool(r.is_error), "code": s.get("code"), "error": s.get("error"),
            "approval_id": s.get("approval_id"), "preview": s.get("preview"),
            "text": r.content[0].text if r.content else ""}


async def main() -> None:
    report = {}
    async with client_for(HCPX, HOME, URL, TOKEN) as client:
        call = client.call_tool
        report["elicitation_declared"] = False
        # The attack of the issue: the model approves its own write by sending confirm itself.
        held = seen(await call("ledger__transfer", dict(ARGS, confirm=True)))
        report["self_confirmed"] = held
        first = held["approval_id"]
        # Before any person decided, the id alone runs nothing.
        report["not_yet"] = seen(await call("ledger__transfer", dict(ARGS, approval_id=first)))
        report["approve"] = decide(first, "approve")
        # Altered: the approved id with other arguments; a made-up id.
        report["altered"] = seen(await call("ledger__transfer", dict(ARGS, amount="999.00", approval_id=first)))
        report["made_up"] = seen(await call("ledger__transfer", dict(ARGS, approval_id="ap_000000000000000000000000")))
        report["ran"] = seen(await call("ledger__transfer", dict(ARGS, approval_id=first)))
        report["replayed"] = seen(await call("ledger__transfer", dict(ARGS, approval_id=first)))
        # Refused by the person: never runs.
        second = seen(await call("ledger__transfer", ARGS))["approval_id"]
        report["refuse"] = decide(second, "refuse")
        report["refused"] = seen(await call("ledger__transfer", dict(ARGS, approval_id=second)))
        # Approved, then left past its expiry: refused.
        third = seen(await call("ledger__transfer", ARGS))["approval_id"]
        report["approve_late"] = decide(third, "approve")
        time.sleep(TTL + 0.5)
        report["expired"] = seen(await call("ledger__transfer", dict(ARGS, approval_id=third)))
    print(json.dumps(report))


asyncio.run(main())
