"""Regression tests for defects found reviewing the asyncio-native runtime work."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.events import ModelUsage
from agentkit.stores import MemoryStore, RunRecord
from agentkit.testing import FunctionProvider, ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio

SPEC = AgentSpec(id="demo:review", tools=("t",), permission_mode="bypassPermissions")


def _one_call(name: str = "t") -> ScriptedProvider:
    return ScriptedProvider([{"tool_calls": [{"name": name, "input": {}}]}, "done"])


def _tool(function: Any, timeout: float | None = None) -> ToolRegistry:
    return ToolRegistry([Tool("t", "A tool.", {"type": "object"}, function, timeout=timeout)])


async def test_a_finished_run_with_a_tool_that_returned_none_can_be_read() -> None:
    async def nothing(arguments: dict[str, Any], context: ToolContext) -> None:
        return None

    async with Runtime(provider=_one_call(), tools=_tool(nothing)) as runtime:
        run = await runtime.start(SPEC, "go")
        live = [event async for event in run.events()]
    assert run.outcome is not None and run.outcome.ok
    assert [event async for event in run.events()] == live  # raised ValidationError
    stored = [entry.event for entry in await runtime.store.read_events(run.id)]
    assert stored == [event for event in live if event.type != "text_delta"]


async def test_a_finished_run_with_a_null_structured_output_can_be_read() -> None:
    spec = AgentSpec(id="demo:nullable", output_schema={"type": ["object", "null"]})
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "submit_output", "input": {"output": None}}]}]
    )
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(spec, "go")
        live = [event async for event in run.events()]
    assert [event async for event in run.events()] == live


def _touch_latin1_name(directory: Path) -> None:
    # A file name that is not UTF-8 reaches Python as a lone surrogate (surrogateescape).
    os.close(os.open(os.path.join(os.fsencode(directory), b"caf\xe9.txt"), os.O_CREAT))


async def test_a_lone_surrogate_in_a_tool_output_does_not_hang_the_run(tmp_path: Path) -> None:
    _touch_latin1_name(tmp_path)
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*.txt"}}]}, "done"]
    )
    spec = AgentSpec(id="demo:glob", tools=("Glob",))
    with anyio.fail_after(5):
        async with Runtime(provider=provider, working_dir=tmp_path) as runtime:
            run = await runtime.start(spec, "go")
            await run.wait()  # hung forever on asyncio; the runtime crashed on trio
            kinds = [event.type async for event in run.events()]
    assert run.done and kinds[-1] == "turn_end"


async def test_a_failing_cost_estimator_does_not_hang_the_runtime() -> None:
    def estimate(model: str, usage: ModelUsage) -> float:
        raise KeyError(model)

    provider = ScriptedProvider([{"text": "hi", "input_tokens": 3, "output_tokens": 2}])
    with anyio.fail_after(5):
        async with Runtime(provider=provider, cost_estimator=estimate) as runtime:
            run = await runtime.start(AgentSpec(id="demo:priced"), "go")
            outcome = await run.wait()  # hung forever on asyncio; crashed the runtime on trio
    assert outcome.ok and outcome.accounting.cost_usd is None


async def test_a_tool_timeout_respects_a_shielded_section() -> None:
    finished: list[str] = []

    async def cleanup(arguments: dict[str, Any], context: ToolContext) -> str:
        with anyio.CancelScope(shield=True):  # e.g. reaping a child process
            await anyio.sleep(0.2)
            finished.append("cleanup")
        return "ok"

    async with Runtime(provider=_one_call(), tools=_tool(cleanup, timeout=0.05)) as runtime:
        run = await runtime.start(SPEC, "go")
        await run.wait()
    assert finished == ["cleanup"]  # the timer cancelled the shielded sleep on asyncio


class _SlowCreateRun(MemoryStore):
    async def create_run(self, run: RunRecord, events: Any = ()) -> None:
        with anyio.CancelScope(shield=True):  # a store call in a worker thread
            await anyio.sleep(0.1)
        await super().create_run(run, events)


async def test_a_run_started_while_the_runtime_cancels_its_runs_is_cancelled_too() -> None:
    child_spec = AgentSpec(id="demo:child", system_prompt="child", tools=("slow",))
    starting = anyio.Event()
    children = []

    async def spawn(arguments: dict[str, Any], context: ToolContext) -> None:
        starting.set()
        assert context.runtime is not None
        children.append(await context.runtime.start(child_spec, "go"))
        await anyio.sleep(10)

    async def slow(arguments: dict[str, Any], context: ToolContext) -> str:
        await anyio.sleep(2)
        return "slow"

    def respond(request: Any) -> Any:
        if any(message.role == "tool" for message in request.messages):
            return "done"
        name = "spawn" if request.system == "parent" else "slow"
        return {"tool_calls": [{"name": name, "input": {}}]}

    tools = ToolRegistry(
        [
            Tool("spawn", "Spawn.", {"type": "object"}, spawn, timeout=None),
            Tool("slow", "Slow.", {"type": "object"}, slow, timeout=None),
        ]
    )
    parent = AgentSpec(id="demo:parent", system_prompt="parent", tools=("spawn",))
    started = time.monotonic()
    with pytest.raises(KeyError):
        async with Runtime(
            provider=FunctionProvider(respond), tools=tools, store=_SlowCreateRun()
        ) as runtime:
            await runtime.start(parent, "go")
            await starting.wait()
            await anyio.sleep(0.02)  # the parent's tool is inside `start` now
            raise KeyError("the host fails")
    assert children and children[0].outcome.status == "interrupted"
    assert time.monotonic() - started < 1.5


async def test_a_driver_outcome_that_cannot_be_written_still_ends_the_run() -> None:
    from agentkit._engine import TurnOutcome

    async def sloppy(request: Any) -> TurnOutcome:
        return TurnOutcome(status="completed", text=None)  # type: ignore[arg-type]

    spec = AgentSpec(id="demo:driven", runtime="claude-cli")
    with anyio.fail_after(5):
        async with Runtime(provider=ScriptedProvider([]), drivers={"claude-cli": sloppy}) as rt:
            run = await rt.start(spec, "go")
            outcome = await run.wait()  # hung forever on asyncio; crashed the runtime on trio
    assert outcome.status == "error"
    kinds = [event.type async for event in run.events()]
    assert kinds[-2:] == ["error", "turn_end"]


async def test_a_lone_surrogate_in_a_tool_output_reaches_everyone_as_u_fffd(
    tmp_path: Path,
) -> None:
    from agentkit.stores import MemoryStore

    _touch_latin1_name(tmp_path)
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "Glob", "input": {"pattern": "*.txt"}}]}, "done"]
    )
    store = MemoryStore()
    async with Runtime(provider=provider, working_dir=tmp_path, store=store) as runtime:
        run = await runtime.start(AgentSpec(id="demo:glob", tools=("Glob",)), "go")
        outcome = await run.wait()
    assert outcome.ok, outcome.error
    (result,) = [e async for e in run.events() if e.type == "tool_result"]
    assert "caf\ufffd.txt" in result.output
    stored = [e.event for e in await store.read_events(run.id) if e.event.type == "tool_result"]
    assert stored == [result]
    # The model was sent the same text.
    last = provider.requests[-1].messages[-1]
    assert "caf\ufffd.txt" in last.content


async def test_a_prompt_with_a_lone_surrogate_is_refused_before_anything_starts() -> None:
    async with Runtime(provider=ScriptedProvider([])) as runtime:
        with pytest.raises(ValueError, match="lone surrogate at position 3"):
            await runtime.start(AgentSpec(id="demo:p"), "caf\udce9")
        assert not runtime._runs


async def test_a_run_that_fails_inside_the_engine_still_reports_what_it_used() -> None:
    from agentkit.tools import Tool, ToolRegistry

    class Bug(BaseException):
        pass

    async def broken(arguments: dict[str, Any], context: ToolContext) -> str:
        raise Bug("deep inside")

    tools = ToolRegistry([Tool("broken", "Breaks.", {"type": "object"}, broken)])
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "broken", "input": {}}], "input_tokens": 7, "output_tokens": 2}]
    )
    spec = AgentSpec(id="demo:bug", tools=("broken",), permission_mode="bypassPermissions")
    with pytest.raises(BaseExceptionGroup):
        async with Runtime(provider=provider, tools=tools) as runtime:
            run = await runtime.start(spec, "go")
            await run.wait()
    assert run.outcome is not None and run.outcome.status == "error"
    accounting = run.outcome.accounting
    assert accounting.model_calls == 1 and accounting.tool_calls == 1
    assert accounting.total.input_tokens == 7
