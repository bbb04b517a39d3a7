"""The benchmark workloads, each as an agentkit version and a bare asyncio floor.

Every function here runs inside an already-running event loop and returns plain numbers, so
`run.py` can time them side by side in one process (and W4 in fresh subprocesses).

- W1: prompt -> tool call `add(a=1, b=2)` -> tool -> final text "3", zero-latency provider.
- W2: one answer streamed as 2000 deltas, read through `run.events()`.
- W4: many concurrent W1 runs in one process.

The floors do the same work with nothing but asyncio: a transcript list, an async-generator
"model", a dict of tools, an event list with a waiter for readers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agentkit.events import TextDelta
from agentkit.providers import (
    ModelRequest,
    Stop,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
)
from agentkit.runtime import Runtime
from agentkit.spec import AgentSpec
from agentkit.stores import MemoryStore
from agentkit.tools import Tool, ToolRegistry

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}

W2_DELTAS = 2000


# --- agentkit side -------------------------------------------------------------------------


class AddProvider:
    """A zero-latency model: asks for `add(a=1, b=2)`, then answers with the tool's result."""

    name = "bench"

    _CALL = ToolCallChunk(ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2}))
    _STOP_TOOL = Stop("tool_use")
    _STOP = Stop("end_turn")

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return model or "bench-model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        last = request.messages[-1]
        if type(last) is ToolResultMessage:
            yield TextChunk(last.content)
            yield self._STOP
        else:
            yield self._CALL
            yield self._STOP_TOOL


class DeltaProvider:
    """A zero-latency model streaming one answer as `W2_DELTAS` text deltas."""

    name = "bench"

    def __init__(self, deltas: int = W2_DELTAS) -> None:
        self.chunks = [TextChunk("x") for _ in range(deltas)]

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return model or "bench-model"

    async def stream(self, request: ModelRequest) -> AsyncIterator[Any]:
        for chunk in self.chunks:
            yield chunk
        yield Stop()


async def _add(arguments: dict[str, Any], context: Any) -> str:
    return str(arguments["a"] + arguments["b"])


def add_tools() -> ToolRegistry:
    """A registry with the `add` tool."""
    return ToolRegistry([Tool("add", "Add two integers.", ADD_SCHEMA, _add)])


ADD_SPEC = AgentSpec(id="bench:adder", system_prompt="You add numbers.", tools=["add"])
DELTA_SPEC = AgentSpec(id="bench:streamer", system_prompt="You talk.")


def w1_runtime(store: Any = None) -> Runtime:
    """The runtime W1 and W4 use (in-memory store unless `store` is given)."""
    return Runtime(
        provider=AddProvider(),
        store=store if store is not None else MemoryStore(),
        tools=add_tools(),
        builtin_tools=False,  # only `add`, as before tools were added to the built-in ones
        working_dir=Path.cwd(),
    )


async def w1_agentkit(runs: int, store: Any = None) -> float:
    """Seconds for `runs` sequential W1 runs (checks each answer is "3")."""
    async with w1_runtime(store) as runtime:
        started = time.perf_counter()
        for _ in range(runs):
            run = await runtime.start(ADD_SPEC, "What is 1 + 2?")
            outcome = await run.wait()
            if outcome.text != "3":
                raise AssertionError(f"W1 answered {outcome.text!r}: {outcome.error}")
        return time.perf_counter() - started


async def start_latency_agentkit(runs: int, store: Any) -> list[float]:
    """Seconds each `runtime.start()` takes to accept a W1 run (record, `turn_start` and
    `session_init` stored), one run at a time; each run is awaited before the next."""
    latencies = []
    async with w1_runtime(store) as runtime:
        for _ in range(runs):
            started = time.perf_counter()
            run = await runtime.start(ADD_SPEC, "What is 1 + 2?")
            latencies.append(time.perf_counter() - started)
            await run.wait()
    return latencies


def start_latency_bare(runs: int, path: Path) -> list[float]:
    """The floor of an accept on SQLite: insert one row and commit, on a WAL file set up
    as `SQLiteStore` sets it up."""
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("CREATE TABLE runs (id TEXT PRIMARY KEY, data TEXT NOT NULL)")
    latencies = []
    for i in range(runs):
        started = time.perf_counter()
        conn.execute("INSERT INTO runs VALUES (?, ?)", (f"run-{i}", "running"))
        latencies.append(time.perf_counter() - started)
    conn.close()
    return latencies


async def w2_agentkit(deltas: int = W2_DELTAS) -> float:
    """Seconds from start to the last event of one run streaming `deltas` deltas, read
    through `run.events()`."""
    provider = DeltaProvider(deltas)
    async with Runtime(provider=provider, store=MemoryStore(), working_dir=Path.cwd()) as rt:
        started = time.perf_counter()
        run = await rt.start(DELTA_SPEC, "Talk.")
        seen = 0
        async for event in run.events():
            if type(event) is TextDelta:
                seen += 1
        elapsed = time.perf_counter() - started
    if seen != deltas:
        raise AssertionError(f"W2 read {seen} deltas, expected {deltas}")
    return elapsed


