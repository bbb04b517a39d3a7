"""An MCP stdio server whose one tool never returns: `hang` starts `sleep MARKER` in a
session of its own (a grandchild that left the server's process group), then waits for
ever. Run as `python contain_mcp_server.py MARKER` (the marker is in its command line
too)."""

from __future__ import annotations

import subprocess
import sys

import anyio
import anyio.to_thread
from mcp.server.mcpserver import MCPServer

server = MCPServer("agentkit-contain")


@server.tool()
async def hang() -> str:
    """Start a background sleep and never return."""
    await anyio.to_thread.run_sync(
        lambda: subprocess.Popen(["sleep", sys.argv[1]], start_new_session=True)
    )
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    server.run()
