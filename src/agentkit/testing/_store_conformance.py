"""The store conformance suite: what every [`Store`][agentkit.stores.Store] backend must do.

Two ways to run it:

- Under pytest, subclass [`StoreConformance`][agentkit.testing.StoreConformance] and give
  it a `store` fixture. Every check becomes one test, run under asyncio and trio (anyio's
  pytest plugin):

    ```python
    import pytest

    from agentkit.stores import MemoryStore
    from agentkit.testing import StoreConformance


    class TestMemoryStore(StoreConformance):
        @pytest.fixture
        async def store(self):
            store = MemoryStore()
            yield store
            await store.aclose()
    ```

- Anywhere else, `await store_conformance(make_store)` runs every check on a fresh store
  from `make_store()` and raises an `ExceptionGroup` naming each check that failed.

This module does not import pytest, so importing it costs nothing outside tests.

Why one long module: one short check per point of the store contract, kept together so that
a backend's author reads the whole contract in one place.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Literal

import anyio
import anyio.lowlevel

from agentkit.events import (
    Accounting,
    AgentMessage,
    ErrorEvent,
    ModelUsage,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    QuestionAnswerEvent,
    QuestionEvent,
    Result,
    SessionInit,
    StructuredOutput,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    TurnEnd,
    TurnStart,
)
from agentkit.messages import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentkit.stores import (
    AgentRecord,
    ConversationRecord,
    DelegationRecord,
    EventEntry,
    MemberRecord,
    NewRoomEvent,
    PageKey,
    QueuedRecord,
    RecordExistsError,
    RecordNotFoundError,
    RoomEvent,
    RoomExistsError,
    RoomGrant,
    RoomNotFoundError,
    RoomRecord,
    RunEndedError,
    RunRecord,
    SessionBusyError,
    SessionExistsError,
    SessionNotFoundError,
    Store,
    StoreError,
)
from agentkit.testing._suite import add_tests, run_checks

__all__ = ["STORE_CHECKS", "StoreCheck", "StoreConformance", "store_conformance"]

StoreCheck = Callable[[Store], Awaitable[None]]
"""One conformance check: an async function given a fresh, empty store."""

_checks: dict[str, StoreCheck] = {}


def _check(fn: StoreCheck) -> StoreCheck:
    _checks[fn.__name__.removeprefix("check_")] = fn
    return fn


# --- sample data -------------------------------------------------------------------------

_SAMPLE_MESSAGES: tuple[Message, ...] = (
    UserMessage(content="What is 1 + 2?"),
    AssistantMessage(
        thinking=(
            ThinkingBlock(content="The user wants a sum.", signature="sig-Zm9vYmFy=="),
            ThinkingBlock(content="Unsigned block."),
        ),
        text="Let me add.",
        tool_calls=(
            ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2, "nested": {"x": [1]}}),
            ToolCall(id="call_2", name="add", arguments='{"a": 1, "b": '),
        ),
    ),
    ToolResultMessage(tool_call_id="call_1", name="add", content="3"),
    ToolResultMessage(
        tool_call_id="call_2", name="add", content="arguments are not JSON", is_error=True
    ),
    AssistantMessage(text="3"),
)

_ACCOUNTING = Accounting(
    models={"model-a": ModelUsage(input_tokens=10, output_tokens=5, cache_read_tokens=2)},
    model_calls=1,
    tool_calls=1,
    cost_usd=0.0001,
)

_SAMPLE_EVENTS: tuple[AgentMessage, ...] = (
    TurnStart(turn_id="t1", session_id="s1", user_prompt="What is 1 + 2?"),
    SessionInit(session_id="s1", system_prompt="You add.", project_path="/tmp/p"),
    Thinking(content="Sum it.", signature="sig=="),
    Text(content="Let me add.", turn_phase="commentary"),
    ToolUse(id="call_1", tool="add", input={"a": 1, "b": 2}),
    ToolResult(tool_use_id="call_1", tool="add", output={"sum": 3, "terms": [1, 2]}),
    ToolResult(tool_use_id="call_2", tool="add", output="boom", is_error=True),
    Text(content="from a helper", agent="app:helper"),
    StructuredOutput(payload={"answer": 3, "ok": True, "none": None}),
    Text(content="3", turn_phase="final"),
    Result(content="3", accounting=_ACCOUNTING),
    ErrorEvent(error="helper failed", accounting=_ACCOUNTING, agent="app:helper"),
    PermissionRequestEvent(
        request_id="q1",
        tool_name="Bash",
        tool_use_id="call_3",
        input={"command": "ls", "file_path": "é"},
        effect="execute",
        deadline=1700000000.25,
    ),
    PermissionDecisionEvent(
        request_id="q1", decision="allow", updated_input={"command": "ls -a"}, rule="Bash(ls)"
    ),
    QuestionEvent(request_id="q2", tool_use_id="call_4", questions=[{"id": "a", "question": "?"}]),
    QuestionAnswerEvent(request_id="q2", answers={"a": ["yes", 1, None]}),
    TurnEnd(turn_id="t1", status="completed", duration_ms=12),
)

_UNICODE = 'héllo wörld ✓ 日本語 עברית 🦀🎉 \u0000 nul \u2028 sep \\ "quotes" \ud7ff'


def _entries(offsets: list[int], prefix: str = "e") -> list[EventEntry]:
    return [EventEntry(o, Text(content=f"{prefix}{o}")) for o in offsets]


def _offsets(entries: list[EventEntry]) -> list[int]:
    return [e.offset for e in entries]


def _run(run_id: str, session_id: str, created_at: float | None = None) -> RunRecord:
    return RunRecord(run_id, session_id, "app:agent", "running", created_at or time.time())


async def _expect(exc_type: type[BaseException], call: Awaitable[Any], what: str) -> None:
    try:
        await call
    except exc_type:
        return
    raise AssertionError(f"{what}: expected {exc_type.__name__}")


# --- sessions ----------------------------------------------------------------------------


@_check
async def check_session_create_and_get(store: Store) -> None:
    """A new session comes back from `get_session` exactly as `create_session` returned it."""
    before = time.time()
    metadata: dict[str, Any] = {"fingerprint": "abc", "n": 1}
    created = await store.create_session("s1", "app:agent", metadata)
    metadata["fingerprint"] = "changed after create"
    assert created.id == "s1" and created.agent_id == "app:agent"
    assert created.metadata == {"fingerprint": "abc", "n": 1}
    assert before - 1 <= created.created_at <= time.time() + 1
    assert created.created_at <= created.updated_at
    assert await store.get_session("s1") == created
    assert await store.get_session("missing") is None
    bare = await store.create_session("s2", "app:agent")
    assert bare.metadata == {}
    assert await store.get_session("s2") == bare


@_check
async def check_session_duplicate_rejected(store: Store) -> None:
    """Creating a session whose id is taken raises `SessionExistsError`, changing nothing."""
    original = await store.create_session("s1", "app:a", {"v": 1})
    try:
        await store.create_session("s1", "app:b", {"v": 2})
    except SessionExistsError as exc:
        assert isinstance(exc, StoreError)
    else:
        raise AssertionError("duplicate session id: expected SessionExistsError")
    assert await store.get_session("s1") == original


@_check
async def check_session_update(store: Store) -> None:
    """`update_session` replaces the metadata and moves `updated_at`; missing ids raise."""
    created = await store.create_session("s1", "app:agent", {"a": 1, "b": 2})
    updated = await store.update_session("s1", {"c": [1, 2, {"d": None}]})
    assert updated.metadata == {"c": [1, 2, {"d": None}]}
    assert updated.id == "s1" and updated.agent_id == "app:agent"
    assert updated.created_at == created.created_at
    assert updated.updated_at >= created.updated_at
    assert await store.get_session("s1") == updated
    try:
        await store.update_session("missing", {})
    except SessionNotFoundError as exc:
        assert isinstance(exc, StoreError) and isinstance(exc, LookupError)
    else:
        raise AssertionError("update of a missing session: expected SessionNotFoundError")
    assert await store.get_session("missing") is None


@_check
async def check_session_list(store: Store) -> None:
    """Sessions list oldest first, all of them or those of one agent."""
    assert await store.list_sessions() == []
    for i in range(6):
        await store.create_session(f"s{i}", "app:even" if i % 2 == 0 else "app:odd")
    everything = await store.list_sessions()
    assert [s.id for s in everything] == [f"s{i}" for i in range(6)]
    assert [s.id for s in await store.list_sessions("app:even")] == ["s0", "s2", "s4"]
    assert [s.id for s in await store.list_sessions(agent_id="app:odd")] == ["s1", "s3", "s5"]
    assert await store.list_sessions("app:nobody") == []
    assert everything[0] == await store.get_session("s0")


@_check
async def check_session_metadata_types(store: Store) -> None:
    """Metadata keeps nested JSON values of every type, unicode included."""
    metadata: dict[str, Any] = {
        "str": _UNICODE,
        "int": 2**53,
        "neg": -7,
        "float": 0.1,
        "bool": True,
        "none": None,
        "list": [1, "two", [3.5], {"four": False}],
        "dict": {"ключ": {"🔑": "värde"}},
        "": "empty key",
    }
    await store.create_session("s1", "app:agent", metadata)
    record = await store.get_session("s1")
    assert record is not None and record.metadata == metadata
    assert (await store.update_session("s1", metadata)).metadata == metadata


@_check
async def check_session_delete_cascades(store: Store) -> None:
    """Deleting a session removes its transcript, runs and events, and nothing else."""
    for sid in ("gone", "kept"):
        await store.create_session(sid, "app:agent", {"sid": sid})
        await store.append_transcript(sid, [UserMessage(content=f"hi from {sid}")])
        await store.create_run(_run(f"{sid}-r1", sid))
        await store.append_events(f"{sid}-r1", _entries([0, 1, 2], sid))
    await store.delete_session("gone")
    assert await store.get_session("gone") is None
    assert await store.get_run("gone-r1") is None
    assert await store.list_runs("gone") == []
    assert await store.read_events("gone-r1") == []
    await _expect(
        SessionNotFoundError, store.load_transcript("gone"), "transcript of a deleted session"
    )
    assert [s.id for s in await store.list_sessions()] == ["kept"]
    # Deleting again, or an id that never existed, is not an error.
    await store.delete_session("gone")
    await store.delete_session("never-existed")
    # A new session with the same id starts empty.
    await store.create_session("gone", "app:other")
    assert await store.load_transcript("gone") == []
    assert await store.list_runs("gone") == []
    # The other session is untouched.
    assert await store.load_transcript("kept") == [UserMessage(content="hi from kept")]
    assert [r.id for r in await store.list_runs("kept")] == ["kept-r1"]
    assert _offsets(await store.read_events("kept-r1")) == [0, 1, 2]


# --- transcripts -------------------------------------------------------------------------


@_check
async def check_transcript_roundtrip(store: Store) -> None:
    """All three message types come back equal and in order, across several appends."""
    created = await store.create_session("s1", "app:agent")
    assert await store.load_transcript("s1") == []
    await store.append_transcript("s1", _SAMPLE_MESSAGES[:2])
    await store.append_transcript("s1", [])
    await store.append_transcript("s1", _SAMPLE_MESSAGES[2:])
    loaded = await store.load_transcript("s1")
    assert loaded == list(_SAMPLE_MESSAGES)
    assert [type(m) for m in loaded] == [type(m) for m in _SAMPLE_MESSAGES]
    assistant = loaded[1]
    assert isinstance(assistant, AssistantMessage)
    assert assistant.tool_calls[1].arguments == '{"a": 1, "b": '
    assert assistant.thinking[0].signature == "sig-Zm9vYmFy=="
    assert assistant.thinking[1].signature is None
    session = await store.get_session("s1")
    assert session is not None and session.updated_at >= created.updated_at
    loaded.clear()  # the caller owns the list it got
    assert len(await store.load_transcript("s1")) == len(_SAMPLE_MESSAGES)


@_check
async def check_transcript_missing_session(store: Store) -> None:
    """Transcript calls on a missing session raise `SessionNotFoundError` and store nothing."""
    await _expect(SessionNotFoundError, store.load_transcript("s1"), "load_transcript")
    await _expect(
        SessionNotFoundError,
        store.append_transcript("s1", [UserMessage(content="lost")]),
        "append_transcript",
    )
    await _expect(SessionNotFoundError, store.truncate_transcript("s1", 0), "truncate")
    await store.create_session("s1", "app:agent")
    assert await store.load_transcript("s1") == []


@_check
async def check_transcript_truncate(store: Store) -> None:
    """Truncating keeps the first messages; later appends continue after them."""
    await store.create_session("s1", "app:agent")
    messages = [UserMessage(content=f"m{i}") for i in range(5)]
    await store.append_transcript("s1", messages)
    await store.truncate_transcript("s1", 10)
    assert await store.load_transcript("s1") == messages
    await store.truncate_transcript("s1", 3)
    assert await store.load_transcript("s1") == messages[:3]
    await store.append_transcript("s1", [UserMessage(content="after")])
    assert await store.load_transcript("s1") == [*messages[:3], UserMessage(content="after")]
    await store.truncate_transcript("s1", 0)
    assert await store.load_transcript("s1") == []
    await store.append_transcript("s1", messages[:1])
    assert await store.load_transcript("s1") == messages[:1]


@_check
async def check_transcript_concurrent_appends_atomic(store: Store) -> None:
    """Concurrent appends never interleave: each batch lands whole and contiguous."""
    await store.create_session("s1", "app:agent")
    batches, size = 12, 5

    async def append(batch: int) -> None:
        await store.append_transcript(
            "s1", [UserMessage(content=f"{batch}:{i}") for i in range(size)]
        )

    async with anyio.create_task_group() as tg:
        for batch in range(batches):
            tg.start_soon(append, batch)
    loaded = await store.load_transcript("s1")
    assert len(loaded) == batches * size
    contents = [m.content for m in loaded if isinstance(m, UserMessage)]
    for start in range(0, len(contents), size):
        chunk = contents[start : start + size]
        label = chunk[0].split(":")[0]
        assert chunk == [f"{label}:{i}" for i in range(size)], f"batch split: {chunk}"
    assert sorted({c.split(":")[0] for c in contents}) == sorted(str(b) for b in range(batches))


@_check
async def check_transcript_isolation(store: Store) -> None:
    """Each session has its own transcript."""
    await store.create_session("a", "app:agent")
    await store.create_session("b", "app:agent")
    await store.append_transcript("a", [UserMessage(content="for a")])
    await store.append_transcript("b", [UserMessage(content="for b"), UserMessage(content="b2")])
    await store.truncate_transcript("b", 1)
    assert await store.load_transcript("a") == [UserMessage(content="for a")]
    assert await store.load_transcript("b") == [UserMessage(content="for b")]


# --- runs --------------------------------------------------------------------------------


@_check
async def check_runs_lifecycle(store: Store) -> None:
    """Runs are created running, finished with a status and time, and listed oldest first."""
    await store.create_session("s1", "app:agent")
    await store.create_session("s2", "app:agent")
    now = time.time()
    first = RunRecord("r1", "s1", "app:agent", "running", now, None, "owner-1", now, now + 30)
    await store.create_run(first)
    assert await store.get_run("r1") == first
    assert await store.finish_run("r1", "completed", now + 0.5)
    await store.create_run(RunRecord("r2", "s1", "app:agent", "running", now + 1))
    await store.create_run(RunRecord("other", "s2", "app:agent", "running", now))
    assert await store.finish_run("r2", "interrupted", now + 1.5, error="stopped")
    await store.create_run(RunRecord("r3", "s1", "app:sub", "running", now + 2))
    assert await store.finish_run("r3", "error", now + 2.5, error="it failed")
    assert await store.get_run("r1") == RunRecord(
        "r1", "s1", "app:agent", "completed", now, now + 0.5, "owner-1", now, now + 30
    )
    assert (await store.get_run("r3")) == RunRecord(
        "r3", "s1", "app:sub", "error", now + 2, now + 2.5, error="it failed"
    )
    runs = await store.list_runs("s1")
    assert [(r.id, r.status, r.finished_at) for r in runs] == [
        ("r1", "completed", now + 0.5),
        ("r2", "interrupted", now + 1.5),
        ("r3", "error", now + 2.5),
    ]
    assert runs[2].agent_id == "app:sub"
    assert [r.id for r in await store.list_runs("s2")] == ["other"]
    assert await store.list_runs("missing") == []
    assert await store.get_run("missing") is None
    assert not await store.finish_run("missing", "completed", now)  # not an error
    assert await store.get_run("missing") is None


@_check
async def check_run_needs_session(store: Store) -> None:
    """A run of a missing session raises `SessionNotFoundError`."""
    await _expect(SessionNotFoundError, store.create_run(_run("r1", "nope")), "create_run")
    assert await store.get_run("r1") is None


@_check
async def check_run_one_running_per_session(store: Store) -> None:
    """A session holds at most one running run: a second is refused with
    `SessionBusyError` (and not recorded) until the first has ended; runs created already
    ended are not limited."""
    await store.create_session("s1", "app:agent")
    await store.create_session("s2", "app:agent")
    await store.create_run(_run("r1", "s1"))
    await _expect(SessionBusyError, store.create_run(_run("r2", "s1")), "second running run")
    assert await store.get_run("r2") is None
    assert [r.id for r in await store.list_runs("s1")] == ["r1"]
    await store.create_run(_run("r3", "s2"))  # another session is not affected
    finished = RunRecord("r4", "s1", "app:agent", "completed", time.time(), time.time())
    await store.create_run(finished)
    assert await store.finish_run("r1", "completed", time.time())
    await store.create_run(_run("r2", "s1"))
    assert (await store.get_run("r2")) is not None


@_check
async def check_run_concurrent_starts_one_wins(store: Store) -> None:
    """Many runs started at once on one session: exactly one is accepted."""
    await store.create_session("s1", "app:agent")
    accepted: list[str] = []
    refused: list[str] = []

    async def start(run_id: str) -> None:
        try:
            await store.create_run(_run(run_id, "s1"))
        except SessionBusyError:
            refused.append(run_id)
        else:
            accepted.append(run_id)

    async with anyio.create_task_group() as tg:
        for r in range(8):
            tg.start_soon(start, f"r{r}")
    assert len(accepted) == 1 and len(refused) == 7, (accepted, refused)
    assert [r.id for r in await store.list_runs("s1")] == accepted


@_check
async def check_run_created_with_events(store: Store) -> None:
    """`create_run` stores the run's first events with it; bad offsets store neither."""
    await store.create_session("s1", "app:agent")
    entries = [EventEntry(i, event) for i, event in enumerate(_SAMPLE_EVENTS[:2])]
    await store.create_run(_run("r1", "s1"), entries)
    assert await store.read_events("r1") == entries
    await store.append_events("r1", _entries([3]))
    assert _offsets(await store.read_events("r1")) == [0, 1, 3]
    await store.create_session("s2", "app:agent")
    with contextlib.suppress(ValueError, StoreError):
        await store.create_run(_run("r2", "s2"), _entries([1, 0]))
        raise AssertionError("create_run with offsets out of order: expected an error")
    assert await store.get_run("r2") is None
    assert await store.read_events("r2") == []


