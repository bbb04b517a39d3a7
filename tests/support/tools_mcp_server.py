"""A tiny MCP server for the tools tests: stdio by default, `http <port>` for streamable HTTP."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("agentkit-test")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool()
def env_value(name: str) -> str:
    """The value of an environment variable of the server process."""
    return os.environ.get(name, "<unset>")


@server.tool()
def fail(message: str) -> str:
    """Always fails with `message`."""
    raise ToolError(message)


@server.tool(name="dotted.name")
def dotted() -> str:
    """A tool whose name needs sanitising."""
    return "dotted ok"


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
