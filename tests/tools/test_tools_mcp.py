"""MCP servers as tools, against a real MCP server process (stdio and streamable HTTP)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from agentkit.tools import (
    McpConfigError,
    McpServerError,
    ToolError,
    ToolRegistry,
    entry_allows,
    entry_tool_names,
    mcp_tools,
    parse_mcp_servers,
)
from support.paths import SUPPORT
from support.tools import make_ctx

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed")

SERVER = str(SUPPORT / "tools_mcp_server.py")


def stdio_config(**env: str) -> dict[str, object]:
    return {"local": {"command": sys.executable, "args": [SERVER], "env": env}}


@pytest.mark.anyio
async def test_stdio_server_tools_are_named_and_callable(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    async with mcp_tools(stdio_config(GREETING="hello from env")) as tools:
        registry = ToolRegistry(tools)
        assert sorted(t.name for t in tools) == [
            "mcp__local__add",
            "mcp__local__dotted_name",
            "mcp__local__env_value",
            "mcp__local__fail",
        ]
        add = registry.get("mcp__local__add")
        assert add is not None
        assert add.effect == "execute"
        assert add.description == "Add two integers."
        assert add.input_schema["required"] == ["a", "b"]
        assert await add.function({"a": 2, "b": 40}, ctx) == "42"
        env_value = registry.get("mcp__local__env_value")
        assert env_value is not None
        assert await env_value.function({"name": "GREETING"}, ctx) == "hello from env"
        dotted = registry.get("mcp__local__dotted_name")
        assert dotted is not None and await dotted.function({}, ctx) == "dotted ok"
        fail = registry.get("mcp__local__fail")
        assert fail is not None
        with pytest.raises(ToolError, match="boom"):
            await fail.function({"message": "boom"}, ctx)
        # MCP tools pass the same allowlist check as built-in ones.
        assert entry_allows("mcp__local__add", add, {"a": 1, "b": 2}, ctx)
        assert not entry_allows("mcp__local__fail", add, {"a": 1, "b": 2}, ctx)
        # A server-wide entry allows (and names) every tool of that server only.
        assert entry_allows("mcp__local", add, {}, ctx)
        assert entry_allows("mcp__local__*", add, {}, ctx)
        assert not entry_allows("mcp__loc", add, {}, ctx)
        assert not entry_allows("mcp__other", add, {}, ctx)
        assert not entry_allows("mcp__local(x)", add, {}, ctx)
        assert len(entry_tool_names("mcp__local", registry)) == 4
        assert entry_tool_names("mcp__local__add", registry) == ["mcp__local__add"]
        assert entry_tool_names("mcp__nope__*", registry) == []


@pytest.mark.anyio
async def test_stdio_server_stops_when_the_context_exits(tmp_path: Path) -> None:
    config = {
        "local": {
            "command": sys.executable,
            "args": [SERVER],
        }
    }
    ctx = make_ctx(tmp_path)
    before = set(_child_pids())
    async with mcp_tools(config) as tools:
        env_value = next(t for t in tools if t.name == "mcp__local__env_value")
        children = [pid for pid in _child_pids() if pid not in before]
        assert children, "the server process should be running"
        assert await env_value.function({"name": "NOPE"}, ctx) == "<unset>"
    for _ in range(200):
        if not any(_alive(pid) for pid in children):
            break
        await anyio.sleep(0.05)
    assert not any(_alive(pid) for pid in children)


def _child_pids() -> list[int]:
    me = os.getpid()
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me and fields[0] != "Z":
                pids.append(int(entry))
    return pids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    pytest.fail("the MCP HTTP server did not start")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.anyio
async def test_streamable_http_server(tmp_path: Path, http_server: str) -> None:
    config = {"remote": {"type": "http", "url": http_server, "headers": {"X-Test": "1"}}}
    async with mcp_tools(config) as tools:
        add = next(t for t in tools if t.name == "mcp__remote__add")
        assert await add.function({"a": 20, "b": 22}, make_ctx(tmp_path)) == "42"


@pytest.mark.anyio
async def test_a_server_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    config = {"broken": {"command": str(tmp_path / "no-such-server")}}
    with pytest.raises(McpServerError, match="MCP server 'broken' failed to start"):
        async with mcp_tools(config):
            pass


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"bad name": {"command": "x"}}, "mcpServers.bad name: a server name"),
        ({"s": "python"}, "mcpServers.s: must be a mapping"),
        ({"s": {"command": ""}}, "mcpServers.s.command: a stdio server needs a command"),
        ({"s": {"command": "x", "args": "a b"}}, "mcpServers.s.args: must be a list of strings"),
        ({"s": {"command": "x", "env": {"A": 1}}}, "mcpServers.s.env: must be a mapping"),
        ({"s": {"url": "ftp://x"}}, "mcpServers.s.url: an http server needs an http(s) url"),
        ({"s": {"type": "sse", "url": "http://x"}}, "mcpServers.s.type: 'sse' is not supported"),
        ({"s": {"command": "x", "colour": "red"}}, "mcpServers.s.colour: unknown field"),
        ({"s": {"command": "x", "timeout": 0}}, "mcpServers.s.timeout: must be a positive"),
    ],
)
def test_config_errors_name_server_and_field(config: dict[str, object], message: str) -> None:
    with pytest.raises(McpConfigError) as info:
        parse_mcp_servers(config)
    assert str(info.value).startswith(message)


def test_config_shapes() -> None:
    servers = parse_mcp_servers(
        {
            "mcpServers": {
                "files": {"command": "npx", "args": ["-y", "server"], "env": {"A": "b"}},
                "web": {"type": "http", "url": "https://mcp.example/mcp", "headers": {"X": "y"}},
            }
        }
    )
    assert [s.name for s in servers] == ["files", "web"]
    assert servers[0].command == "npx" and servers[0].args == ("-y", "server")
    assert servers[1].url == "https://mcp.example/mcp" and servers[1].headers == {"X": "y"}
