"""Runaway patterns: a model's regex or glob must never freeze the process.

`(a*)*b` against 34 `a`s backtracks for hours inside `re`, which holds the GIL, and a glob
translated to a regex can do the same. So Grep runs its regex in a child process that is
killed on timeout or cancellation, and globs use a matcher without backtracking.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest

from agentkit import AgentSpec
from agentkit.events import ToolResult, ToolUse
from agentkit.runtime import Runtime
from agentkit.testing import ScriptedProvider
from agentkit.tools import (
    ToolContext,
    ToolError,
    builtin_tools,
    command_matches,
    entry_allows,
    path_matches,
)
from support.tools import REGISTRY, call, make_ctx

EVIL_REGEX = "(a*)*b"
EVIL_GLOB = "*a" * 8 + "*b"


def _evil_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 34 + "\n")


class Ticker:
    """A task that counts while the event loop is free."""

    def __init__(self) -> None:
        self.ticks = 0

    async def run(self) -> None:
        while True:
            await anyio.sleep(0.02)
            self.ticks += 1


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_runaway_grep_times_out_as_a_tool_error_without_blocking_the_loop(
    tmp_path: Path,
) -> None:
    _evil_file(tmp_path)
    registry = builtin_tools("claude")
    grep = registry.get("Grep")
    assert grep is not None
    registry.add(dataclasses.replace(grep, timeout=1.0))
    provider = ScriptedProvider(
        [
            {"tool_calls": [{"name": "Grep", "input": {"pattern": EVIL_REGEX, "path": "a.txt"}}]},
            {"tool_calls": [{"name": "Grep", "input": {"pattern": "a+", "path": "a.txt"}}]},
            "done",
        ]
    )
    spec = AgentSpec(id="demo:grep", tools=("Grep",))
    ticker = Ticker()
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        async with Runtime(provider=provider, tools=registry, working_dir=tmp_path) as rt:
            run = await rt.start(spec, "search")
            events = [event async for event in run.events()]
            outcome = await run.wait()
        tg.cancel_scope.cancel()
    assert outcome.status == "completed", outcome
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.is_error, str(r.output)) for r in results] == [
        (True, "Grep timed out after 1 seconds"),
        (False, "a.txt"),  # the next call works: nothing was left stuck
    ]
    assert ticker.ticks >= 20  # the loop kept running through the one-second timeout


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_cancelling_a_runaway_grep_returns_promptly(tmp_path: Path) -> None:
    _evil_file(tmp_path)
    ctx = make_ctx(tmp_path)
    ticker = Ticker()
    finished = False
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        with anyio.move_on_after(0.5) as scope:
            await call(REGISTRY, "Grep", ctx, pattern=EVIL_REGEX, path="a.txt")
            finished = True
        tg.cancel_scope.cancel()
    assert scope.cancelled_caught and not finished
    assert ticker.ticks >= 5
    # the scanner was killed, not left running: a new search answers at once
    assert await call(REGISTRY, "Grep", ctx, pattern="a{34}") == "a.txt"


@pytest.mark.anyio
@pytest.mark.timeout(30)
async def test_run_cancel_stops_a_runaway_grep(tmp_path: Path) -> None:
    _evil_file(tmp_path)
    provider = ScriptedProvider(
        [{"tool_calls": [{"name": "grep", "input": {"pattern": EVIL_REGEX, "path": "a.txt"}}]}]
    )
    spec = AgentSpec(id="demo:grep", tools=("grep",))
    async with Runtime(provider=provider, tools=builtin_tools("rho"), working_dir=tmp_path) as rt:
        run = await rt.start(spec, "search")
        async for event in run.events():
            if isinstance(event, ToolUse):
                await anyio.sleep(0.3)  # let the search start backtracking
                run.cancel()
        outcome = await run.wait()
    assert outcome.status == "interrupted"


@pytest.mark.anyio
async def test_grep_errors_and_output_stay_as_before(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("x" * 600 + "\nshort x\n")
    ctx = make_ctx(tmp_path)
    content = await call(REGISTRY, "Grep", ctx, pattern="x", output_mode="content")
    assert content.splitlines() == [
        "long.txt:1:" + "x" * 500 + " [truncated]",
        "long.txt:2:short x",
    ]
    grep = REGISTRY.get("Grep")
    assert grep is not None
    for bad in ("(", "a{2,1}", "(?P<x"):
        with pytest.raises(ToolError, match="invalid regular expression"):
            await grep.function({"pattern": bad}, ctx)


@pytest.mark.timeout(10)
def test_pathological_globs_finish() -> None:
    assert not path_matches(EVIL_GLOB, "a" * 60)
    assert path_matches(EVIL_GLOB, "a" * 60 + "b")
    deep = "/".join(["a" * 40] * 60)
    assert not path_matches("**/" * 30 + EVIL_GLOB, deep)
    assert path_matches("**/" * 30 + "*a", deep)
    assert not command_matches("*a" * 30 + "*b", "a" * 5000)
    assert command_matches("echo *a*b", "echo " + "a" * 5000 + "b")


@pytest.mark.anyio
@pytest.mark.timeout(10)
async def test_pathological_glob_tool_and_rule_finish(tmp_path: Path) -> None:
    name = "a" * 60
    (tmp_path / name).write_text("x")
    ctx = make_ctx(tmp_path)
    found = await call(REGISTRY, "Glob", ctx, pattern=EVIL_GLOB)
    assert found == f"No files match {EVIL_GLOB!r} under ."
    assert await call(REGISTRY, "Glob", ctx, pattern="*a*a") == name
    read = REGISTRY.get("Read")
    assert read is not None
    context = ToolContext(working_dir=tmp_path, run_id="r", session_id="s", agent_id="a:b")
    assert not entry_allows(f"Read({EVIL_GLOB})", read, {"file_path": name}, context)
    assert entry_allows("Read(*a*a)", read, {"file_path": name}, context)


def test_a_negated_class_stays_inside_one_segment() -> None:
    assert path_matches("a[!x]b", "acb")
    assert not path_matches("a[!x]b", "a/b")
    assert not path_matches("[z-a]", "m")  # a reversed range matches nothing, no error
