"""Every run ends with its final block, whatever its driver, tools or pricing do, and its
log can be read back afterwards."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.events import ModelUsage
from agentkit.testing import ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolRegistry
from support.runs import SPEC, one_call, tool_registry

pytestmark = pytest.mark.anyio



async def test_a_finished_run_with_a_tool_that_returned_none_can_be_read() -> None:
    async def nothing(arguments: dict[str, Any], context: ToolContext) -> None:
        return None

    async with Runtime(provider=one_call(), tools=tool_registry(nothing)) as runtime:
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


async def test_a_failing_cost_estimator_does_not_hang_the_runtime() -> None:
    def estimate(model: str, usage: ModelUsage) -> float:
        raise KeyError(model)

    provider = ScriptedProvider([{"text": "hi", "input_tokens": 3, "output_tokens": 2}])
    with anyio.fail_after(5):
        async with Runtime(provider=provider, cost_estimator=estimate) as runtime:
            run = await runtime.start(AgentSpec(id="demo:priced"), "go")
            outcome = await run.wait()  # hung forever on asyncio; crashed the runtime on trio
    assert outcome.ok and outcome.accounting.cost_usd is None


async def test_a_driver_outcome_that_cannot_be_written_still_ends_the_run() -> None:
    from agentkit.engine._turns import TurnOutcome

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


async def test_a_run_that_fails_inside_the_engine_still_reports_what_it_used() -> None:

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
