"""The in-memory store is bounded: idle sessions and ended runs are evicted, oldest first,
past documented limits, and work in progress never is."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import AgentSpec, Runtime
from agentkit.events import Text
from agentkit.providers import Chunk, ModelRequest, Stop, TextChunk, UserMessage
from agentkit.stores import EventEntry, MemoryStore, RunRecord, SessionNotFoundError
from agentkit.stores._memory import DEFAULT_MAX_FINISHED_RUNS, DEFAULT_MAX_SESSIONS

pytestmark = pytest.mark.anyio

SPEC = AgentSpec(id="demo:bounded", system_prompt="Answer.")


def _entries(*offsets: int) -> list[EventEntry]:
    return [EventEntry(offset, Text(content=f"e{offset}")) for offset in offsets]


def _running(run_id: str, session_id: str) -> RunRecord:
    return RunRecord(run_id, session_id, "app:agent", "running", time.time())


def check_invariants(store: MemoryStore) -> None:
    """The bookkeeping agrees with the rows, and the bounds hold."""
    sessions = set(store._sessions)
    assert set(store._transcripts) == sessions
    assert set(store._session_runs) == sessions
    assert set(store._idle) == sessions - set(store._running)
    assert set(store._running) <= sessions
    indexed = {run_id for runs in store._session_runs.values() for run_id in runs}
    assert indexed == set(store._runs)
    for session_id, runs in store._session_runs.items():
        assert all(store._runs[run_id][1] == session_id for run_id in runs)
    running = {run_id for run_id, row in store._runs.items() if row[3] == "running"}
    assert running == set(store._running.values())
    assert set(store._ended) == set(store._events) - running
    assert set(store._events) >= set(store._runs)
    if store.max_finished_runs is not None:
        assert len(store._ended) <= store.max_finished_runs
    if store.max_sessions is not None and len(sessions) > store.max_sessions:
        # Over the bound only while the sessions beyond it have runs going (plus, at
        # most, the one just created).
        assert len(store._idle) <= 1


async def test_defaults_and_arguments() -> None:
    store = MemoryStore()
    assert (store.max_sessions, store.max_finished_runs) == (10_000, 10_000)
    assert (DEFAULT_MAX_SESSIONS, DEFAULT_MAX_FINISHED_RUNS) == (10_000, 10_000)
    unbounded = MemoryStore(max_sessions=None, max_finished_runs=None)
    assert unbounded.max_sessions is None and unbounded.max_finished_runs is None
    for bad in (0, -1, True, 1.5, "10"):
        with pytest.raises(ValueError, match="max_sessions"):
            MemoryStore(max_sessions=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="max_finished_runs"):
            MemoryStore(max_finished_runs=bad)  # type: ignore[arg-type]


async def test_idle_sessions_go_least_recently_active_first() -> None:
    store = MemoryStore(max_sessions=3)
    for session_id in ("s1", "s2", "s3"):
        await store.create_session(session_id, "app:agent")
    await store.append_transcript("s1", [UserMessage(content="still here")])  # s1 is active
    await store.create_session("s4", "app:agent")  # s2 is now the least recently active
    assert await store.get_session("s2") is None
    with pytest.raises(SessionNotFoundError):
        await store.load_transcript("s2")
    with pytest.raises(SessionNotFoundError):
        await store.append_transcript("s2", [UserMessage(content="late")])
    # Listed in creation order, as before.
    assert [s.id for s in await store.list_sessions()] == ["s1", "s3", "s4"]
    assert len(await store.load_transcript("s1")) == 1
    await store.update_session("s3", {"touched": True})
    await store.create_session("s5", "app:agent")  # s1 is now the oldest by activity
    assert [s.id for s in await store.list_sessions()] == ["s3", "s4", "s5"]
    # An evicted id can be used again, from scratch.
    await store.create_session("s1", "app:agent")
    assert await store.load_transcript("s1") == []
    check_invariants(store)


async def test_an_evicted_session_takes_its_runs_and_logs() -> None:
    store = MemoryStore(max_sessions=1)
    await store.create_session("old", "app:agent")
    await store.create_run(_running("r1", "old"), _entries(0, 1))
    await store.finish_run("r1", "completed", time.time(), events=_entries(2))
    await store.create_session("new", "app:agent")
    assert await store.get_session("old") is None
    assert await store.get_run("r1") is None
    assert await store.read_events("r1") == []
    assert await store.list_runs("old") == []
    with pytest.raises(SessionNotFoundError):
        await store.create_run(_running("r2", "old"))
    check_invariants(store)


async def test_ended_runs_go_in_the_order_they_ended() -> None:
    store = MemoryStore(max_finished_runs=2)
    for index in range(4):
        await store.create_session(f"s{index}", "app:agent")
        await store.create_run(_running(f"r{index}", f"s{index}"), _entries(0))
    for run_id in ("r2", "r0", "r1"):
        assert await store.finish_run(run_id, "completed", time.time(), events=_entries(1))
    # r2 ended first: its record and log are gone, its session stays.
    assert await store.get_run("r2") is None
    assert await store.read_events("r2") == []
    assert await store.list_runs("s2") == []
    assert await store.get_session("s2") is not None
    assert [e.offset for e in await store.read_events("r0")] == [0, 1]
    assert [e.offset for e in await store.read_events("r1")] == [0, 1]
    # The running run is never evicted, however many end around it.
    for index in range(10):
        await store.create_run(RunRecord(f"done{index}", "s0", "a:a", "completed", 1.0, 2.0))
    assert [e.offset for e in await store.read_events("r3")] == [0]
    run = await store.get_run("r3")
    assert run is not None and run.status == "running"
    await store.append_events("r3", _entries(1))
    assert [r.id for r in await store.list_runs("s0")] == ["done8", "done9"]
    check_invariants(store)


async def test_running_work_is_never_evicted() -> None:
    store = MemoryStore(max_sessions=2, max_finished_runs=1)
    for session_id in ("a", "b"):
        await store.create_session(session_id, "app:agent")
        await store.create_run(_running(f"run-{session_id}", session_id), _entries(0))
    # Both sessions are busy: the store goes over its bound rather than evict them.
    await store.create_session("c", "app:agent")
    assert {s.id for s in await store.list_sessions()} == {"a", "b", "c"}
    check_invariants(store)
    await store.create_session("d", "app:agent")  # c is idle: it goes, a and b stay
    assert {s.id for s in await store.list_sessions()} == {"a", "b", "d"}
    for session_id in ("a", "b"):
        await store.append_step(
            session_id, [UserMessage(content="hi")], f"run-{session_id}", _entries(1)
        )
        assert [e.offset for e in await store.read_events(f"run-{session_id}")] == [0, 1]
    check_invariants(store)
    # When a's run ends the store is over its bound again: the oldest idle session (d)
    # goes; a stays, with its run (the one ended run kept).
    assert await store.finish_run("run-a", "completed", time.time())
    assert {s.id for s in await store.list_sessions()} == {"a", "b"}
    assert len(await store.load_transcript("a")) == 1
    assert [r.id for r in await store.list_runs("a")] == ["run-a"]
    check_invariants(store)


async def test_logs_without_a_record_are_bounded_too() -> None:
    store = MemoryStore(max_finished_runs=2)
    for index in range(5):
        await store.append_events(f"stray{index}", _entries(0, 1))
    assert [await store.read_events(f"stray{index}") != [] for index in range(5)] == [
        False,
        False,
        False,
        True,
        True,
    ]
    await store.append_events("stray4", [])
    await store.append_events("nothing", [])  # an empty batch keeps nothing
    assert "nothing" not in store._events
    # A record given later takes its log out of the eviction order while it runs.
    await store.create_session("s", "app:agent")
    await store.create_run(_running("stray4", "s"), _entries(0))
    for index in range(5):
        await store.append_events(f"more{index}", _entries(0))
    assert [e.offset for e in await store.read_events("stray4")] == [0]
    check_invariants(store)


async def test_delete_session_keeps_the_bookkeeping() -> None:
    store = MemoryStore(max_sessions=3, max_finished_runs=3)
    await store.create_session("s1", "app:agent")
    await store.create_run(_running("r1", "s1"))
    await store.create_session("s2", "app:agent")
    await store.create_run(_running("r2", "s2"))
    await store.finish_run("r2", "completed", time.time())
    await store.delete_session("s1")  # with its running run
    await store.delete_session("s2")
    await store.delete_session("missing")
    assert not store._idle and not store._ended and not store._running
    check_invariants(store)


_OPS = st.lists(
    st.tuples(
        st.sampled_from(["create", "start", "finish", "write", "delete", "stray"]),
        st.integers(0, 11),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=_OPS, max_sessions=st.integers(1, 5), max_runs=st.integers(1, 5))
async def test_random_operations_keep_bounds_and_running_work(
    ops: list[tuple[str, int]], max_sessions: int, max_runs: int
) -> None:
    store = MemoryStore(max_sessions=max_sessions, max_finished_runs=max_runs)
    live: dict[str, int] = {}  # running run id -> how many events it was given
    for counter, (op, index) in enumerate(ops):
        session_id = f"s{index}"
        if op == "create":
            if await store.get_session(session_id) is None:
                await store.create_session(session_id, "app:agent")
        elif op == "start":
            if await store.get_session(session_id) is not None and session_id not in store._running:
                run_id = f"r{counter}"
                await store.create_run(_running(run_id, session_id), _entries(0))
                live[run_id] = 1
        elif op == "finish":
            run_id = store._running.get(session_id, "")
            if run_id:
                assert await store.finish_run(run_id, "completed", time.time())
                del live[run_id]
        elif op == "write":
            run_id = store._running.get(session_id, "")
            if run_id:
                await store.append_step(
                    session_id, [UserMessage(content="x")], run_id, _entries(live[run_id])
                )
                live[run_id] += 1
        elif op == "delete":
            run_id = store._running.get(session_id, "")
            live.pop(run_id, None)
            await store.delete_session(session_id)
        else:
            await store.append_events(f"stray{counter}", _entries(0))
        check_invariants(store)
        for run_id, count in live.items():
            assert len(await store.read_events(run_id)) == count


class Quick:
    """A zero-latency model that answers at once (and keeps nothing)."""

    name = "quick"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "quick-model"

    async def _stream(self) -> AsyncIterator[Chunk]:
        yield TextChunk("ok")
        yield Stop()

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._stream()


async def test_a_long_lived_runtime_stays_at_the_bound() -> None:
    """20,000 short runs on new sessions (and one session resumed now and then) in a
    `Runtime()` with the default store: it holds 10,000 sessions and 10,000 ended runs."""
    total, batch = 20_000, 250
    async with Runtime(provider=Quick()) as runtime:
        store = runtime.store
        assert isinstance(store, MemoryStore)
        first = await runtime.start(SPEC, "first")
        await first.wait()
        regular = await runtime.start(SPEC, "regular")
        await regular.wait()
        peak = 0
        for index in range(total // batch):
            runs = [await runtime.start(SPEC, "hi") for _ in range(batch)]
            outcomes = [await run.wait() for run in runs]
            assert all(outcome.ok for outcome in outcomes)
            if index % 8 == 0:  # a conversation that goes on all along
                again = await runtime.start(SPEC, "again", session_id=regular.session_id)
                assert (await again.wait()).ok
            peak = max(peak, len(store._sessions), len(store._runs), len(store._events))
        assert peak <= DEFAULT_MAX_SESSIONS + batch
        assert len(await store.list_sessions()) == DEFAULT_MAX_SESSIONS
        assert len(store._runs) == len(store._events) == DEFAULT_MAX_FINISHED_RUNS
        assert not store._running
        check_invariants(store)
        # The oldest idle session went; the one still in use and the newest stayed.
        assert await store.get_session(first.session_id) is None
        assert await store.get_run(first.id) is None
        assert await store.get_session(regular.session_id) is not None
        # Its transcript is whole: the user's and the model's message of 1 + 10 runs.
        assert len(await store.load_transcript(regular.session_id)) == 2 * 11
        assert await store.get_session(runs[-1].session_id) is not None
        assert [e.offset for e in await store.read_events(runs[-1].id)]
        # The runtime's own bookkeeping holds only what is going.
        assert not runtime._runs
        assert len(runtime._offers) <= 512


class Gate:
    """A model that waits for `release` before answering."""

    name = "gate"

    def __init__(self) -> None:
        self.release = anyio.Event()

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "gate-model"

    async def _stream(self) -> AsyncIterator[Chunk]:
        await self.release.wait()
        yield TextChunk("ok")
        yield Stop()

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._stream()


async def test_runs_going_past_the_bound_all_finish_then_the_store_shrinks() -> None:
    provider = Gate()
    store = MemoryStore(max_sessions=20, max_finished_runs=30)
    async with Runtime(provider=provider, store=store) as runtime:
        runs = [await runtime.start(SPEC, "hi") for _ in range(50)]
        await anyio.sleep(0.05)
        assert len(store._sessions) == 50  # all busy: none evicted
        assert all([await store.get_run(run.id) is not None for run in runs])
        provider.release.set()
        outcomes: list[Any] = [await run.wait() for run in runs]
        assert all(outcome.ok and outcome.text == "ok" for outcome in outcomes)
        assert len(store._sessions) == 20
        assert len(store._runs) == 20  # the sessions kept, with their runs
        check_invariants(store)