@_check
async def check_run_finish_is_conditional(store: Store) -> None:
    """`finish_run` ends a running run once, with its last events; it refuses (returns
    `False`, writes nothing) for an ended run, another owner, or an unexpired lease."""
    await store.create_session("s1", "app:agent")
    now = time.time()
    await store.create_run(
        RunRecord("r1", "s1", "app:agent", "running", now, None, "me", now, now + 30),
        _entries([0, 1]),
    )
    assert not await store.finish_run("r1", "completed", now, owner="someone else")
    assert not await store.finish_run("r1", "error", now, events=_entries([2]), expired_by=now + 10)
    assert _offsets(await store.read_events("r1")) == [0, 1]
    assert (await store.get_run("r1")).status == "running"  # type: ignore[union-attr]
    final = [
        EventEntry(3, ErrorEvent(error="no")),
        EventEntry(4, TurnEnd(turn_id="t", status="error", duration_ms=5)),
    ]
    assert await store.finish_run("r1", "error", now + 1, events=final, error="no", owner="me")
    assert await store.read_events("r1", after=1) == final
    record = await store.get_run("r1")
    assert record is not None
    assert (record.status, record.finished_at, record.error) == ("error", now + 1, "no")
    # Once ended: no second ending, and no more events.
    assert not await store.finish_run("r1", "completed", now + 2, events=_entries([5]))
    await _expect(RunEndedError, store.append_events("r1", _entries([5])), "append after end")
    assert _offsets(await store.read_events("r1")) == [0, 1, 3, 4]
    assert (await store.get_run("r1")) == record
    # Offsets that do not follow the stored ones leave the run running.
    await store.create_run(_run("r2", "s1"), _entries([0, 1]))
    with contextlib.suppress(ValueError, StoreError):
        await store.finish_run("r2", "completed", now, events=_entries([1]))
        raise AssertionError("finish_run with an offset already stored: expected an error")
    assert (await store.get_run("r2")).status == "running"  # type: ignore[union-attr]


@_check
async def check_run_leases(store: Store) -> None:
    """An owner renews the leases of its running runs only; the answer names what it
    still holds, and runs whose lease expired are listed for the sweep, oldest first."""
    now = time.time()
    for sid in ("s1", "s2", "s3", "s4"):
        await store.create_session(sid, "app:agent")
    await store.create_run(RunRecord("mine", "s1", "a:a", "running", now, None, "me", now, now + 5))
    await store.create_run(RunRecord("old", "s2", "a:a", "running", now - 9, None, "me", now, now))
    await store.create_run(
        RunRecord("theirs", "s3", "a:a", "running", now, None, "other", now, now + 5)
    )
    await store.create_run(RunRecord("legacy", "s4", "a:a", "running", now - 20))
    assert [r.id for r in await store.expired_runs(now + 1)] == ["old", "legacy"]
    kept = await store.renew_leases("me", ["mine", "old", "theirs", "missing"], now + 1, now + 40)
    assert kept == {"mine", "old"}
    assert await store.renew_leases("me", [], now, now) == set()
    mine = await store.get_run("mine")
    assert mine is not None and (mine.heartbeat_at, mine.lease_expires_at) == (now + 1, now + 40)
    theirs = await store.get_run("theirs")
    assert theirs is not None and theirs.lease_expires_at == now + 5
    assert [r.id for r in await store.expired_runs(now + 1)] == ["legacy"]
    assert [r.id for r in await store.expired_runs(now + 39)] == ["theirs", "legacy"]
    # Ended runs are neither renewed nor expired.
    assert await store.finish_run("mine", "completed", now + 2)
    assert await store.renew_leases("me", ["mine"], now + 3, now + 50) == set()
    assert "mine" not in [r.id for r in await store.expired_runs(now + 100)]


