"""Lone surrogates (what a file name that is not UTF-8 becomes in Python) never lose a
run: they become U+FFFD in everything kept and shown, and a prompt holding one is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.actions import ActionRegistry, ActionResult
from agentkit.stores import MemoryStore, SQLiteStore
from agentkit.testing import ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry
from support.runs import SPEC, one_call

pytestmark = pytest.mark.anyio

_ESCAPED = json.loads('"caf\\udce9.txt"')  # what a model's JSON escape "\udce9" parses to



def _touch_latin1_name(directory: Path) -> None:
    # A file name that is not UTF-8 reaches Python as a lone surrogate (surrogateescape).
    os.close(os.open(os.path.join(os.fsencode(directory), b"caf\xe9.txt"), os.O_CREAT))


async def _run_and_read(
    tmp_path: Path, spec: AgentSpec, provider: ScriptedProvider, **options: Any
) -> tuple[Any, list[Any], list[Any]]:
    store = SQLiteStore(str(tmp_path / "s.db"))
    async with Runtime(provider=provider, store=store, **options) as runtime:
        run = await runtime.start(spec, "go")
        outcome = await run.wait()
        stored = [entry.event for entry in await store.read_events(run.id)]
        transcript = await store.load_transcript(run.session_id)
    live = [event async for event in run.events() if event.type != "text_delta"]
    assert stored == live
    return outcome, live, transcript


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


async def test_a_lone_surrogate_in_a_tool_output_reaches_everyone_as_u_fffd(
    tmp_path: Path,
) -> None:

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


@pytest.mark.parametrize(
    "error", [ToolError("cannot open caf\udce9.txt"), OSError("cannot open caf\udce9.txt")]
)
async def test_a_lone_surrogate_in_a_tool_error_does_not_lose_the_run(
    tmp_path: Path, error: Exception
) -> None:
    async def failing(arguments: dict[str, Any], context: ToolContext) -> str:
        raise error

    tools = ToolRegistry([Tool("t", "A tool.", {"type": "object"}, failing)])
    outcome, live, transcript = await _run_and_read(tmp_path, SPEC, one_call(), tools=tools)
    assert outcome.ok, outcome.error  # was: PydanticSerializationError, nothing stored
    (result,) = [event for event in live if event.type == "tool_result"]
    assert result.is_error and "caf\ufffd.txt" in result.output
    assert any("caf\ufffd.txt" in str(message) for message in transcript)


async def test_a_lone_surrogate_in_an_action_result_does_not_lose_the_run(
    tmp_path: Path,
) -> None:
    actions = ActionRegistry()

    @actions.action("demo:list", {"type": "object"})
    async def listing(args: dict[str, Any], ctx: Any) -> ActionResult:
        return ActionResult.ok({"caf\udce9.txt": ["caf\udce9"]})

    spec = AgentSpec(id="demo:r2", actions=("demo:list",), permission_mode="bypassPermissions")
    outcome, live, _ = await _run_and_read(tmp_path, spec, one_call("demo__list"), actions=actions)
    assert outcome.ok, outcome.error
    (result,) = [event for event in live if event.type == "tool_result"]
    assert "caf\ufffd.txt" in str(result.output), result.output


async def test_a_lone_surrogate_in_a_driver_error_is_kept_readable(tmp_path: Path) -> None:
    async def driver(request: Any) -> Any:
        raise RuntimeError("cannot open caf\udce9.txt")

    outcome, live, _ = await _run_and_read(
        tmp_path, AgentSpec(id="demo:r2"), ScriptedProvider([]), drivers={"engine": driver}
    )
    assert outcome.status == "error" and "caf\ufffd.txt" in (outcome.error or "")
    assert [event.type for event in live][-2:] == ["error", "turn_end"]


@pytest.mark.parametrize(
    "response",
    [
        {"tool_calls": [{"name": "t", "input": {"path": _ESCAPED}}]},
        {"tool_calls": [{"name": _ESCAPED, "input": {}}]},
        {"text": _ESCAPED},
        {"thinking": _ESCAPED, "text": "x"},
    ],
)
async def test_a_lone_surrogate_from_the_model_does_not_lose_the_run(
    tmp_path: Path, response: dict[str, Any]
) -> None:
    async def echo(arguments: dict[str, Any], context: ToolContext) -> str:
        return str(arguments)

    tools = ToolRegistry([Tool("t", "A tool.", {"type": "object"}, echo)])
    provider = ScriptedProvider([response, "done"])
    outcome, live, _ = await _run_and_read(tmp_path, SPEC, provider, tools=tools)
    assert outcome.ok, outcome.error  # was: PydanticSerializationError, nothing stored
    assert "caf\ufffd.txt" in str(live)


async def test_a_lone_surrogate_in_a_structured_output_does_not_lose_the_run(
    tmp_path: Path,
) -> None:
    spec = AgentSpec(id="demo:r2", output_schema={"type": "object"})
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "submit_output", "input": {"f": _ESCAPED}}]}]
    )
    outcome, _, _ = await _run_and_read(tmp_path, spec, provider)
    assert outcome.ok, outcome.error
    assert outcome.payload == {"f": "caf\ufffd.txt"}


async def test_a_lone_surrogate_in_streamed_text_is_replaced_in_every_delta() -> None:
    provider = ScriptedProvider([{"text": "caf\udce9 au lait", "deltas": 3}])
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(AgentSpec(id="demo:r2"), "go")
        live = [event async for event in run.events()]
        outcome = await run.wait()
    deltas = "".join(e.content for e in live if e.type == "text_delta")
    assert deltas == "caf\ufffd au lait" == outcome.text
    assert all(e.content.encode() for e in live if e.type == "text_delta")
