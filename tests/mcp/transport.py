"""The transport the test clients reach hcpx through: `hcpx mcp` over stdio, or `hcpx serve`'s /mcp over
Streamable HTTP with a bearer token, from the same command-line arguments (HCPX_BIN HCP_HOME … [URL TOKEN])."""

import os

from mcp import StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


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
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return streamable_http_client(url, http_client=http)
    return stdio_client(StdioServerParameters(command=hcpx, args=["mcp"], env=env_for(home), cwd=home))


def client_for(hcpx, home, url=None, token=None, **options):
    """The SDK's default `mcp.Client` (it negotiates the newest protocol, 2026-07-28) over the same transport."""
    from mcp import Client

    if url:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        return Client(streamable_http_client(url, http_client=http), **options)
    return Client(StdioServerParameters(command=hcpx, args=["mcp"], env=env_for(home), cwd=home), **options)


ENVELOPE_META = "dev.hcpx/envelope"


def envelope_of(result):
    """A tool result's envelope (`ok`, `code`, `error`, `preview`, …: all but the result, which is the structured
    content): in `_meta` under `dev.hcpx/envelope` where the server puts it there, else the structured content."""
    meta = getattr(result, "meta", None) or {}
    return meta.get(ENVELOPE_META) or result.structured_content