@_check
async def check_run_sweep_ends_once(store: Store) -> None:
    """Ending an expired run (`expired_by`) works once, even when tried concurrently, and
    never when the owner renewed its lease first; the session is free afterwards."""
    now = time.time()
    await store.create_session("s1", "app:agent")
    await store.create_run(
        RunRecord("r1", "s1", "a:a", "running", now - 60, None, "dead", now - 60, now - 30),
        _entries([0, 1]),
    )
    await store.create_session("s2", "app:agent")
    await store.create_run(
        RunRecord("r2", "s2", "a:a", "running", now - 60, None, "alive", now - 60, now - 30)
    )
    assert await store.renew_leases("alive", ["r2"], now, now + 30) == {"r2"}
    assert not await store.finish_run("r2", "error", now, expired_by=now)
    results: list[bool] = []

    async def sweep() -> None:
        ending = [
            EventEntry(2, ErrorEvent(error="gone")),
            EventEntry(3, TurnEnd(turn_id="t", status="error", duration_ms=1)),
        ]
        try:
            results.append(
                await store.finish_run("r1", "error", now, events=ending, expired_by=now)
            )
        except (ValueError, StoreError):  # lost the race on the offsets
            results.append(False)

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(sweep)
    assert sorted(results) == [False, False, False, True]
    assert _offsets(await store.read_events("r1")) == [0, 1, 2, 3]
    await store.create_run(_run("r3", "s1"))  # the session is free again


# --- events ------------------------------------------------------------------------------


@_check
async def check_step_is_one_transaction(store: Store) -> None:
    """`append_step` stores a step's messages and events together, or neither: offsets that
    do not follow, a missing session and an ended run leave both as they were."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"), _entries([0, 1]))
    step: list[Message] = [UserMessage(content="hi"), AssistantMessage(text="hello")]
    await store.append_step("s1", step, "r1", _entries([3, 4]))
    assert await store.load_transcript("s1") == step
    assert _offsets(await store.read_events("r1")) == [0, 1, 3, 4]
    more: list[Message] = [AssistantMessage(text="again")]
    with contextlib.suppress(ValueError, StoreError):
        await store.append_step("s1", more, "r1", _entries([4]))
        raise AssertionError("append_step with an offset already stored: expected an error")
    await _expect(
        SessionNotFoundError,
        store.append_step("nope", more, "r1", _entries([5])),
        "append_step to a missing session",
    )
    assert await store.load_transcript("s1") == step
    assert _offsets(await store.read_events("r1")) == [0, 1, 3, 4]
    await store.append_step("s1", [], "r1", [])  # nothing to store: not an error either
    assert await store.finish_run("r1", "completed", time.time())
    await _expect(
        RunEndedError, store.append_step("s1", more, "r1", _entries([5])), "after the end"
    )
    assert await store.load_transcript("s1") == step


@_check
async def check_events_roundtrip(store: Store) -> None:
    """Every stored event type comes back equal, at its offset, in order."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    entries = [EventEntry(i, event) for i, event in enumerate(_SAMPLE_EVENTS)]
    await store.append_events("r1", entries[:4])
    await store.append_events("r1", [])
    await store.append_events("r1", entries[4:])
    loaded = await store.read_events("r1")
    assert loaded == entries
    assert [type(e.event) for e in loaded] == [type(e.event) for e in entries]
    loaded.clear()  # the caller owns the list it got
    assert len(await store.read_events("r1")) == len(entries)


@_check
async def check_stored_values_are_copies(store: Store) -> None:
    """What a store keeps is a copy: changing the objects that were saved, or the ones read
    back, never changes what is stored (session metadata, messages, event payloads)."""
    metadata: dict[str, Any] = {"tags": ["a"]}
    await store.create_session("s1", "app:agent", metadata)
    metadata["tags"].append("changed later")
    arguments: dict[str, Any] = {"path": "a.txt"}
    await store.append_transcript(
        "s1", [AssistantMessage(tool_calls=(ToolCall(id="c1", name="Read", arguments=arguments),))]
    )
    arguments["path"] = "changed later"
    await store.create_run(_run("r1", "s1"))
    tool_input: dict[str, Any] = {"pattern": "*.py"}
    stored = ToolUse(id="c1", tool="Glob", input=tool_input)
    await store.append_events("r1", [EventEntry(0, stored)])
    tool_input["pattern"] = "changed later"

    for _ in range(2):  # the second pass sees what the first one changed, if it stuck
        session = await store.get_session("s1")
        assert session is not None and session.metadata == {"tags": ["a"]}
        session.metadata["tags"].append("changed by a reader")
        (message,) = await store.load_transcript("s1")
        assert isinstance(message, AssistantMessage)
        assert message.tool_calls[0].arguments == {"path": "a.txt"}
        assert isinstance(message.tool_calls[0].arguments, dict)
        message.tool_calls[0].arguments["path"] = "changed by a reader"
        (entry,) = await store.read_events("r1")
        assert isinstance(entry.event, ToolUse) and entry.event.input == {"pattern": "*.py"}
        entry.event.input["pattern"] = "changed by a reader"


@_check
async def check_events_with_their_wire_form(store: Store) -> None:
    """An entry may carry its event's wire JSON (`EventEntry.wire`, as the runtime's do): it
    reads back the same as one without."""
    from agentkit.events import to_wire

    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    entries = [
        EventEntry(
            i,
            event,
            json.dumps(to_wire(event), ensure_ascii=False).encode() if i % 2 else None,
        )
        for i, event in enumerate(_SAMPLE_EVENTS)
    ]
    await store.append_events("r1", entries)
    loaded = await store.read_events("r1")
    assert loaded == entries
    assert [e.event for e in loaded] == list(_SAMPLE_EVENTS)


@_check
async def check_events_after(store: Store) -> None:
    """`read_events(after=n)` returns exactly the events with offsets above `n`."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    assert await store.read_events("r1") == []
    await store.append_events("r1", _entries(list(range(10))))
    assert _offsets(await store.read_events("r1")) == list(range(10))
    assert _offsets(await store.read_events("r1", -1)) == list(range(10))
    assert _offsets(await store.read_events("r1", after=4)) == [5, 6, 7, 8, 9]
    assert _offsets(await store.read_events("r1", after=8)) == [9]
    assert await store.read_events("r1", after=9) == []
    assert await store.read_events("r1", after=1000) == []
    assert await store.read_events("no-such-run") == []
    await store.append_events("r1", _entries([10, 11]))
    assert await store.read_events("r1", after=9) == _entries([10, 11])


@_check
async def check_events_gaps_preserved(store: Store) -> None:
    """Offsets keep their gaps (where `text_delta` events were never stored)."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    await store.append_events("r1", _entries([0, 5, 6]))
    await store.append_events("r1", _entries([40, 1000]))
    assert _offsets(await store.read_events("r1")) == [0, 5, 6, 40, 1000]
    assert _offsets(await store.read_events("r1", after=3)) == [5, 6, 40, 1000]
    assert _offsets(await store.read_events("r1", after=6)) == [40, 1000]
    assert _offsets(await store.read_events("r1", after=39)) == [40, 1000]


@_check
async def check_events_offsets_must_grow(store: Store) -> None:
    """A batch whose offsets do not grow past the log is rejected whole with `ValueError`."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    await _expect(ValueError, store.append_events("r1", _entries([-1])), "negative offset")
    await store.append_events("r1", _entries([0, 1, 2]))
    bad_batches = {
        "repeats the last offset": [2],
        "goes back": [1],
        "starts well but goes back": [3, 5, 4],
        "starts well but repeats": [3, 3],
        "overlaps the log": [2, 3],
    }
    for what, offsets in bad_batches.items():
        await _expect(ValueError, store.append_events("r1", _entries(offsets, "bad")), what)
        assert _offsets(await store.read_events("r1")) == [0, 1, 2], f"partial write: {what}"
    await store.append_events("r1", _entries([3, 4]))
    assert await store.read_events("r1") == _entries([0, 1, 2, 3, 4])


@_check
async def check_events_isolation(store: Store) -> None:
    """Runs have separate logs: the same offsets in two runs never mix."""
    await store.create_session("s1", "app:agent")
    await store.create_session("s2", "app:agent")
    await store.create_session("s3", "app:agent")
    await store.create_run(_run("r1", "s1"))
    await store.create_run(_run("r2", "s3"))
    await store.create_run(_run("r3", "s2"))
    await store.append_events("r1", _entries([0, 1], "one"))
    await store.append_events("r2", _entries([0, 1, 2], "two"))
    await store.append_events("r3", _entries([1], "three"))
    assert await store.read_events("r1") == _entries([0, 1], "one")
    assert await store.read_events("r2") == _entries([0, 1, 2], "two")
    assert await store.read_events("r3") == _entries([1], "three")
    await store.append_events("r1", _entries([2], "one"))  # r2's offset 2 does not block it
    assert _offsets(await store.read_events("r1")) == [0, 1, 2]


@_check
async def check_events_concurrent_runs(store: Store) -> None:
    """Many runs appending at once each get exactly their own events, in order."""
    runs, batches = 8, 10
    for r in range(runs):
        await store.create_session(f"s{r}", "app:agent")

    async def write(run_id: str) -> None:
        await store.create_run(_run(run_id, f"s{run_id[1:]}"))
        for b in range(batches):
            await store.append_events(run_id, _entries([2 * b, 2 * b + 1], run_id))

    async with anyio.create_task_group() as tg:
        for r in range(runs):
            tg.start_soon(write, f"r{r}")
    for r in range(runs):
        assert await store.read_events(f"r{r}") == _entries(list(range(2 * batches)), f"r{r}")
    assert len(await store.list_runs("s1")) == 1


@_check
async def check_events_read_while_appending(store: Store) -> None:
    """A reader polling while a writer appends sees whole batches, in order, never less
    than before, and finally everything (how a follower tails a run)."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_run("r1", "s1"))
    batches, size = 30, 3
    total = batches * size

    async def write() -> None:
        for b in range(batches):
            await store.append_events("r1", _entries([size * b + k for k in range(size)]))
            await anyio.lowlevel.checkpoint()

    async def read() -> None:
        seen = 0
        while seen < total:
            offsets = _offsets(await store.read_events("r1", after=seen - 1))
            assert offsets == list(range(seen, seen + len(offsets))), "a gap or disorder"
            assert len(offsets) % size == 0, "half a batch was visible"
            seen += len(offsets)
            await anyio.lowlevel.checkpoint()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
    assert _offsets(await store.read_events("r1")) == list(range(total))


@_check
async def check_unicode(store: Store) -> None:
    """Unicode ids, metadata, messages and events (emoji, RTL, NUL, separators) survive."""
    sid, rid = "séssion-日本-🦀", "rün-עברית-🎉"
    await store.create_session(sid, "app:ağent", {"note": _UNICODE})
    await store.create_run(RunRecord(rid, sid, "app:ağent", "running", time.time()))
    messages: list[Message] = [
        UserMessage(content=_UNICODE),
        AssistantMessage(
            thinking=(ThinkingBlock(content=_UNICODE, signature=_UNICODE),),
            text=_UNICODE,
            tool_calls=(ToolCall(id="c", name="t", arguments=_UNICODE),),
        ),
        ToolResultMessage(tool_call_id="c", name="t", content=_UNICODE),
    ]
    await store.append_transcript(sid, messages)
    entries = [
        EventEntry(0, Text(content=_UNICODE)),
        EventEntry(1, ToolUse(id="c", tool="t", input={_UNICODE: _UNICODE})),
    ]
    await store.append_events(rid, entries)
    record = await store.get_session(sid)
    assert record is not None and record.metadata == {"note": _UNICODE}
    assert record.agent_id == "app:ağent"
    assert await store.load_transcript(sid) == messages
    assert await store.read_events(rid) == entries
    assert [r.id for r in await store.list_runs(sid)] == [rid]
    assert [s.id for s in await store.list_sessions("app:ağent")] == [sid]


@_check
async def check_large_payloads(store: Store) -> None:
    """Megabyte messages and events, and a batch of thousands, round-trip intact."""
    big = "x" * 1_000_000 + _UNICODE + "y" * 1_000_000
    await store.create_session("s1", "app:agent", {"big": big})
    await store.create_run(_run("r1", "s1"))
    message = ToolResultMessage(tool_call_id="c", name="read", content=big)
    await store.append_transcript("s1", [message])
    output = {"rows": [{"i": i, "text": "row " * 20} for i in range(5000)], "blob": big}
    entries = [
        EventEntry(0, ToolResult(tool_use_id="c", tool="read", output=output)),
        *_entries(list(range(1, 3001))),
    ]
    await store.append_events("r1", entries)
    assert await store.load_transcript("s1") == [message]
    assert await store.read_events("r1") == entries
    record = await store.get_session("s1")
    assert record is not None and record.metadata["big"] == big


