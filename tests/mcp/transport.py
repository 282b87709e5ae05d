"""The transport the test clients reach hcpx through: `hcpx mcp` over stdio, or `hcpx serve`'s /mcp over
Streamable HTTP with a bearer token, from the same command-line arguments (HCPX_BIN HCP_HOME … [URL TOKEN])."""

import atexit
import json
import os

import httpx2
from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT


def env_for(home):
    """The environment `hcpx mcp` runs with: the test's store and nothing of the caller's."""
    env = {"HCP_HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    # The store the test chose (the PostgreSQL one, tests/integration/helpers.rs `Home::postgres`) goes along.
    for k in ("HCP_STORE", "HCP_SEAL_KEY_FILE"):
        if os.environ.get(k):
            env[k] = os.environ[k]
    return env


def open_transport(hcpx, home, url=None, token=None):
    """An async context manager yielding the (read, write, …) streams of one session."""
    if url:
        http = http_client_for(url, token)
        return streamable_http_client(first_url(url), http_client=http)
    return stdio_client(StdioServerParameters(command=hcpx, args=["mcp"], env=env_for(home), cwd=home))


def client_for(hcpx, home, url=None, token=None, **options):
    """The SDK's default `mcp.Client` (it negotiates the newest protocol, 2026-07-28) over the same transport."""
    from mcp import Client

    if url:
        http = http_client_for(url, token)
        return Client(streamable_http_client(first_url(url), http_client=http), **options)
    return Client(StdioServerParameters(command=hcpx, args=["mcp"], env=env_for(home), cwd=home), **options)


ENVELOPE_META = "dev.hcpx/envelope"


def envelope_of(result):
    """A tool result's envelope (`ok`, `code`, `error`, `preview`, …: all but the result, which is the structured
    content): in `_meta` under `dev.hcpx/envelope` where the server puts it there, else the structured content."""
    meta = getattr(result, "meta", None) or {}
    return meta.get(ENVELOPE_META) or result.structured_content



# Several replicas: an MCP URL argument may name several servers, comma-separated (`http://A/mcp,http://B/mcp`).
# Each HTTP request the SDK makes then goes to the next of them in turn, as a load balancer with no affinity
# would send it; ROUTES records where each went, and is written as JSON to $HCPX_ROUTES_FILE when the client
# exits. The client itself is the SDK's, unchanged: only its httpx client's transport picks the server.
ROUTES = []


def first_url(url):
    return url.split(",")[0]


def http_client_for(url, token):
    headers = {"Authorization": f"Bearer {token}"}
    urls = url.split(",")
    if len(urls) == 1:
        return create_mcp_http_client(headers=headers)
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return httpx2.AsyncClient(headers=headers, timeout=timeout, transport=RoundRobin(urls))


def _rpc_of(request):
    """The JSON-RPC method of a request's body (`response` for the client's answer to a server request)."""
    try:
        body = json.loads(request.content or b"null")
    except Exception:  # a streamed or empty body
        return None
    if isinstance(body, dict):
        return body.get("method") or ("response" if "result" in body or "error" in body else None)
    return None


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each request to the next server of `urls` in turn (their host and port; the path is the same)."""

    def __init__(self, urls):
        self.targets = [httpx2.URL(u) for u in urls]
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent = 0

    async def handle_async_request(self, request):
        i = self.sent % len(self.targets)
        self.sent += 1
        t = self.targets[i]
        request.url = request.url.copy_with(host=t.host, port=t.port)
        request.headers["Host"] = f"{t.host}:{t.port}"
        route = {"replica": i, "http": request.method, "rpc": _rpc_of(request)}
        ROUTES.append(route)
        response = await self.inner.handle_async_request(request)
        route["status"] = response.status_code
        route["session_id_issued"] = "mcp-session-id" in response.headers
        route["session_id"] = response.headers.get("mcp-session-id")
        route["named_session"] = "mcp-session-id" in request.headers
        return response

    async def aclose(self):
        await self.inner.aclose()


@atexit.register
def _write_routes():
    if ROUTES and os.environ.get("HCPX_ROUTES_FILE"):
        with open(os.environ["HCPX_ROUTES_FILE"], "w") as f:
            json.dump(ROUTES, f)
