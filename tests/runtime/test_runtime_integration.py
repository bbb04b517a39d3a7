"""The runtime with its real parts: built-in tools, MCP servers, definition fingerprints."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit import AgentSpec, Runtime
from agentkit.defs import (
    HostCapabilities,
    ResumeError,
    bind,
    parse_definition,
    register_runtime_hooks,
)
from agentkit.testing import ScriptedProvider
from agentkit.tools import builtin_tools
from support.paths import SUPPORT

pytestmark = pytest.mark.anyio

SERVER = str(SUPPORT / "tools_mcp_server.py")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


async def test_default_tools_are_the_builtins_in_both_vocabularies(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello from disk\n")
    spec = AgentSpec(id="demo:reader", tools=("Read", "read_file"))
    provider = ScriptedProvider(
        [call("Read", file_path="notes.txt"), call("read_file", file_path="notes.txt"), "ok"]
    )
    async with Runtime(provider=provider, working_dir=tmp_path) as runtime:
        run = await runtime.start(spec, "read it")
        events = [e async for e in run.events()]
    outputs = [e.output for e in events if e.type == "tool_result"]
    assert len(outputs) == 2 and all("hello from disk" in str(o) for o in outputs)


async def test_claude_vocabulary_only(tmp_path: Path) -> None:
    runtime = Runtime(provider=ScriptedProvider([]), tool_vocabulary="claude")
    assert "Read" in runtime.tools and "read_file" not in runtime.tools


async def test_mcp_servers_start_and_stop_with_the_runtime(tmp_path: Path) -> None:
    servers = {"calc": {"command": sys.executable, "args": [SERVER]}}
    spec = AgentSpec(id="demo:mcp", tools=("mcp__calc",), permission_mode="bypassPermissions")
    provider = ScriptedProvider([call("mcp__calc__add", a=2, b=3), "five"])
    async with Runtime(provider=provider, mcp_servers=servers, working_dir=tmp_path) as runtime:
        assert "mcp__calc__add" in runtime.tools
        run = await runtime.start(spec, "add")
        events = [e async for e in run.events()]
    result = next(e for e in events if e.type == "tool_result")
    assert not result.is_error and "5" in str(result.output)


DEFINITION = """---
id: reviewer
description: Reviews changes
tools: [read_file]
---
Review carefully.
"""


async def test_a_changed_definition_is_refused_on_resume(tmp_path: Path) -> None:
    register_runtime_hooks()  # the definitions' check on resume, in every runtime
    host = HostCapabilities.of(builtin_tools().names())

    def load(text: str) -> AgentSpec:
        return bind(parse_definition(text, path=tmp_path / "reviewer.md"), host)

    first = load(DEFINITION)
    changed = load(DEFINITION.replace("Review carefully.", "Approve everything."))
    reformatted = load(DEFINITION.replace("tools: [read_file]", "tools: ['read_file']"))
    async with Runtime(provider=ScriptedProvider(["one", "two"])) as runtime:
        run = await runtime.start(first, "hi")
        await run.wait()
        with pytest.raises(ResumeError, match="body"):
            await runtime.start(changed, "again", session_id=run.session_id)
        again = await runtime.start(reformatted, "again", session_id=run.session_id)
        assert (await again.wait()).ok


async def test_a_store_location_opens_sqlite_and_sessions_survive(tmp_path: Path) -> None:
    location = str(tmp_path / "sessions.db")
    spec = AgentSpec(id="demo:memory")
    async with Runtime(provider=ScriptedProvider(["first"]), store=location) as runtime:
        first = await runtime.start(spec, "remember")
        await first.wait()
    provider = ScriptedProvider(["second"])
    async with Runtime(provider=provider, store=location) as runtime:
        again = await runtime.start(spec, "recall", session_id=first.session_id)
        assert (await again.wait()).ok
    assert [type(m).__name__ for m in provider.requests[0].messages] == [
        "UserMessage",
        "AssistantMessage",
        "UserMessage",
    ]
