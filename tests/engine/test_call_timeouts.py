"""Actions and sub-agents have timeouts: one that never returns ends at its deadline as a
tool does, its result is the error the model sees, and the run goes on."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.actions import Action, ActionContext, ActionError, ActionRegistry, ActionResult
from agentkit.events import AgentMessage, ToolResult
from agentkit.messages import ToolResultMessage
from agentkit.providers import ModelRequest
from agentkit.testing import FunctionProvider, ScriptedProvider

pytestmark = pytest.mark.anyio


async def _forever(args: dict[str, Any], ctx: ActionContext) -> ActionResult:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def _hanging_actions(timeout: float | None) -> ActionRegistry:
    return ActionRegistry([Action("demo:hang", {"type": "object"}, _forever, timeout=timeout)])


def _results(events: list[AgentMessage]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


async def test_an_action_that_never_returns_ends_at_its_timeout_and_the_run_goes_on() -> None:
    spec = AgentSpec(id="demo:caller", actions=("demo:hang",))
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "demo__hang", "input": {}}]}, "it timed out; going on"]
    )
    async with Runtime(provider=provider, actions=_hanging_actions(0.3)) as runtime:
        started = time.monotonic()
        run = await runtime.start(spec, "call it")
        events = [e async for e in run.events()]
        outcome = await run.wait()
        elapsed = time.monotonic() - started
    assert outcome.ok and outcome.text == "it timed out; going on"
    [result] = _results(events)
    assert result.is_error
    assert "demo:hang timed out after 0.3 seconds" in str(result.output)
    # The model saw the timeout as the call's result.
    seen = provider.requests[1].messages[-1]
    assert isinstance(seen, ToolResultMessage) and "timed out after 0.3 seconds" in seen.content
    assert elapsed < 10


async def test_run_action_from_code_is_bounded_by_the_action_timeout() -> None:
    async with Runtime(provider=ScriptedProvider([]), actions=_hanging_actions(0.2)) as runtime:
        result = await runtime.run_action("demo:hang", {})
    assert result.status == "error"
    assert result.error == "demo:hang timed out after 0.2 seconds"


def test_an_action_timeout_is_ten_minutes_by_default_and_checked() -> None:
    assert Action("demo:a", {"type": "object"}, _forever).timeout == 600
    assert Action("demo:a", {"type": "object"}, _forever, timeout=None).timeout is None
    for bad in (0, -1, float("inf"), float("nan"), True, "5"):
        with pytest.raises(ActionError, match="timeout must be a positive number"):
            Action("demo:a", {"type": "object"}, _forever, timeout=bad)  # type: ignore[arg-type]
    registry = ActionRegistry()
    registry.action("demo:b", timeout=5)(_forever)
    assert registry.get("demo:b").timeout == 5  # type: ignore[union-attr]


def test_a_subagent_timeout_is_checked() -> None:
    assert Runtime().subagent_timeout == 600
    for bad in (0, -2, float("inf"), True):
        with pytest.raises(ValueError, match="subagent_timeout must be a positive number"):
            Runtime(subagent_timeout=bad)


def _child_hangs_in_bash(pid_file: Path, tool: str) -> FunctionProvider:
    """The parent delegates to `demo:child` with `tool` (`summon` or `agent`); the child
    starts a shell command that never ends."""
    command = f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 300"

    def respond(request: ModelRequest) -> Any:
        last = request.messages[-1]
        if "child" in request.system:
            return {"tool_calls": [{"name": "Bash", "input": {"command": command}}]}
        if isinstance(last, ToolResultMessage):
            return f"parent goes on after: {last.content}"
        arguments = (
            {"agentName": "demo:child", "prompt": "work"}
            if tool == "summon"
            else {"agent": "demo:child", "prompt": "work"}
        )
        return {"tool_calls": [{"name": tool, "input": arguments}]}

    return FunctionProvider(respond)


@pytest.mark.parametrize("tool", ["summon", "agent"])
async def test_a_subagent_that_never_returns_is_cancelled_at_its_timeout(
    tmp_path: Path, tool: str
) -> None:
    pid_file = tmp_path / "child.pid"
    child = AgentSpec(
        id="demo:child",
        system_prompt="You are the child.",
        tools=("Bash",),
        permission_mode="bypassPermissions",
    )
    parent = AgentSpec(
        id="demo:parent",
        system_prompt="You are the parent.",
        tools=("agent",) if tool == "agent" else (),
        allowed_subagents=("demo:child",),
    )
    async with Runtime(
        provider=_child_hangs_in_bash(pid_file, tool),
        agents=[child],
        working_dir=tmp_path,
        subagent_timeout=2,
    ) as runtime:
        started = time.monotonic()
        run = await runtime.start(parent, "delegate")
        events = [e async for e in run.events()]
        outcome = await run.wait()
        elapsed = time.monotonic() - started
        # The child's run ended, as an error saying why, and is stored so.
        children = await runtime.store.list_sessions("demo:child")
        assert len(children) == 1
        [child_run] = await runtime.store.list_runs(children[0].id)
    assert outcome.ok, outcome.error
    assert "sub-agent 'demo:child' timed out after 2 seconds" in outcome.text
    [result] = [r for r in _results(events) if r.agent is None]
    assert result.is_error and "timed out after 2 seconds" in str(result.output)
    assert child_run.status == "error"
    assert "timed out after 2 seconds" in (child_run.error or "")
    # The child's shell command was stopped with its run.
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert elapsed < 15
