"""Regression tests for defects found in the second review (surrogates, the runtime's
host scope, lazy packages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit import AgentSpec, Runtime
from agentkit.actions import ActionRegistry, ActionResult
from agentkit.stores import SQLiteStore
from agentkit.testing import ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry

pytestmark = pytest.mark.anyio

SRC = Path(__file__).resolve().parent.parent / "src"
SPEC = AgentSpec(id="demo:r2", tools=("t",), permission_mode="bypassPermissions")


def _one_call(name: str = "t") -> ScriptedProvider:
    return ScriptedProvider([{"tool_calls": [{"name": name, "input": {}}]}, "done"])


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


@pytest.mark.parametrize(
    "error", [ToolError("cannot open caf\udce9.txt"), OSError("cannot open caf\udce9.txt")]
)
async def test_a_lone_surrogate_in_a_tool_error_does_not_lose_the_run(
    tmp_path: Path, error: Exception
) -> None:
    async def failing(arguments: dict[str, Any], context: ToolContext) -> str:
        raise error

    tools = ToolRegistry([Tool("t", "A tool.", {"type": "object"}, failing)])
    outcome, live, transcript = await _run_and_read(tmp_path, SPEC, _one_call(), tools=tools)
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
    outcome, live, _ = await _run_and_read(
        tmp_path, spec, _one_call("demo__list"), actions=actions
    )
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


# Only asyncio: on trio a runtime holds a task group, which cannot be left from another task.
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


def test_mypy_still_sees_a_misspelt_name_imported_from_a_lazy_package(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(
        "from agentkit import Runtme\n"
        "from agentkit.tools import Tol\n"
        "from agentkit.providers import Provder\n"
        "from agentkit.stores import MemoryStor\n"
    )
    found = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
            "--cache-dir", str(tmp_path / "cache"), str(user),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SRC)},
        cwd=tmp_path,
    )
    for name in ("Runtme", "Tol", "Provder", "MemoryStor"):
        assert f'has no attribute "{name}"' in found.stdout, found.stdout


_ESCAPED = json.loads('"caf\\udce9.txt"')  # what a model's JSON escape "\udce9" parses to


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