# --- rooms -------------------------------------------------------------------------------


def _room(room_id: str, created_at: float = 1000.0, **metadata: Any) -> RoomRecord:
    return RoomRecord(room_id, f"room {room_id}", "member:ada", created_at, dict(metadata))


def _new(event_id: str, event_type: str = "chat.message", payload: Any = None) -> NewRoomEvent:
    return NewRoomEvent(event_id, event_type, "member:ada", payload, 1000.5)


def _positions(events: list[RoomEvent]) -> list[int]:
    return [e.position for e in events]


def _delegation(
    delegation_id: str, room_id: str = "r1", status: Any = "pending", **changes: Any
) -> DelegationRecord:
    fields: dict[str, Any] = {
        "agent": "agent:stats",
        "task": {"count": "words"},
        "requested_by": "member:ada",
        "created_at": 1000.0,
        "updated_at": 1000.0,
        **changes,
    }
    return DelegationRecord(delegation_id, room_id, status=status, **fields)


async def _unchanged_room(store: Store, room_id: str, head: int, what: str) -> None:
    assert await store.room_head(room_id) == head, f"{what}: the head moved"
    assert _positions(await store.read_room_events(room_id)) == list(range(1, head + 1)), (
        f"{what}: partial write"
    )


@_check
async def check_room_create_get_list(store: Store) -> None:
    """Rooms come back as created, list oldest first; a taken id raises `RoomExistsError`."""
    assert await store.list_rooms() == []
    assert await store.get_room("r1") is None
    metadata: dict[str, Any] = {"topic": "lab", "tags": ["a"], "n": 1, "note": _UNICODE}
    first = RoomRecord("r1", "Lab ✓", "member:ada", 1000.0, metadata)
    await store.create_room(first)
    metadata["tags"].append("changed after create")
    assert await store.get_room("r1") == RoomRecord(
        "r1",
        "Lab ✓",
        "member:ada",
        1000.0,
        {"topic": "lab", "tags": ["a"], "n": 1, "note": _UNICODE},
    )
    bare = RoomRecord("r0-sorts-first", "bare", "member:bob", 999.0)
    await store.create_room(bare)
    await store.create_room(_room("rüm-日本-🦀"))
    assert await store.get_room("r0-sorts-first") == bare
    assert [r.id for r in await store.list_rooms()] == ["r1", "r0-sorts-first", "rüm-日本-🦀"]
    try:
        await store.create_room(RoomRecord("r1", "other", "member:bob", 2000.0))
    except RoomExistsError as exc:
        assert isinstance(exc, StoreError)
    else:
        raise AssertionError("duplicate room id: expected RoomExistsError")
    assert (await store.get_room("r1")) == (await store.list_rooms())[0]
    assert (await store.get_room("r1")).name == "Lab ✓"  # type: ignore[union-attr]
    assert await store.room_head("r1") == 0
    assert await store.read_room_events("r1") == []


@_check
async def check_room_update(store: Store) -> None:
    """`update_room` replaces the name and/or the metadata and leaves the rest; a missing
    room raises `RoomNotFoundError` (a `LookupError`)."""
    await store.create_room(_room("r1", a=1))
    renamed = await store.update_room("r1", name="renamed")
    assert renamed == RoomRecord("r1", "renamed", "member:ada", 1000.0, {"a": 1})
    remeta = await store.update_room("r1", metadata={"b": [1, {"c": None}]})
    assert remeta == RoomRecord("r1", "renamed", "member:ada", 1000.0, {"b": [1, {"c": None}]})
    both = await store.update_room("r1", name="both", metadata={})
    assert both == RoomRecord("r1", "both", "member:ada", 1000.0, {})
    assert await store.update_room("r1") == both
    assert await store.get_room("r1") == both
    try:
        await store.update_room("missing", name="x")
    except RoomNotFoundError as exc:
        assert isinstance(exc, StoreError) and isinstance(exc, LookupError)
    else:
        raise AssertionError("update of a missing room: expected RoomNotFoundError")
    assert await store.get_room("missing") is None


@_check
async def check_room_events_append_and_read(store: Store) -> None:
    """Events get positions 1, 2, 3, ... and read back equal to what the append returned,
    after a position and up to a limit; JSON payloads of every kind round-trip as copies."""
    await store.create_room(_room("r1"))
    payloads: list[Any] = [
        {"text": _UNICODE, "nested": {"list": [1, 2.5, True, None]}},
        ["a", 1],
        "plain",
        42,
        0.1,
        False,
        None,
        {"": 2**53, "ключ": -7},
    ]
    first = await store.append_room_events(
        "r1", [_new(f"e{i}", "chat.message", p) for i, p in enumerate(payloads[:3])]
    )
    assert first == [
        RoomEvent("r1", i + 1, f"e{i}", "chat.message", "member:ada", p, 1000.5)
        for i, p in enumerate(payloads[:3])
    ]
    (single,) = await store.append_room_events("r1", [_new("e3", "tëst.ünïcode", payloads[3])])
    assert single.position == 4 and single.type == "tëst.ünïcode"
    rest = await store.append_room_events(
        "r1", [_new(f"e{i}", "chat.message", payloads[i]) for i in range(4, len(payloads))]
    )
    assert _positions(rest) == list(range(5, len(payloads) + 1))
    everything = await store.read_room_events("r1")
    assert everything == [*first, single, *rest]
    assert [e.payload for e in everything] == payloads
    assert await store.room_head("r1") == len(payloads)
    assert await store.read_room_events("r1", after=0) == everything
    assert _positions(await store.read_room_events("r1", after=3)) == [4, 5, 6, 7, 8]
    assert _positions(await store.read_room_events("r1", after=3, limit=2)) == [4, 5]
    assert _positions(await store.read_room_events("r1", limit=1)) == [1]
    assert await store.read_room_events("r1", limit=0) == []
    assert await store.read_room_events("r1", after=8) == []
    assert await store.read_room_events("r1", after=1000) == []
    await _expect(ValueError, store.read_room_events("r1", limit=-1), "a negative limit")
    # The caller owns what it got: changing it changes nothing stored.
    everything[0].payload["nested"]["list"].append("changed by a reader")
    first[0].payload["text"] = "changed by the writer"
    assert (await store.read_room_events("r1", limit=1))[0].payload == payloads[0]
    # Missing rooms, and empty batches.
    await _expect(RoomNotFoundError, store.read_room_events("nope"), "read a missing room")
    await _expect(RoomNotFoundError, store.room_head("nope"), "head of a missing room")
    await _expect(
        RoomNotFoundError, store.append_room_events("nope", [_new("x")]), "append to a missing room"
    )
    await _expect(ValueError, store.append_room_events("r1", []), "an empty batch")
    assert await store.room_head("r1") == len(payloads)


@_check
async def check_room_events_by_type(store: Store) -> None:
    """`types` keeps exact names and `x.*` prefixes (`*` keeps all, `[]` none): `%` and `_`
    are ordinary characters, case matters, and `limit` counts the events kept."""
    await store.create_room(_room("r1"))
    types = [
        "chat.message",  # 1
        "chat",  # 2
        "chatter.message",  # 3
        "chat.message.edited",  # 4
        "abc.x",  # 5
        "a_c.x",  # 6
        "a%c.x",  # 7
        "Chat.message",  # 8
        "measurements.word_count",  # 9
        "measurements.wordXcount",  # 10
        "chat.message",  # 11
        "a\\c.x",  # 12
    ]
    await store.append_room_events("r1", [_new(f"e{i}", t) for i, t in enumerate(types)])

    async def read(*patterns: str, after: int = 0, limit: int | None = None) -> list[int]:
        return _positions(
            await store.read_room_events("r1", after=after, limit=limit, types=list(patterns))
        )

    assert await read("chat.message") == [1, 11]
    assert await read("chat.*") == [1, 4, 11]
    assert await read("chat") == [2]
    assert await read("Chat.*") == [8]
    assert await read("*") == list(range(1, 13))
    assert await read("chat.*", "*") == list(range(1, 13))
    assert await read() == []
    assert await read("nothing.*", "no.such") == []
    assert await read("a_c.x") == [6]
    assert await read("a_c.*") == [6]
    assert await read("a%c.*") == [7]
    assert await read("a%c.x") == [7]
    assert await read("a\\c.*") == [12]
    assert await read("measurements.word_count") == [9]
    assert await read("measurements.*", "chat") == [2, 9, 10]
    assert await read("chat.message", "chat.*") == [1, 4, 11]
    assert await read("chat.*", after=1) == [4, 11]
    assert await read("chat.*", after=1, limit=1) == [4]
    assert await read("chat.*", "a_c.x", limit=3) == [1, 4, 6]
    events = await store.read_room_events("r1", types=("measurements.*",))
    assert [e.type for e in events] == ["measurements.word_count", "measurements.wordXcount"]
    await _expect(ValueError, store.read_room_events("r1", types=["*.message"]), "'*.message'")
    await _expect(ValueError, store.read_room_events("r1", types=["chat*"]), "'chat*'")
    await _expect(RoomNotFoundError, store.read_room_events("nope", types=[]), "missing room")


@_check
async def check_room_append_is_all_or_nothing(store: Store) -> None:
    """A batch with one bad event (a payload JSON cannot hold, an id already in the room or
    repeated in the batch) writes nothing and leaves the head; the next append continues at
    head + 1."""
    await store.create_room(_room("r1"))
    await store.append_room_events("r1", [_new("e1"), _new("e2")])
    bad_batches: dict[str, tuple[type[BaseException], list[NewRoomEvent]]] = {
        "a set payload": (TypeError, [_new("ok1"), _new("bad", payload={1, 2})]),
        "an object payload": (TypeError, [_new("ok1", payload={"o": object()})]),
        "a NaN payload": (ValueError, [_new("ok1", payload=float("nan"))]),
        "an id already stored": (StoreError, [_new("ok1"), _new("e2")]),
        "an id twice in the batch": (StoreError, [_new("ok1"), _new("ok2"), _new("ok1")]),
    }
    for what, (error, batch) in bad_batches.items():
        await _expect(error, store.append_room_events("r1", batch), what)
        await _unchanged_room(store, "r1", 2, what)
    bad_delegation = _delegation("d1", task={"s": {1}})
    await _expect(
        TypeError,
        store.append_room_events("r1", [_new("ok1")], delegation=bad_delegation),
        "a delegation whose task is not JSON",
    )
    await _expect(
        StoreError,
        store.append_room_events("r1", [_new("e1")], delegation=_delegation("d1")),
        "a delegation with an event already stored",
    )
    await _unchanged_room(store, "r1", 2, "a bad delegation")
    assert await store.get_delegation("r1", "d1") is None
    assert await store.list_delegations("r1") == []
    (after,) = await store.append_room_events("r1", [_new("ok1")])
    assert after.position == 3
    assert [e.id for e in await store.read_room_events("r1")] == ["e1", "e2", "ok1"]


