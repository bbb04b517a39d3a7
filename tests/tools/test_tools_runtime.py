"""The built-in and MCP tools through the real engine: allowlists, rules, permissions."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit import AgentSpec
from agentkit.errors import UnknownToolError
from agentkit.events import ToolResult
from agentkit.permissions import Allow, PermissionDecision, PermissionRequest
from agentkit.runtime import Runtime
from agentkit.testing import ScriptedProvider
from agentkit.tools import mcp_tools
from support.paths import SUPPORT

pytestmark = pytest.mark.anyio

SERVER = str(SUPPORT / "tools_mcp_server.py")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


async def results_of(runtime: Runtime, spec: AgentSpec) -> list[ToolResult]:
    run = await runtime.start(spec, "go")
    events = [event async for event in run.events()]
    outcome = await run.wait()
    assert outcome.status == "completed", outcome
    return [e for e in events if isinstance(e, ToolResult)]


async def test_claude_vocabulary_through_the_engine(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    asked: list[PermissionRequest] = []

    async def handler(request: PermissionRequest) -> PermissionDecision:
        asked.append(request)
        return Allow()

    spec = AgentSpec(
        id="demo:coder",
        tools=("Read", "Write", "Bash(echo *)", "mcp__local__add"),
        permission_mode="acceptEdits",
    )
    provider = ScriptedProvider(
        [
            call("Read", file_path="notes.txt"),
            call("Write", file_path="../escape.txt", content="x"),
            call("Bash", command="echo hi"),
            call("Bash", command="echo hi; touch pwned"),
            call("mcp__local__add", a=1, b=2),
            "done",
        ]
    )
    config = {"local": {"command": sys.executable, "args": [SERVER]}}
    async with (
        mcp_tools(config) as extra,
        Runtime(
            provider=provider,
            tools=extra,  # added to the built-in tools
            tool_vocabulary="claude",
            working_dir=tmp_path,
            permission_handler=handler,
        ) as runtime,
    ):
        results = await results_of(runtime, spec)
    outputs = [(r.tool, r.is_error, str(r.output)) for r in results]
    assert outputs[0] == ("Read", False, "     1\tremember the milk")
    assert outputs[1][:2] == ("Write", True) and "leaves the working directory" in outputs[1][2]
    assert outputs[2] == ("Bash", False, "hi\n")
    assert outputs[3][:2] == ("Bash", True)
    assert outputs[4] == ("mcp__local__add", False, "3")
    assert not (tmp_path / "pwned").exists()
    assert not (tmp_path.parent / "escape.txt").exists()
    assert [r.tool for r in asked] == ["Bash", "mcp__local__add"]  # execute effects ask


async def test_rho_vocabulary_and_sub_agents_through_the_engine(tmp_path: Path) -> None:
    (tmp_path / "data.txt").write_text("rho data\n")
    main = AgentSpec(
        id="demo:main",
        tools=("read_file", "shell", "agents", "agent"),
        permission_mode="bypassPermissions",
    )
    helper = AgentSpec(id="demo:helper", description="Helps out")
    provider = ScriptedProvider(
        [
            call("read_file", file_path="data.txt"),
            call("shell", command="pwd"),
            call("agents"),
            call("agent", agent="demo:helper", prompt="assist"),
            "helper answer",
            "done",
        ]
    )
    async with Runtime(
        provider=provider,
        tool_vocabulary="rho",
        agents=[main, helper],
        working_dir=tmp_path,
    ) as runtime:
        results = await results_of(runtime, main)
    outputs = [(r.tool, r.is_error, str(r.output)) for r in results]
    assert outputs == [
        ("read_file", False, "     1\trho data"),
        ("shell", False, f"{tmp_path}\n"),
        ("agents", False, "- demo:helper: Helps out"),
        ("agent", False, "helper answer"),
    ]


async def test_a_claude_name_is_refused_by_a_rho_runtime(tmp_path: Path) -> None:
    spec = AgentSpec(id="demo:x", tools=("Read",), permission_mode="bypassPermissions")
    provider = ScriptedProvider([call("Read", file_path="x"), "done"])
    async with Runtime(provider=provider, tool_vocabulary="rho", working_dir=tmp_path) as runtime:
        with pytest.raises(UnknownToolError, match="did you mean 'read_file'") as raised:
            await runtime.start(spec, "go")
        assert raised.value.entries == ("Read",)
        assert await runtime.store.list_sessions() == []  # refused before anything is stored
    assert provider.requests == []


async def test_an_mcp_tool_result_over_the_output_cap_is_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTKIT_MAX_TOOL_OUTPUT_CHARS", "1000")
    spec = AgentSpec(id="demo:m", tools=("mcp__local__env_value",),
                     permission_mode="bypassPermissions")
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "mcp__local__env_value", "input": {"name": "BIG"}}]}, "done"]
    )
    config = {"local": {"command": sys.executable, "args": [SERVER],
                        "env": {"BIG": "y" * 50_000}}}
    async with Runtime(
        provider=provider, tool_vocabulary="claude", mcp_servers=config,
        working_dir=tmp_path,
    ) as runtime:
        [result] = await results_of(runtime, spec)
    assert not result.is_error
    assert result.output == "y" * 1000 + (
        "\n\n[output truncated by agentkit: the first 1,000 of 50,000 characters are shown]"
    )
