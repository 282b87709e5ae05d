"""The SDK's own OAuth client against `hcpx serve`'s /mcp, twice.

First with nothing stored: `ClientCredentialsOAuthProvider` meets the 401, reads the protected resource metadata
it names (RFC 9728), the issuer's metadata, gets a JWT access token for this server's resource (RFC 8707) with
the client credentials grant from the OpenID provider the test started, and calls a tool with it.

Then holding a token of the read scope only (READ_TOKEN, got by the test): it lists and calls the reads; a write
meets the server's 403 `insufficient_scope`, and the SDK asks the issuer again for the scope it names (step-up),
and the write goes through.

Usage: oauth.py HCPX_BIN HCP_HOME MCP_URL ISSUER CLIENT_ID READ_TOKEN   (SSL_CERT_FILE: the test's CA)
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import OAuthToken
from transport import envelope_of

HCPX, HOME, URL, ISSUER, CLIENT, READ_TOKEN = sys.argv[1:7]


class Memory:
    """Token storage for one run."""

    def __init__(self):
        self.tokens, self.info = None, None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.info

    async def set_client_info(self, info):
        self.info = info


def session(storage, seen):
    """An HTTP client whose requests the SDK's OAuth provider authorizes, every answer recorded."""
    auth = ClientCredentialsOAuthProvider(
        server_url=URL, storage=storage, client_id=CLIENT, client_secret=f"secret-{CLIENT}", issuer=ISSUER,
    )

    async def record(response: httpx2.Response) -> None:
        seen.append({"method": response.request.method, "url": str(response.request.url),
                     "status": response.status_code,
                     "www_authenticate": response.headers.get("www-authenticate")})

    http = create_mcp_http_client(auth=auth)
    http.event_hooks["response"].append(record)
    return Client(streamable_http_client(URL, http_client=http))


async def main() -> None:
    report = {}
    fresh, seen = Memory(), []
    async with session(fresh, seen) as client:
        report["protocol"] = client.session.protocol_version
        r = await client.call_tool("notes__look", {})
        report["fresh"] = {"is_error": bool(r.is_error), "envelope": envelope_of(r), "result": r.structured_content,
                           "scope": fresh.tokens.scope if fresh.tokens else None}
    report["fresh_exchanges"] = seen

    reader, seen = Memory(), []
    reader.tokens = OAuthToken(access_token=READ_TOKEN, token_type="Bearer", scope="hcp.read", expires_in=600)
    async with session(reader, seen) as client:
        tools = await client.list_tools()
        report["tools"] = sorted(t.name for t in tools.tools)
        r = await client.call_tool("notes__look", {})
        report["read"] = {"is_error": bool(r.is_error), "envelope": envelope_of(r), "result": r.structured_content}
        w = await client.call_tool("notes__save", {})
        report["write"] = {"is_error": bool(w.is_error), "envelope": envelope_of(w), "result": w.structured_content}
        report["final_scope"] = reader.tokens.scope if reader.tokens else None
    report["exchanges"] = seen
    print(json.dumps(report))


asyncio.run(main())