@_check
async def check_room_concurrent_appenders(store: Store) -> None:
    """Many writers appending batches at once get one total order: positions 1..N with no
    gap or duplicate, each batch contiguous, each writer's batches in its own order."""
    await store.create_room(_room("r1"))
    writers, appends = 8, 25
    returned: dict[int, list[list[int]]] = {w: [] for w in range(writers)}

    async def write(w: int) -> None:
        for a in range(appends):
            size = 1 + (w + a) % 3
            batch = [_new(f"w{w}-a{a}-{k}", f"test.w{w}", {"w": w, "a": a}) for k in range(size)]
            events = await store.append_room_events("r1", batch)
            returned[w].append(_positions(events))
            await anyio.lowlevel.checkpoint()

    with anyio.fail_after(120):
        async with anyio.create_task_group() as tg:
            for w in range(writers):
                tg.start_soon(write, w)
    total = sum(1 + (w + a) % 3 for w in range(writers) for a in range(appends))
    stored = await store.read_room_events("r1")
    assert _positions(stored) == list(range(1, total + 1))
    assert await store.room_head("r1") == total
    by_position = {e.position: e for e in stored}
    for w, batches in returned.items():
        flat = [p for batch in batches for p in batch]
        assert flat == sorted(flat), f"writer {w}'s batches out of order"
        for a, batch in enumerate(batches):
            assert batch == list(range(batch[0], batch[0] + len(batch))), "a batch was split"
            ids = [by_position[p].id for p in batch]
            assert ids == [f"w{w}-a{a}-{k}" for k in range(len(batch))]


@_check
async def check_room_read_while_appending(store: Store) -> None:
    """A reader polling while a writer appends sees a prefix of the log made of whole
    batches, never less than before, and finally everything (how a subscriber follows)."""
    await store.create_room(_room("r1"))
    batches, size = 30, 3
    total = batches * size

    async def write() -> None:
        for b in range(batches):
            await store.append_room_events("r1", [_new(f"b{b}-{k}") for k in range(size)])
            await anyio.lowlevel.checkpoint()

    async def read() -> None:
        seen = 0
        while seen < total:
            positions = _positions(await store.read_room_events("r1", after=seen))
            assert positions == list(range(seen + 1, seen + 1 + len(positions))), "a gap"
            assert len(positions) % size == 0, "half a batch was visible"
            seen += len(positions)
            await anyio.lowlevel.checkpoint()

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
    assert await store.room_head("r1") == total


@_check
async def check_room_grants(store: Store) -> None:
    """Grants are upserted per participant, listed by participant, deleted quietly; setting
    one in a missing room raises `RoomNotFoundError`."""
    await store.create_room(_room("r1"))
    await store.create_room(_room("r2"))
    assert await store.list_grants("r1") == []
    await store.set_grant("r1", RoomGrant("member:ada", ("*",), ("*",)))
    await store.set_grant("r1", RoomGrant("agent:stats", ("chat.message",), ()))
    await store.set_grant("r1", RoomGrant("Member:Zed", (), ("chat.*", "a_b.%")))
    await store.set_grant("r1", RoomGrant("member:ädа", ("chat.*",), ("chat.*",)))
    await store.set_grant("r2", RoomGrant("member:ada", ("other.*",), ()))
    assert await store.list_grants("r1") == [
        RoomGrant("Member:Zed", (), ("chat.*", "a_b.%")),
        RoomGrant("agent:stats", ("chat.message",), ()),
        RoomGrant("member:ada", ("*",), ("*",)),
        RoomGrant("member:ädа", ("chat.*",), ("chat.*",)),
    ]
    upsert = RoomGrant("agent:stats", ("chat.message",), ("measurements.word_count",))
    await store.set_grant("r1", upsert)
    assert (await store.list_grants("r1"))[1] == upsert
    assert len(await store.list_grants("r1")) == 4
    await store.delete_grant("r1", "member:ada")
    await store.delete_grant("r1", "member:ada")  # again: not an error
    await store.delete_grant("r1", "never")
    await store.delete_grant("nope", "never")
    assert [g.participant for g in await store.list_grants("r1")] == [
        "Member:Zed",
        "agent:stats",
        "member:ädа",
    ]
    assert await store.list_grants("r2") == [RoomGrant("member:ada", ("other.*",), ())]
    assert await store.list_grants("nope") == []
    await _expect(
        RoomNotFoundError, store.set_grant("nope", RoomGrant("x", ("*",), ())), "missing room"
    )
    assert await store.list_grants("nope") == []
    bare = RoomGrant("member:bob", "chat.*", ())  # type: ignore[arg-type]
    await _expect(TypeError, store.set_grant("r1", bare), "patterns as a bare string")
    assert "member:bob" not in [g.participant for g in await store.list_grants("r1")]


@_check
async def check_room_cursors(store: Store) -> None:
    """A consumer's cursor per room: `None` until set, then replaced by each `set_cursor`
    (it may move back); setting one in a missing room raises `RoomNotFoundError`."""
    await store.create_room(_room("r1"))
    await store.create_room(_room("r2"))
    assert await store.get_cursor("r1", "agent:stats") is None
    await store.set_cursor("r1", "agent:stats", 3)
    await store.set_cursor("r1", "agent:echo", 1)
    await store.set_cursor("r2", "agent:stats", 10)
    assert await store.get_cursor("r1", "agent:stats") == 3
    await store.set_cursor("r1", "agent:stats", 7)
    assert await store.get_cursor("r1", "agent:stats") == 7
    await store.set_cursor("r1", "agent:stats", 5)
    assert await store.get_cursor("r1", "agent:stats") == 5
    assert await store.get_cursor("r1", "agent:echo") == 1
    assert await store.get_cursor("r2", "agent:stats") == 10
    assert await store.get_cursor("nope", "agent:stats") is None
    await _expect(RoomNotFoundError, store.set_cursor("nope", "agent:stats", 1), "missing room")
    assert await store.get_cursor("nope", "agent:stats") is None


@_check
async def check_room_delegations_with_events(store: Store) -> None:
    """A delegation is upserted in the transaction of its events: read back as written,
    replaced by later writes (keeping its place in the oldest-first list), and written
    nowhere but its own room."""
    await store.create_room(_room("r1"))
    await store.create_room(_room("r2"))
    assert await store.list_delegations("r1") == []
    requested = _delegation("d1")
    (event,) = await store.append_room_events(
        "r1", [_new("req-1", "delegation.requested", {"id": "d1"})], delegation=requested
    )
    assert event.position == 1
    assert await store.get_delegation("r1", "d1") == requested
    second = _delegation("d2", task=["x", 1], created_at=1001.0, updated_at=1001.0)
    await store.append_room_events("r1", [_new("req-2", "delegation.requested")], delegation=second)
    running = _delegation("d1", status="running", updated_at=1002.0)
    await store.append_room_events("r1", [_new("run-1", "delegation.running")], delegation=running)
    done = _delegation(
        "d1",
        status="completed",
        updated_at=1003.0,
        result={"words": 3, "text": _UNICODE},
    )
    await store.append_room_events(
        "r1",
        [_new("done-1", "delegation.completed"), _new("done-1b", "chat.message")],
        delegation=done,
    )
    failed = _delegation("d2", status="failed", updated_at=1004.0, error="it broke")
    await store.append_room_events("r1", [_new("fail-2", "delegation.failed")], delegation=failed)
    assert await store.get_delegation("r1", "d1") == done
    assert await store.get_delegation("r1", "d2") == DelegationRecord(
        "d2",
        "r1",
        "agent:stats",
        {"count": "words"},
        "failed",
        "member:ada",
        1000.0,
        1004.0,
        None,
        "it broke",
    )
    assert await store.list_delegations("r1") == [done, await store.get_delegation("r1", "d2")]
    assert await store.room_head("r1") == 6
    # Delegations live in their room.
    assert await store.get_delegation("r2", "d1") is None
    assert await store.list_delegations("r2") == []
    await _expect(
        ValueError,
        store.append_room_events("r2", [_new("x")], delegation=_delegation("d9", room_id="r1")),
        "a delegation of another room",
    )
    await _expect(
        ValueError,
        store.append_room_events("r1", [_new("x")], delegation=_delegation("d9", status="lost")),
        "an unknown status",
    )
    await _expect(
        RoomNotFoundError,
        store.append_room_events("nope", [_new("x")], delegation=_delegation("d9", "nope")),
        "a delegation in a missing room",
    )
    await _unchanged_room(store, "r2", 0, "refused delegations")
    await _unchanged_room(store, "r1", 6, "refused delegations")
    assert await store.get_delegation("r1", "d9") is None
    assert await store.get_delegation("nope", "d9") is None
    # The same delegation id in another room is another delegation.
    other = _delegation("d1", room_id="r2", task="elsewhere")
    await store.append_room_events("r2", [_new("req-1")], delegation=other)
    assert await store.get_delegation("r2", "d1") == other
    assert await store.get_delegation("r1", "d1") == done


@_check
async def check_room_delete_removes_everything(store: Store) -> None:
    """Deleting a room removes its events, grants, cursors and delegations, and nothing of
    another room; a room created again with the id starts empty at position 1."""
    for room_id in ("gone", "kept"):
        await store.create_room(_room(room_id))
        await store.append_room_events(
            room_id, [_new("e1"), _new("e2")], delegation=_delegation("d1", room_id)
        )
        await store.set_grant(room_id, RoomGrant("member:ada", ("*",), ("*",)))
        await store.set_cursor(room_id, "agent:stats", 2)
    await store.delete_room("gone")
    assert await store.get_room("gone") is None
    assert [r.id for r in await store.list_rooms()] == ["kept"]
    await _expect(RoomNotFoundError, store.read_room_events("gone"), "read a deleted room")
    await _expect(RoomNotFoundError, store.room_head("gone"), "head of a deleted room")
    assert await store.list_grants("gone") == []
    assert await store.get_cursor("gone", "agent:stats") is None
    assert await store.get_delegation("gone", "d1") is None
    assert await store.list_delegations("gone") == []
    await store.delete_room("gone")  # again, and a room that never was: not errors
    await store.delete_room("never-existed")
    await store.create_room(_room("gone"))
    assert await store.room_head("gone") == 0
    assert await store.read_room_events("gone") == []
    (again,) = await store.append_room_events("gone", [_new("e1")])
    assert again.position == 1
    assert await store.list_grants("gone") == []
    assert await store.get_cursor("gone", "agent:stats") is None
    assert await store.list_delegations("gone") == []
    # The other room is untouched.
    assert [e.id for e in await store.read_room_events("kept")] == ["e1", "e2"]
    assert await store.list_grants("kept") == [RoomGrant("member:ada", ("*",), ("*",))]
    assert await store.get_cursor("kept", "agent:stats") == 2
    assert await store.get_delegation("kept", "d1") == _delegation("d1", "kept")


@_check
async def check_room_isolation(store: Store) -> None:
    """Each room has its own positions, event ids and head."""
    await store.create_room(_room("a"))
    await store.create_room(_room("b"))
    await store.append_room_events("a", [_new("e1"), _new("e2")])
    (first_b,) = await store.append_room_events("b", [_new("e1")])  # the same id: another room
    assert first_b.position == 1 and first_b.room_id == "b"
    await store.append_room_events("a", [_new("e3")])
    assert await store.room_head("a") == 3 and await store.room_head("b") == 1
    assert [(e.room_id, e.position, e.id) for e in await store.read_room_events("a")] == [
        ("a", 1, "e1"),
        ("a", 2, "e2"),
        ("a", 3, "e3"),
    ]
    assert await store.read_room_events("b") == [first_b]
    assert await store.get_session("a") is None  # rooms and sessions do not mix
    assert await store.list_sessions() == []


# --- records: members, agents, conversations ----------------------------------------------


def _member(
    member_id: str,
    name: str,
    created_at: float = 1000.0,
    role: Literal["owner", "editor", "viewer"] = "editor",
) -> MemberRecord:
    return MemberRecord(member_id, name, role, f"hash-{member_id}", created_at)


def _agent(agent_id: str, name: str, created_at: float = 1000.0) -> AgentRecord:
    return AgentRecord(agent_id, name, 1, "machine", created_at, created_at, {"name": name})


def _conversation(
    conversation_id: str,
    creator_id: str,
    visibility: Literal["private", "shared"] = "private",
    created_at: float = 1000.0,
    agent_id: str = "a1",
) -> ConversationRecord:
    return ConversationRecord(
        conversation_id,
        agent_id,
        creator_id,
        visibility,
        f"talk {conversation_id}",
        created_at,
        created_at,
    )


