"""Definitions running on the Runtime: the Rho examples on the engine (offline), and
claude-cli definitions through the runtime's claude driver (fake `claude`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentkit import Runtime
from agentkit.defs import (
    HostCapabilities,
    ResumeError,
    bind,
    check_resume,
    claude_cli_args,
    claude_session_id,
    load_definition,
    parse_definition,
    register_runtime_hooks,
)
from agentkit.events import to_wire
from agentkit.testing import ScriptedProvider, assert_stream_invariants
from agentkit.tools import Tool, ToolContext, ToolRegistry
from support.claude_cli import INIT, REPLAY, RESULT, fake_claude, seen
from support.paths import ROOT

pytestmark = pytest.mark.anyio
EXAMPLES = ROOT / "examples" / "defs"
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}


async def _read_file(args: dict[str, Any], ctx: ToolContext) -> str:
    return (ctx.working_dir / str(args["path"])).read_text()


async def _list_dir(args: dict[str, Any], ctx: ToolContext) -> str:
    return "\n".join(sorted(p.name for p in ctx.working_dir.iterdir()))


async def _bash(args: dict[str, Any], ctx: ToolContext) -> str:
    return "not run"


TOOLS = ToolRegistry(
    [
        Tool("read_file", "Read a file", SCHEMA, _read_file),
        Tool("list_dir", "List the folder", SCHEMA, _list_dir),
        Tool("bash", "Run a command", SCHEMA, _bash, effect="execute"),
    ]
)


async def test_security_review_runs_offline(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("password = 'hunter2'\n")
    definition = load_definition(EXAMPLES / "security-review.md")
    spec = bind(definition, HostCapabilities.of(TOOLS.names()))
    provider = ScriptedProvider(
        [
            {"tool_calls": [{"name": "list_dir", "input": {}}]},
            {"tool_calls": [{"name": "read_file", "input": {"path": "app.py"}}]},
            "app.py hard-codes a password.",
        ]
    )
    async with Runtime(provider=provider, tools=TOOLS, working_dir=tmp_path) as runtime:
        run = await runtime.start(
            spec, "Review app.py", session_metadata={"definition": spec.metadata["definition"]}
        )
        outcome = await run.wait()
        raw = [e async for e in run.events()]
        assert_stream_invariants(raw)
        events = [to_wire(e) for e in raw]
        session = await runtime.store.get_session(run.session_id)
    assert outcome.status == "completed"
    assert outcome.text == "app.py hard-codes a password."
    results = [e["output"] for e in events if e["type"] == "tool_result"]
    assert results == ["app.py", "password = 'hunter2'\n"]
    body = "Review the requested changes. Do not modify files."
    assert provider.requests[0].system.endswith(body)
    offered = sorted(t.name for t in provider.requests[0].tools)
    assert offered == ["bash", "list_dir", "read_file"]
    assert session is not None
    check_resume(session.metadata["definition"], spec)
    edited = parse_definition(
        (EXAMPLES / "security-review.md").read_text().replace("bash]", "grep]"), "x.md"
    )
    with pytest.raises(ResumeError, match=r"tools \(\[bash, list_dir, read_file\] -> "):
        check_resume(session.metadata["definition"], edited)


async def test_worker_runs_offline_with_every_host_capability(tmp_path: Path) -> None:
    spec = bind(load_definition(EXAMPLES / "worker.md"), HostCapabilities.of(TOOLS.names()))
    provider = ScriptedProvider(["Done."], name="xai")
    async with Runtime(provider=provider, tools=TOOLS, working_dir=tmp_path) as runtime:
        outcome = await (await runtime.start(spec, "Do the task")).wait()
    assert outcome.status == "completed"
    assert sorted(t.name for t in provider.requests[0].tools) == ["bash", "list_dir", "read_file"]


async def test_claude_cli_definitions_run_through_the_runtime(tmp_path: Path) -> None:
    register_runtime_hooks()  # the claude-cli driver, in every runtime
    script = fake_claude(tmp_path / "bin", REPLAY)
    spec = bind(load_definition(EXAMPLES / "claude-planner.md"))
    async with Runtime(
        provider=ScriptedProvider([]),
        working_dir=tmp_path,
        services={"claude_executable": str(script)},
    ) as runtime:
        run = await runtime.start(spec, "Plan the change.")
        outcome = await run.wait()
        raw = [e async for e in run.events()]
        assert_stream_invariants(raw)
        events = [to_wire(e) for e in raw]
        first = seen(tmp_path / "bin")

        (tmp_path / "bin" / "lines.jsonl").write_text(INIT + "\n" + RESULT + "\n")
        again = await (await runtime.start(spec, "Go on.", session_id=run.session_id)).wait()
        second = seen(tmp_path / "bin")

    assert outcome.status == "completed"
    assert outcome.text == "Plan: 1. Read README. 2. Edit."
    assert outcome.accounting.cost_usd == 0.0123
    assert [e["type"] for e in events] == [
        "turn_start",
        "session_init",
        "thinking",
        "text",
        "tool_use",
        "tool_result",
        "text_delta",
        "text",
        "result",
        "turn_end",
    ]
    assert events[7]["turnPhase"] == "final"
    assert events[-1]["status"] == "completed"
    uuid = claude_session_id(run.session_id)
    assert first["argv"] == [
        *claude_cli_args(spec, include_partial_messages=True),
        f"--session-id={uuid}",
    ]
    assert first["prompt"] == "Plan the change."
    assert again.status == "completed"
    assert second["argv"][-1] == f"--resume={uuid}"


async def test_a_missing_claude_ends_the_run_with_an_error(tmp_path: Path) -> None:
    register_runtime_hooks()
    spec = bind(load_definition(EXAMPLES / "claude-planner.md"))
    async with Runtime(
        provider=ScriptedProvider([]),
        working_dir=tmp_path,
        services={"claude_executable": str(tmp_path / "no-claude-here")},
    ) as runtime:
        run = await runtime.start(spec, "Plan.")
        outcome = await run.wait()
        raw = [e async for e in run.events()]
        assert_stream_invariants(raw)
        events = [to_wire(e) for e in raw]
    assert outcome.status == "error"
    assert outcome.error is not None and "does not exist or is not executable" in outcome.error
    assert [e["type"] for e in events] == ["turn_start", "session_init", "error", "turn_end"]
    assert json.dumps(events)  # plain data, no traceback objects
