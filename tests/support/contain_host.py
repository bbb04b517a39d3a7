"""A host that drives agentkit's tools itself, to be killed by the tests mid-call.

`python contain_host.py BACKEND MARKER MCP_SERVER`: under the anyio backend BACKEND it
starts a `process` job, the MCP server `MCP_SERVER MARKER` and calls its hanging tool, and
a `Bash` command with a backgrounded and a `setsid` grandchild, every one of them running
`sleep MARKER`; then it waits for ever.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import anyio

from agentkit.tools import ToolContext, builtin_tools, mcp_tools


async def main(marker: str, server: str) -> None:
    tools = builtin_tools()
    ctx = ToolContext(
        working_dir=Path(tempfile.gettempdir()), run_id="r", session_id="s", agent_id="a"
    )
    bash, process = tools.get("Bash"), tools.get("process")
    assert bash is not None and process is not None
    await process.function({"action": "start", "command": f"sleep {marker}"}, ctx)
    config = {"hang": {"command": sys.executable, "args": [server, marker]}}
    async with mcp_tools(config) as started:
        (hang,) = started
        command = f"sleep {marker} & setsid sleep {marker} & sleep {marker}"
        async with anyio.create_task_group() as group:
            group.start_soon(hang.function, {}, ctx)
            group.start_soon(bash.function, {"command": command}, ctx)


if __name__ == "__main__":
    anyio.run(main, sys.argv[2], sys.argv[3], backend=sys.argv[1])