def _ids(records: list[Any]) -> list[str]:
    return [record.id for record in records]


def _last_key(records: list[Any]) -> PageKey:
    return (records[-1].created_at, records[-1].id)


@_check
async def check_member_records(store: Store) -> None:
    """A member is found by id, by live name and by token hash; ids, live names and token
    hashes are unique, and a refused member changes nothing."""
    ada = MemberRecord("m1", "ada", "owner", "h-ada", 1000.0)
    await store.create_member(ada)
    assert await store.get_member("m1") == ada
    assert await store.find_member("ada") == ada
    assert await store.member_by_token("h-ada") == ada
    assert await store.get_member("missing") is None
    assert await store.find_member("missing") is None
    assert await store.member_by_token("h-missing") is None
    for clash, what in (
        (MemberRecord("m2", "ada", "viewer", "h-2", 1001.0), "a live member's name"),
        (MemberRecord("m1", "bob", "viewer", "h-3", 1001.0), "a member's id"),
        (MemberRecord("m3", "bob", "viewer", "h-ada", 1001.0), "a member's token hash"),
    ):
        await _expect(RecordExistsError, store.create_member(clash), what)
    assert await store.find_member("bob") is None
    assert await store.get_member("m2") is None and await store.get_member("m3") is None
    assert await store.list_members() == [ada]


@_check
async def check_member_update(store: Store) -> None:
    """A live member's role and token hash change; the old token stops working; another
    member's hash is refused; a missing or removed member is `RecordNotFoundError`."""
    await store.create_member(_member("m1", "ada"))
    await store.create_member(_member("m2", "bob"))
    promoted = await store.update_member("m1", role="owner")
    assert promoted == _member("m1", "ada", role="owner")
    rotated = await store.update_member("m1", token_hash="h-new")
    assert rotated.role == "owner" and rotated.token_hash == "h-new"
    assert await store.member_by_token("hash-m1") is None
    assert await store.member_by_token("h-new") == rotated
    assert await store.update_member("m1") == rotated  # nothing to change
    assert await store.update_member("m1", token_hash="h-new") == rotated  # its own hash
    await _expect(
        RecordExistsError, store.update_member("m1", token_hash="hash-m2"), "another's hash"
    )
    assert await store.get_member("m1") == rotated
    await _expect(RecordNotFoundError, store.update_member("missing", role="viewer"), "missing")
    await store.remove_member("m2", 2000.0)
    await _expect(RecordNotFoundError, store.update_member("m2", role="owner"), "removed")


@_check
async def check_member_removal_keeps_the_id(store: Store) -> None:
    """A removed member keeps its row (found by id, with `removed_at`) but is found by
    neither name nor token; its name taken again names a new member with a new id; its
    token hash stays taken."""
    await store.create_member(_member("m1", "ada", 1000.0))
    await store.remove_member("m1", 1500.0)
    removed = await store.get_member("m1")
    assert removed is not None and removed.removed_at == 1500.0 and removed.name == "ada"
    assert await store.find_member("ada") is None
    assert await store.member_by_token("hash-m1") is None
    assert await store.list_members() == []
    await _expect(RecordNotFoundError, store.remove_member("m1", 1600.0), "removed twice")
    await _expect(RecordNotFoundError, store.remove_member("missing", 1600.0), "missing")
    newcomer = MemberRecord("m2", "ada", "viewer", "h-newcomer", 2000.0)
    await store.create_member(newcomer)
    assert await store.find_member("ada") == newcomer
    assert await store.member_by_token("h-newcomer") == newcomer
    assert (await store.get_member("m1")) == removed  # untouched by the newcomer
    await _expect(
        RecordExistsError,
        store.create_member(MemberRecord("m3", "cy", "viewer", "hash-m1", 2100.0)),
        "a removed member's token hash",
    )
    await _expect(
        RecordExistsError, store.create_member(_member("m1", "cy", 2100.0)), "a removed id"
    )
    await store.remove_member("m2", 2500.0)
    third = MemberRecord("m4", "ada", "owner", "h-third", 3000.0)
    await store.create_member(third)  # a name can come and go any number of times
    assert await store.list_members() == [third]


@_check
async def check_agent_records(store: Store) -> None:
    """An agent is found by id and by live name; replacing it keeps its id and creation
    time and adds one to its version; a deleted agent keeps its row and its name is free."""
    first = AgentRecord("a1", "helper", 1, "machine", 1000.0, 1000.0, {"instructions": "hi"})
    await store.create_agent(first)
    assert await store.get_agent("a1") == first
    assert await store.find_agent("helper") == first
    assert await store.get_agent("missing") is None and await store.find_agent("x") is None
    await _expect(RecordExistsError, store.create_agent(_agent("a2", "helper")), "live name")
    await _expect(RecordExistsError, store.create_agent(_agent("a1", "other")), "taken id")
    definition: dict[str, Any] = {"instructions": "hello", "tools": ["add"], "n": 1.5}
    replaced = await store.replace_agent("a1", definition, 1100.0)
    definition["tools"].append("changed after replace")
    stored = AgentRecord(
        "a1",
        "helper",
        2,
        "machine",
        1000.0,
        1100.0,
        {"instructions": "hello", "tools": ["add"], "n": 1.5},
    )
    assert replaced == stored
    got = await store.get_agent("a1")
    assert got is not None
    got.definition["tools"].append("changed after get")  # a copy: the store keeps its own
    assert await store.get_agent("a1") == stored
    again = await store.replace_agent("a1", {}, 1200.0)
    assert again.version == 3 and again.definition == {} and again.id == "a1"
    assert await store.find_agent("helper") == again
    await _expect(RecordNotFoundError, store.replace_agent("missing", {}, 1.0), "missing")
    await store.delete_agent("a1", 1300.0)
    deleted = await store.get_agent("a1")
    assert deleted is not None and deleted.deleted_at == 1300.0 and deleted.version == 3
    assert await store.find_agent("helper") is None
    await _expect(RecordNotFoundError, store.replace_agent("a1", {}, 1400.0), "deleted")
    await _expect(RecordNotFoundError, store.delete_agent("a1", 1400.0), "deleted twice")
    await _expect(RecordNotFoundError, store.delete_agent("missing", 1400.0), "missing")
    successor = _agent("a2", "helper", 1500.0)
    await store.create_agent(successor)
    assert await store.find_agent("helper") == successor
    assert await store.get_agent("a1") == deleted
    builtin = AgentRecord("a3", "rool", 1, "builtin", 900.0, 900.0)
    await store.create_agent(builtin)
    assert await store.list_agents() == [builtin, successor]


@_check
async def check_conversation_records(store: Store) -> None:
    """A conversation is created with its session in one step; its id is taken by any
    session; it is renamed and its visibility changed; deleting the session deletes it."""
    record = ConversationRecord(
        "c1", "a1", "m1", "private", "Plans", 1000.0, 1000.0, instructions="Be brief."
    )
    metadata: dict[str, Any] = {"agentkit.conversation": {"runs": []}}
    session = await store.create_conversation(record, "helper", metadata)
    metadata["changed"] = True
    assert session.id == "c1" and session.agent_id == "helper"
    assert session.metadata == {"agentkit.conversation": {"runs": []}}
    assert await store.get_session("c1") == session
    assert await store.get_conversation("c1") == record
    assert await store.get_conversation("missing") is None
    await _expect(
        SessionExistsError,
        store.create_conversation(_conversation("c1", "m2"), "other"),
        "a conversation's id",
    )
    await store.create_session("plain", "app:agent")
    await _expect(
        SessionExistsError,
        store.create_conversation(_conversation("plain", "m1"), "helper"),
        "a plain session's id",
    )
    assert await store.get_conversation("plain") is None
    assert await store.get_conversation("c1") == record
    assert await store.get_session("c1") == session
    renamed = await store.update_conversation("c1", updated_at=1100.0, name="Plans v2")
    assert renamed == ConversationRecord(
        "c1", "a1", "m1", "private", "Plans v2", 1000.0, 1100.0, instructions="Be brief."
    )
    shared = await store.update_conversation("c1", updated_at=1200.0, visibility="shared")
    assert shared.visibility == "shared" and shared.name == "Plans v2"
    assert shared.updated_at == 1200.0
    assert await store.get_conversation("c1") == shared
    await _expect(
        RecordNotFoundError,
        store.update_conversation("missing", updated_at=1.0, name="x"),
        "a missing conversation",
    )
    await store.append_transcript("c1", [UserMessage(content="hi")])
    await store.delete_session("c1")
    assert await store.get_conversation("c1") is None
    assert await store.list_conversations("m1") == []
    await _expect(
        RecordNotFoundError,
        store.update_conversation("c1", updated_at=1300.0, name="x"),
        "a deleted conversation",
    )
    # The id is free again, with nothing of the old conversation.
    await store.create_conversation(_conversation("c1", "m2"), "helper")
    assert await store.get_conversation("c1") == _conversation("c1", "m2")
    assert await store.load_transcript("c1") == []


@_check
async def check_conversation_visibility(store: Store) -> None:
    """A viewer lists the shared conversations and its own private ones, newest first."""
    await store.create_conversation(_conversation("mine", "m1", "private", 1000.0), "x")
    await store.create_conversation(_conversation("theirs", "m2", "private", 1001.0), "x")
    await store.create_conversation(_conversation("shared1", "m2", "shared", 1002.0), "x")
    await store.create_conversation(_conversation("shared2", "m1", "shared", 1003.0), "x")
    assert _ids(await store.list_conversations("m1")) == ["shared2", "shared1", "mine"]
    assert _ids(await store.list_conversations("m2")) == ["shared2", "shared1", "theirs"]
    assert _ids(await store.list_conversations("m3")) == ["shared2", "shared1"]
    await store.update_conversation("theirs", updated_at=1100.0, visibility="shared")
    await store.update_conversation("shared2", updated_at=1100.0, visibility="private")
    assert _ids(await store.list_conversations("m3")) == ["shared1", "theirs"]
    assert _ids(await store.list_conversations("m1")) == ["shared2", "shared1", "theirs", "mine"]
    assert _ids(await store.list_conversations("m1", limit=2)) == ["shared2", "shared1"]
    assert _ids(await store.list_conversations("m2")) == ["shared1", "theirs"]


async def _forkable(store: Store) -> None:
    """Conversation `src`: a transcript of four messages and runs `r1` (completed, two
    events), `r2` (interrupted with an error, one event) and `r3` (running)."""
    await store.create_conversation(_conversation("src", "m1", "shared"), "helper", {"k": 1})
    await store.append_transcript("src", list(_SAMPLE_MESSAGES[:1]) * 4)
    await store.create_run(_run("r1", "src", 1001.0), _entries([0, 2]))
    await store.finish_run("r1", "completed", 1002.0)
    await store.create_run(_run("r2", "src", 1003.0), _entries([0]))
    await store.finish_run("r2", "interrupted", 1004.0, error="stopped")
    await store.create_run(_run("r3", "src", 1005.0), _entries([0]))


