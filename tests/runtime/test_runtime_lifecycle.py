"""The runtime behaves as a task group: runs started while it cancels are cancelled too, and on
asyncio it may be left from another task than the one that entered it."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.stores import MemoryStore, RunRecord
from agentkit.testing import FunctionProvider, ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio



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


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_runtime_entered_and_left_in_different_tasks_on_asyncio(
    anyio_backend: str,
) -> None:
    # What a pytest-asyncio fixture does: setup and teardown run as different tasks.
    # A runtime on asyncio always allowed it; the host's cancel scope made leaving fail.
    import asyncio

    runtime = Runtime(provider=ScriptedProvider(["hi"]))
    await asyncio.create_task(runtime.__aenter__())
    run = await runtime.start(AgentSpec(id="demo:r2"), "go")
    assert await asyncio.create_task(runtime.__aexit__(None, None, None)) is None
    assert run.outcome is not None and run.outcome.ok