async def w4_agentkit(runs: int) -> float:
    """Seconds for `runs` concurrent W1 runs in one runtime."""
    async with w1_runtime() as runtime:
        started = time.perf_counter()
        started_runs = [await runtime.start(ADD_SPEC, "What is 1 + 2?") for _ in range(runs)]
        for run in started_runs:
            outcome = await run.wait()
            if outcome.text != "3":
                raise AssertionError(f"W4 answered {outcome.text!r}: {outcome.error}")
        return time.perf_counter() - started


# --- the bare asyncio floor ---------------------------------------------------------------


async def _bare_model(messages: list[dict[str, Any]]) -> AsyncIterator[tuple[str, Any]]:
    last = messages[-1]
    if last["role"] == "tool":
        yield ("text", last["content"])
    else:
        yield ("tool_call", ("call_1", "add", {"a": 1, "b": 2}))


async def _bare_add(arguments: dict[str, Any]) -> str:
    return str(arguments["a"] + arguments["b"])


_BARE_TOOLS = {"add": _bare_add}


async def _bare_turn(prompt: str, events: list[dict[str, Any]]) -> str:
    """The W1 loop with nothing but dicts: model call, tool dispatch, transcript, events."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    events.append({"type": "turn_start"})
    while True:
        text = []
        calls = []
        async for kind, value in _bare_model(messages):
            if kind == "text":
                text.append(value)
                events.append({"type": "text_delta", "content": value})
            else:
                calls.append(value)
        answer = "".join(text)
        messages.append({"role": "assistant", "content": answer, "tool_calls": calls})
        if not calls:
            events.append({"type": "result", "content": answer})
            events.append({"type": "turn_end"})
            return answer
        for call_id, name, arguments in calls:
            events.append({"type": "tool_use", "id": call_id, "input": arguments})
            output = await _BARE_TOOLS[name](arguments)
            events.append({"type": "tool_result", "id": call_id, "output": output})
            messages.append({"role": "tool", "id": call_id, "content": output})


async def w1_bare(runs: int) -> float:
    """Seconds for `runs` sequential bare W1 turns, each in its own task (as a run is)."""
    started = time.perf_counter()
    for _ in range(runs):
        events: list[dict[str, Any]] = []
        answer = await asyncio.create_task(_bare_turn("What is 1 + 2?", events))
        if answer != "3":
            raise AssertionError(answer)
    return time.perf_counter() - started


class _BareLog:
    """The smallest append-only log with a follower: a list and an asyncio.Event."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.closed = False
        self.waiter: asyncio.Event | None = None

    def append(self, item: Any) -> None:
        self.items.append(item)
        if self.waiter is not None:
            self.waiter.set()
            self.waiter = None

    def close(self) -> None:
        self.closed = True
        if self.waiter is not None:
            self.waiter.set()
            self.waiter = None

    async def follow(self) -> AsyncIterator[Any]:
        index = 0
        while True:
            while index < len(self.items):
                yield self.items[index]
                index += 1
            if self.closed:
                return
            self.waiter = asyncio.Event()
            await self.waiter.wait()


async def w2_bare(deltas: int = W2_DELTAS) -> float:
    """Seconds for a producer task streaming `deltas` deltas into a log read by a follower."""
    pieces = ["x"] * deltas

    async def model() -> AsyncIterator[str]:
        for piece in pieces:
            yield piece

    async def produce(log: _BareLog) -> None:
        async for piece in model():
            log.append({"type": "text_delta", "content": piece})
        log.close()

    started = time.perf_counter()
    log = _BareLog()
    task = asyncio.create_task(produce(log))
    seen = 0
    async for event in log.follow():
        if event["type"] == "text_delta":
            seen += 1
    await task
    elapsed = time.perf_counter() - started
    if seen != deltas:
        raise AssertionError(seen)
    return elapsed


async def w4_bare(runs: int) -> float:
    """Seconds for `runs` concurrent bare W1 turns."""
    started = time.perf_counter()
    tasks = [asyncio.create_task(_bare_turn("What is 1 + 2?", [])) for _ in range(runs)]
    for task in tasks:
        if await task != "3":
            raise AssertionError("bare W4")
    return time.perf_counter() - started


# --- W1 through the Python agent facade ------------------------------------------------------


async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def w1_agent_facade() -> Any:
    """W1's agent as an `Agent`: a function tool (validated by pydantic), a model string
    naming the zero-latency provider."""
    from agentkit import Agent
    from agentkit.providers import register_provider

    register_provider("bench-add", lambda **_: AddProvider())
    return Agent("bench-add", name="bench-adder", instructions="You add numbers.", tools=[add])


async def w1_agent(runs: int) -> float:
    """Seconds for `runs` sequential W1 runs through `Agent.run` (one runtime for the
    block, as `async with agent:` keeps)."""
    agent = w1_agent_facade()
    async with agent:
        started = time.perf_counter()
        for _ in range(runs):
            outcome = await agent.run("What is 1 + 2?")
            if outcome.output != "3":
                raise AssertionError(f"W1 (Agent) answered {outcome.output!r}")
        return time.perf_counter() - started