@_check
async def check_fork_conversation(store: Store) -> None:
    """A fork is a new conversation holding the source's first transcript messages and
    copies of its ended runs (fields and events) under new ids; the source is unchanged."""
    await _forkable(store)
    before = (
        await store.load_transcript("src"),
        await store.list_runs("src"),
        await store.read_events("r1"),
    )
    fork = _conversation("f1", "m2")
    metadata = {"agentkit.conversation": {"runs": [{"id": "n1", "t": 0}]}}
    session = await store.fork_conversation(
        "src", fork, "helper", metadata, [("r1", "n1"), ("r2", "n2")], 3
    )
    assert session.id == "f1" and session.agent_id == "helper" and session.metadata == metadata
    assert await store.get_session("f1") == session
    assert await store.get_conversation("f1") == fork
    assert await store.load_transcript("f1") == before[0][:3]
    runs = await store.list_runs("f1")
    assert [run.id for run in runs] == ["n1", "n2"]
    assert [(run.session_id, run.status, run.created_at) for run in runs] == [
        ("f1", "completed", 1001.0),
        ("f1", "interrupted", 1003.0),
    ]
    assert runs[0].finished_at == 1002.0 and runs[1].error == "stopped"
    assert await store.get_run("n2") == runs[1]
    assert await store.read_events("n1") == before[2]
    assert _offsets(await store.read_events("n1", after=0)) == [2]
    assert len(await store.read_events("n2")) == 1
    # The source is as it was, and its copy lives on its own.
    assert (
        await store.load_transcript("src"),
        await store.list_runs("src"),
        await store.read_events("r1"),
    ) == before
    await store.append_transcript("f1", [UserMessage(content="only in the fork")])
    assert len(await store.load_transcript("src")) == 4
    # The whole transcript when no length is given; no run at all.
    await store.fork_conversation("src", _conversation("f2", "m1"), "helper", {}, [])
    assert await store.load_transcript("f2") == before[0]
    assert await store.list_runs("f2") == []
    # Deleting the fork leaves the source whole.
    await store.delete_session("f1")
    assert await store.read_events("n1") == []
    assert (await store.load_transcript("src"), await store.list_runs("src")) == before[:2]
    assert await store.read_events("r1") == before[2]


@_check
async def check_fork_conversation_is_all_or_nothing(store: Store) -> None:
    """A fork that cannot be made whole writes nothing: a running or foreign run, a
    transcript too short, a missing source, a taken id."""
    await _forkable(store)
    await store.create_session("other", "app:agent")
    await store.create_run(_run("o1", "other"))
    await store.finish_run("o1", "completed", 1010.0)
    refused: list[tuple[type[BaseException], str, str, list[tuple[str, str]], int | None]] = [
        (StoreError, "src", "f1", [("r1", "n1"), ("r3", "n3")], 2),  # r3 is running
        (StoreError, "src", "f1", [("r1", "n1"), ("o1", "n2")], 2),  # another session's
        (StoreError, "src", "f1", [("r1", "n1"), ("missing", "n2")], 2),
        (StoreError, "src", "f1", [("r1", "n1")], 5),  # four messages only
        (StoreError, "src", "f1", [("r1", "r2")], 2),  # a new id that is taken
        (SessionNotFoundError, "missing", "f1", [], 0),
        (SessionExistsError, "src", "other", [("r1", "n1")], 2),
    ]
    for kind, source, fork_id, runs, length in refused:
        await _expect(
            kind,
            store.fork_conversation(
                source, _conversation(fork_id, "m1"), "helper", {}, runs, length
            ),
            f"a fork of {source} as {fork_id} with {runs} and {length} messages",
        )
        assert await store.get_conversation("f1") is None
        assert await store.get_session("f1") is None
        for run_id in ("n1", "n2", "n3"):
            assert await store.get_run(run_id) is None
            assert await store.read_events(run_id) == []
    assert await store.get_conversation("other") is None
    assert [run.id for run in await store.list_runs("src")] == ["r1", "r2", "r3"]
    assert len(await store.load_transcript("src")) == 4
    # A failed fork leaves its ids free.
    await store.fork_conversation("src", _conversation("f1", "m1"), "helper", {}, [("r1", "n1")])
    assert [run.id for run in await store.list_runs("f1")] == ["n1"]


@_check
async def check_record_page_limits(store: Store) -> None:
    """Every list of records takes a `limit` of 1 to 1001 and a finite page key;
    anything else is `ValueError`."""
    await store.create_member(_member("m1", "ada"))
    lists: list[Callable[..., Awaitable[list[Any]]]] = [
        store.list_members,
        store.list_agents,
        lambda **kw: store.list_conversations("m1", **kw),
        lambda **kw: store.list_readable_runs("m1", others=True, **kw),
    ]
    for read in lists:
        for limit in (0, -1, 1002, 10**9, True, 1.5, "10", None):
            await _expect(ValueError, read(limit=limit), f"limit {limit!r}")
        for after in ((float("nan"), "x"), (float("inf"), "x"), (1.0, 2), ("1", "x")):
            await _expect(ValueError, read(after=after), f"page key {after!r}")
        assert isinstance(await read(limit=1001), list)
        assert isinstance(await read(limit=1, after=(0, "")), list)
    assert len(await store.list_members(limit=1)) == 1


@_check
async def check_record_pages(store: Store) -> None:
    """Pages follow `(created_at, id)`, ties broken by id: oldest first for members and
    agents, newest first for conversations; each page starts after the last one's key."""
    for i in range(7):
        created = 1000.0 + i // 3  # three records share each time
        await store.create_member(_member(f"m{i}", f"name{i}", created))
        await store.create_agent(_agent(f"a{i}", f"agent{i}", created))
        await store.create_conversation(_conversation(f"c{i}", "m0", "shared", created), "x")
    await store.remove_member("m3", 2000.0)
    await store.delete_agent("a4", 2000.0)
    expected_members = ["m0", "m1", "m2", "m4", "m5", "m6"]
    expected_agents = ["a0", "a1", "a2", "a3", "a5", "a6"]
    expected_conversations = ["c6", "c5", "c4", "c3", "c2", "c1", "c0"]
    for limit in (1, 2, 4, 1001):
        members: list[MemberRecord] = []
        agents: list[AgentRecord] = []
        conversations: list[ConversationRecord] = []
        after: PageKey | None = None
        while page := await store.list_members(after, limit):
            assert len(page) <= limit
            members += page
            after = _last_key(page)
        after = None
        while agent_page := await store.list_agents(after, limit):
            agents += agent_page
            after = _last_key(agent_page)
        after = None
        while conversation_page := await store.list_conversations("m9", after, limit):
            conversations += conversation_page
            after = _last_key(conversation_page)
        assert _ids(members) == expected_members, limit
        assert _ids(agents) == expected_agents, limit
        assert _ids(conversations) == expected_conversations, limit


@_check
async def check_record_pages_under_concurrent_inserts(store: Store) -> None:
    """Inserts between two pages move no record across the boundary: reading newest
    first, the newer conversations never show up on later pages and none repeats or is
    skipped; reading oldest first, the newer members come at the end, after every old one."""
    clock = 1000.0
    for i in range(20):
        clock += 1.0
        await store.create_conversation(_conversation(f"old{i:02}", "m1", "shared", clock), "x")
        await store.create_member(_member(f"old{i:02}", f"old{i:02}", clock))
    seen: list[str] = []
    after: PageKey | None = None
    inserted = 0
    while page := await store.list_conversations("m1", after, 3):
        seen += _ids(page)
        after = _last_key(page)
        for _ in range(2):  # newer ones arrive while the pages are read
            inserted += 1
            new = _conversation(f"new{inserted:02}", "m1", "shared", clock + inserted)
            await store.create_conversation(new, "x")
    assert seen == [f"old{i:02}" for i in reversed(range(20))]
    members: list[str] = []
    after = None
    while member_page := await store.list_members(after, 3):
        members += _ids(member_page)
        after = _last_key(member_page)
        if inserted < 30:
            inserted += 1
            await store.create_member(
                _member(f"new{inserted:02}", f"new{inserted:02}", clock + inserted)
            )
    old = [f"old{i:02}" for i in range(20)]
    assert members[:20] == old
    assert len(members) == len(set(members))
    assert all(name.startswith("new") for name in members[20:])


@_check
async def check_readable_runs(store: Store) -> None:
    """A viewer reads the runs of shared conversations and of its own, newest first;
    with `others`, also those of sessions that are no conversation; `session_id` keeps
    one session's."""
    await store.create_conversation(_conversation("shared", "m2", "shared"), "x")
    await store.create_conversation(_conversation("mine", "m1", "private"), "x")
    await store.create_conversation(_conversation("theirs", "m2", "private"), "x")
    await store.create_session("plain", "app:agent")
    runs: list[RunRecord] = []
    for i, session_id in enumerate(["shared", "mine", "theirs", "plain"] * 2):
        run = RunRecord(f"r{i}", session_id, "x", "completed", 1000.0 + i, 1000.5 + i)
        await store.create_run(run)
        runs.append(run)
    newest = list(reversed(runs))
    readable = [r for r in newest if r.session_id in ("shared", "mine")]
    with_others = [r for r in newest if r.session_id != "theirs"]
    assert await store.list_readable_runs("m1", others=False) == readable
    assert await store.list_readable_runs("m1", others=True) == with_others
    assert await store.list_readable_runs("m2", others=False) == [
        r for r in newest if r.session_id in ("shared", "theirs")
    ]
    assert await store.list_readable_runs("m1", others=True, session_id="theirs") == []
    assert await store.list_readable_runs("m1", others=False, session_id="plain") == []
    assert await store.list_readable_runs("m1", others=True, session_id="plain") == [
        r for r in newest if r.session_id == "plain"
    ]
    assert await store.list_readable_runs("m1", others=True, session_id="missing") == []
    pages: list[RunRecord] = []
    after: PageKey | None = None
    while page := await store.list_readable_runs("m1", others=True, after=after, limit=2):
        pages += page
        after = _last_key(page)
    assert pages == with_others
    tie = RunRecord("rz-tie", "mine", "x", "completed", runs[-1].created_at, None)
    await store.create_run(tie)
    first = await store.list_readable_runs("m1", others=True, limit=1)
    assert _ids(first) == ["rz-tie"]  # at the same time as r7: the greater id first
    rest = await store.list_readable_runs("m1", others=True, after=_last_key(first))
    assert _ids(rest) == _ids(with_others)
    await store.update_conversation("theirs", updated_at=2000.0, visibility="shared")
    assert len(await store.list_readable_runs("m1", others=False)) == len(readable) + 3
    await store.delete_session("mine")  # its runs go with it
    assert all(r.session_id != "mine" for r in await store.list_readable_runs("m1", others=True))


@_check
async def check_running_sessions(store: Store) -> None:
    """`running_sessions` names the sessions among those asked that have a running run."""
    for session_id in ("a", "b", "c"):
        await store.create_session(session_id, "app:agent")
    await store.create_run(_run("r1", "a"))
    await store.create_run(_run("r2", "b"))
    await store.finish_run("r2", "completed", time.time())
    assert await store.running_sessions(["a", "b", "c", "missing"]) == {"a"}
    assert await store.running_sessions(["b", "c"]) == set()
    assert await store.running_sessions([]) == set()
    assert await store.running_sessions(["a", "a"]) == {"a"}
    many = [f"s{i}" for i in range(1200)] + ["a"]
    assert await store.running_sessions(many) == {"a"}


# --- runs waiting for a person ------------------------------------------------------------


def _leased(run_id: str, session_id: str, owner: str = "me") -> RunRecord:
    now = time.time()
    return RunRecord(run_id, session_id, "app:agent", "running", now, None, owner, now, now + 30)


_STATE = {"kind": "permission", "callIndex": 1, "input": {"command": "ls", "n": [1, 2.5]}}


async def _suspended(store: Store, run_id: str = "r1", session_id: str = "s1") -> None:
    """A run that asked a person: its session, the run with two events, suspended."""
    await store.create_session(session_id, "app:agent")
    await store.create_run(_leased(run_id, session_id), _entries([0, 1]))
    assert await store.suspend_run(
        run_id,
        owner="me",
        messages=[UserMessage(content="go"), AssistantMessage(text="asking")],
        events=_entries([3, 4]),
        request_id="q1",
        state=_STATE,
        deadline=None,
    )


@_check
async def check_waiting_run_suspends_in_one_transaction(store: Store) -> None:
    """`suspend_run` stores the step's messages and events with the move to `waiting`,
    clears the lease, and keeps the request and state; it refuses (writing nothing) a run
    that is not running or that another owner holds."""
    await store.create_session("s1", "app:agent")
    await store.create_run(_leased("r1", "s1", owner="other"), _entries([0]))
    refused = await store.suspend_run(
        "r1",
        owner="me",
        messages=[UserMessage(content="x")],
        events=_entries([1]),
        request_id="q0",
        state={},
        deadline=None,
    )
    assert not refused
    assert await store.load_transcript("s1") == []
    assert _offsets(await store.read_events("r1")) == [0]
    assert not await store.suspend_run(
        "missing", owner="me", messages=[], events=[], request_id="q", state={}
    )
    await _suspended(store, "r2", "s2")
    record = await store.get_run("r2")
    assert record is not None
    assert (record.status, record.owner, record.lease_expires_at) == ("waiting", None, None)
    assert [m.role for m in await store.load_transcript("s2")] == ["user", "assistant"]
    assert _offsets(await store.read_events("r2")) == [0, 1, 3, 4]
    waiting = await store.get_waiting("r2")
    assert waiting is not None
    assert (waiting.run_id, waiting.session_id, waiting.agent_id) == ("r2", "s2", "app:agent")
    assert (waiting.request_id, waiting.state, waiting.deadline) == ("q1", _STATE, None)
    assert await store.get_waiting("r1") is None  # running, not waiting
    # Bad offsets: nothing written, the run still running.
    await store.create_session("s3", "app:agent")
    await store.create_run(_leased("r3", "s3"), _entries([0, 1]))
    with contextlib.suppress(ValueError, StoreError):
        await store.suspend_run(
            "r3",
            owner="me",
            messages=[UserMessage(content="x")],
            events=_entries([1]),
            request_id="q",
            state={},
        )
        raise AssertionError("suspend_run with an offset already stored: expected an error")
    assert (await store.get_run("r3")).status == "running"  # type: ignore[union-attr]
    assert await store.load_transcript("s3") == []


@_check
async def check_waiting_run_keeps_its_session_busy(store: Store) -> None:
    """A waiting run holds its session like a running one (but is not listed by
    `running_sessions`); leases neither renew nor expire it, and it cannot be finished
    until it is resumed."""
    await _suspended(store)
    await _expect(SessionBusyError, store.create_run(_run("r2", "s1")), "run beside a waiting one")
    assert await store.running_sessions(["s1"]) == set()  # waiting is not running
    assert await store.renew_leases("me", ["r1"], time.time(), time.time() + 30) == set()
    assert "r1" not in [r.id for r in await store.expired_runs(time.time() + 3600)]
    assert not await store.finish_run("r1", "error", time.time(), expired_by=time.time() + 3600)
    assert (await store.get_run("r1")).status == "waiting"  # type: ignore[union-attr]


@_check
async def check_waiting_run_resumes_once(store: Store) -> None:
    """`resume_run` moves the run back to running under the caller's lease with the
    decision's events, only for the pending request, and only once (concurrent callers:
    exactly one gets the record)."""
    await _suspended(store)
    now = time.time()
    assert (
        await store.resume_run("r1", "other", owner="b", now=now, lease_expires_at=now + 30) is None
    )
    assert (
        await store.resume_run("nope", "q1", owner="b", now=now, lease_expires_at=now + 30) is None
    )
    won: list[str] = []

    async def decide(owner: str) -> None:
        try:
            record = await store.resume_run(
                "r1",
                "q1",
                owner=owner,
                now=now,
                lease_expires_at=now + 30,
                events=[EventEntry(5, Text(content=f"decided by {owner}"))],
            )
        except (ValueError, StoreError):  # lost the race on the offsets
            return
        if record is not None:
            assert record.state == _STATE and record.request_id == "q1"
            won.append(owner)

    async with anyio.create_task_group() as tg:
        for owner in ("a", "b", "c", "d"):
            tg.start_soon(decide, owner)
    assert len(won) == 1, won
    record = await store.get_run("r1")
    assert record is not None
    assert (record.status, record.owner, record.lease_expires_at) == ("running", won[0], now + 30)
    events = await store.read_events("r1")
    assert _offsets(events) == [0, 1, 3, 4, 5]
    assert events[-1].event == Text(content=f"decided by {won[0]}")
    assert await store.get_waiting("r1") is None
    assert await store.resume_run("r1", "q1", owner="x", now=now, lease_expires_at=now) is None
    # Running again: it ends as usual, and frees its session.
    assert await store.finish_run("r1", "completed", now + 1, owner=won[0])
    await store.create_run(_run("r2", "s1"))


@_check
async def check_overdue_requests(store: Store) -> None:
    """`overdue_requests` lists the waiting runs whose deadline has come, earliest first,
    at most `limit`; runs without a deadline or resumed ones never."""
    now = time.time()
    for index, deadline in enumerate((now + 5, now - 5, None, now - 10)):
        run_id, session_id = f"r{index}", f"s{index}"
        await store.create_session(session_id, "app:agent")
        await store.create_run(_leased(run_id, session_id))
        assert await store.suspend_run(
            run_id,
            owner="me",
            messages=[],
            events=[],
            request_id=f"q{index}",
            state={"n": index},
            deadline=deadline,
        )
    assert [r.run_id for r in await store.overdue_requests(now)] == ["r3", "r1"]
    assert [r.run_id for r in await store.overdue_requests(now, limit=1)] == ["r3"]
    assert [r.run_id for r in await store.overdue_requests(now + 6)] == ["r3", "r1", "r0"]
    assert (await store.overdue_requests(now))[0].deadline == now - 10
    assert await store.resume_run("r3", "q3", owner="me", now=now, lease_expires_at=now + 9)
    assert [r.run_id for r in await store.overdue_requests(now)] == ["r1"]


# --- queued prompts ----------------------------------------------------------------------


def _queued(queued_id: str, session_id: str, prompt: str = "next") -> QueuedRecord:
    options: dict[str, Any] = {"effort": "low", "attachments": ["/a b/ü.txt"]}
    return QueuedRecord(queued_id, session_id, "m1", prompt, time.time(), options)


@_check
async def check_queue_in_order_and_bounded(store: Store) -> None:
    """Queued prompts come back in the order queued, with their options; a queue holds at
    most `limit` waiting prompts (dropped ones do not count); a missing session raises."""
    await store.create_session("s1", "app:agent")
    await store.create_session("s2", "app:agent")
    for n in range(3):
        assert await store.enqueue_prompt(_queued(f"q{n}", "s1", f"p{n} {_UNICODE}"), limit=3)
    assert await store.enqueue_prompt(_queued("other", "s2"), limit=3)
    assert not await store.enqueue_prompt(_queued("q3", "s1"), limit=3), "over the bound"
    listed = await store.list_queued("s1")
    assert [row.id for row in listed] == ["q0", "q1", "q2"]
    assert listed[1].prompt == f"p1 {_UNICODE}" and listed[1].member_id == "m1"
    assert listed[1].options == {"effort": "low", "attachments": ["/a b/ü.txt"]}
    assert listed[1].status == "queued" and listed[1].error is None
    assert await store.get_queued("q1") == listed[1]
    assert await store.get_queued("missing") is None
    assert await store.drop_queued("q0", "its member was removed")
    assert not await store.drop_queued("q0", "again"), "dropped once"
    dropped = await store.get_queued("q0")
    assert dropped is not None and dropped.status == "dropped"
    assert dropped.error == "its member was removed"
    assert await store.enqueue_prompt(_queued("q3", "s1"), limit=3), "a dropped one is no slot"
    await _expect(
        SessionNotFoundError,
        store.enqueue_prompt(_queued("q9", "missing"), limit=3),
        "a prompt queued on a missing session",
    )
    await _expect(StoreError, store.enqueue_prompt(_queued("q1", "s2"), limit=9), "a taken id")


@_check
async def check_queue_delete_and_sessions(store: Store) -> None:
    """A queued prompt is deleted once; `queued_sessions` names the sessions with a waiting
    prompt, the longest waiting first; deleting a session deletes its queue."""
    for session_id in ("a", "b", "c"):
        await store.create_session(session_id, "app:agent")
    assert await store.queued_sessions() == []
    assert await store.enqueue_prompt(_queued("b1", "b"), limit=5)
    assert await store.enqueue_prompt(_queued("a1", "a"), limit=5)
    assert await store.enqueue_prompt(_queued("b2", "b"), limit=5)
    assert await store.enqueue_prompt(_queued("c1", "c"), limit=5)
    assert await store.queued_sessions() == ["b", "a", "c"]
    assert await store.queued_sessions(limit=1) == ["b"]
    assert await store.count_queued() == 4
    assert await store.drop_queued("c1", "why")
    assert await store.count_queued() == 3, "a dropped prompt is not counted"
    assert await store.queued_sessions() == ["b", "a"], "a dropped prompt waits for nothing"
    assert await store.delete_queued("b1")
    assert not await store.delete_queued("b1")
    assert [row.id for row in await store.list_queued("b")] == ["b2"]
    await store.delete_session("b")
    assert await store.list_queued("b") == [] and await store.get_queued("b2") is None
    assert await store.queued_sessions() == ["a"]
    assert await store.count_queued() == 1, "a deleted session's queue is not counted"


@_check
async def check_queue_concurrent_enqueues_bounded(store: Store) -> None:
    """Enqueues racing on one session never take it past its bound."""
    await store.create_session("s", "app:agent")
    accepted: list[bool] = []

    async def enqueue(n: int) -> None:
        accepted.append(await store.enqueue_prompt(_queued(f"q{n}", "s"), limit=4))

    async with anyio.create_task_group() as group:
        for n in range(12):
            group.start_soon(enqueue, n)
    assert accepted.count(True) == 4
    assert len(await store.list_queued("s")) == 4


@_check
async def check_count_runs(store: Store) -> None:
    """`count_runs` counts the runs in each status asked for, every one of them a key
    (0 for a status no run has); a bad list of statuses is a `ValueError`."""
    assert await store.count_runs(["running", "completed"]) == {"running": 0, "completed": 0}
    for session_id in ("a", "b", "c"):
        await store.create_session(session_id, "app:agent")
        await store.create_run(_run(f"{session_id}1", session_id))
    await store.finish_run("c1", "completed", time.time())
    await store.create_run(_run("c2", "c"))
    await store.finish_run("b1", "error", time.time(), error="it failed")
    counts = await store.count_runs(["running", "completed", "error", "queued", "running"])
    assert counts == {"running": 2, "completed": 1, "error": 1, "queued": 0}
    assert await store.count_runs([]) == {}
    for bad in ("running", ["Running"], ["x' OR '1'='1"], [""], [f"s{i}" for i in range(17)]):
        await _expect(ValueError, store.count_runs(bad), f"count_runs({bad!r})")


STORE_CHECKS: Mapping[str, StoreCheck] = dict(_checks)
"""Every conformance check by name, in order."""


async def store_conformance(make_store: Callable[[], Store | Awaitable[Store]]) -> None:
    """Run every check, each on a fresh store from `make_store()` (closed afterwards).

    Raises:
        ExceptionGroup: One exception per failed check, each with a note naming it.
    """

    @contextlib.asynccontextmanager
    async def fresh() -> AsyncIterator[Store]:
        made = make_store()
        store = await made if inspect.isawaitable(made) else made
        try:
            yield store
        finally:
            await store.aclose()

    await run_checks("store", STORE_CHECKS, fresh, limit=None, where=lambda s: f" on {s!r}")


class StoreConformance:
    """Mix-in for pytest: the conformance suite as one test per check.

    Subclass it in a test module (name the subclass `Test...`) and define a `store`
    fixture giving a fresh, empty store (an async generator fixture can close it). Each
    test takes anyio's `anyio_backend` fixture, so it runs under asyncio and trio; define
    your own `anyio_backend` fixture to choose backends.
    """


add_tests(StoreConformance, STORE_CHECKS, "store", limit=None)
