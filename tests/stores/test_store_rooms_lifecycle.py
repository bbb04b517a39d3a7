"""Rooms in production (issue 27), on `MemoryStore`, `SQLiteStore` (a real file) and
`PostgresStore` alike, under asyncio and trio: what caused an event and which run made
it; delegation deadlines, attempts and their two new end states; conditional delegation
changes (`expect`) that exactly one of two processes wins; cursors moved with the events;
listing and paging delegations; the overdue sweep; migration 5 on a version-4 database;
and storage faults (a full disk, a lost connection) as `StoreUnavailableError`."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import TypeAdapter

from agentkit.errors import DelegationStateError, StoreError, StoreUnavailableError
from agentkit.stores import (
    DelegationRecord,
    MemoryStore,
    NewRoomEvent,
    PostgresStore,
    RoomEvent,
    RoomRecord,
    SQLiteStore,
    Store,
    _migrations,
    open_store,
)
from agentkit.stores._pg_connections import Connection
from agentkit.stores._rooms import DELEGATION_ENDED, DELEGATION_STATUSES
from support.full_disk import small_filesystem
from support.old_layout import older_layout, run_sql
from support.pg import dsn, new_schema, schema_url

pytestmark = pytest.mark.anyio

BACKENDS = ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
SHARED = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=SHARED)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """Where stores standing for several processes meet: a SQLite file or a PostgreSQL
    schema (as a URL whose search path is that schema)."""
    if request.param == "sqlite":
        yield str(tmp_path / "rooms.db")
        return
    with new_schema("life") as schema:
        yield schema_url(schema)


@pytest.fixture(params=BACKENDS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    """One store of each backend, with room `r1`."""
    if request.param == "memory":
        made: Store = MemoryStore()
        await _with_room(made)
        yield made
        await made.aclose()
        return
    if request.param == "sqlite":
        made = SQLiteStore(tmp_path / "rooms.db")
        await _with_room(made)
        yield made
        await made.aclose()
        return
    with new_schema("life") as schema:
        made = PostgresStore(dsn(), schema=schema)
        await _with_room(made)
        yield made
        await made.aclose()


async def _with_room(store: Store, room_id: str = "r1") -> None:
    await store.create_room(RoomRecord(room_id, "lab", "member:ada", 1000.0))


def _event(event_id: str, **fields: Any) -> NewRoomEvent:
    values: dict[str, Any] = {
        "type": "chat.message",
        "author": "member:ada",
        "payload": {"text": event_id},
        "created_at": 1000.5,
        **fields,
    }
    return NewRoomEvent(event_id, **values)


def _delegation(delegation_id: str, status: Any = "pending", **fields: Any) -> DelegationRecord:
    values: dict[str, Any] = {
        "room_id": "r1",
        "agent": "agent:stats",
        "task": {"count": "words"},
        "requested_by": "member:ada",
        "created_at": 1000.0,
        "updated_at": 1000.0,
        **fields,
    }
    return DelegationRecord(delegation_id, status=status, **values)


async def _ids(store: Store, room_id: str = "r1") -> list[str]:
    return [event.id for event in await store.read_room_events(room_id)]


# --- what caused an event, and which run made it -------------------------------------------


async def test_events_keep_what_caused_them_and_the_run_that_made_them(store: Store) -> None:
    (asked,) = await store.append_room_events("r1", [_event("ask")])
    assert (asked.caused_by, asked.run_id) == (None, None)
    answers = await store.append_room_events(
        "r1",
        [
            _event("answer", author="agent:stats", caused_by=asked.position, run_id="run-7"),
            _event("aside", caused_by=asked.position),
            _event("plain", run_id="run-7"),
        ],
    )
    assert answers[0] == RoomEvent(
        "r1", 2, "answer", "chat.message", "agent:stats", {"text": "answer"}, 1000.5, 1, "run-7"
    )
    assert [(e.caused_by, e.run_id) for e in answers] == [(1, "run-7"), (1, None), (None, "run-7")]
    assert await store.read_room_events("r1") == [asked, *answers]
    assert await store.read_room_events("r1", after=1, types=["chat.*"], limit=1) == answers[:1]


@pytest.mark.parametrize("caused_by", [0, -1, True, 1.5, "1"])
async def test_a_cause_that_is_not_a_position_is_refused_before_anything_is_written(
    store: Store, caused_by: Any
) -> None:
    with pytest.raises(ValueError, match="caused_by"):
        await store.append_room_events("r1", [_event("ok"), _event("bad", caused_by=caused_by)])
    with pytest.raises(TypeError, match="run_id"):
        await store.append_room_events("r1", [_event("bad", run_id=7)])
    assert await store.room_head("r1") == 0


# --- delegations: deadlines, attempts, every status ----------------------------------------


async def test_delegations_keep_deadline_attempts_and_every_status(store: Store) -> None:
    assert {"cancelled", "expired"} <= DELEGATION_STATUSES
    assert {"completed", "failed", "cancelled", "expired"} == DELEGATION_ENDED
    timed = _delegation("d1", deadline=1060.25)
    await store.append_room_events("r1", [_event("req")], delegation=timed)
    assert await store.get_delegation("r1", "d1") == timed
    assert (timed.deadline, timed.attempts) == (1060.25, 0)
    taken = _delegation("d1", "running", deadline=1060.25, attempts=1, updated_at=1001.0)
    await store.append_room_events("r1", [_event("run")], delegation=taken)
    assert await store.get_delegation("r1", "d1") == taken
    for status in ("cancelled", "expired"):
        ended = _delegation(f"d-{status}", status, attempts=3, deadline=5)
        await store.append_room_events("r1", [_event(status)], delegation=ended)
        stored = await store.get_delegation("r1", f"d-{status}")
        assert stored == ended and stored.status == status and stored.attempts == 3
        assert isinstance(stored.deadline, float)  # an int deadline reads back as seconds


@pytest.mark.parametrize(
    "changes",
    [
        {"deadline": float("nan")},
        {"deadline": float("inf")},
        {"deadline": "soon"},
        {"attempts": -1},
        {"attempts": 1.0},
        {"status": "paused"},
    ],
)
async def test_an_invalid_delegation_is_refused_before_anything_is_written(
    store: Store, changes: dict[str, Any]
) -> None:
    with pytest.raises(ValueError):
        await store.append_room_events("r1", [_event("e")], delegation=_delegation("d", **changes))
    assert await store.room_head("r1") == 0
    assert await store.list_delegations("r1") == []


# --- conditional changes -----------------------------------------------------------------


async def test_expect_writes_only_from_an_expected_status(store: Store) -> None:
    pending = _delegation("d1")
    await store.append_room_events("r1", [_event("req")], delegation=pending)
    await store.set_cursor("r1", "agent:stats", 1)
    running = _delegation("d1", "running", attempts=1)
    await store.append_room_events("r1", [_event("taken")], delegation=running, expect=("pending",))
    assert await store.get_delegation("r1", "d1") == running
    done = _delegation("d1", "completed", attempts=1, result={"words": 3})

    async def refused(
        delegation: DelegationRecord, expect: Any, found: str | None, cursor: Any = None
    ) -> None:
        head = await store.room_head("r1")
        before = await store.list_delegations("r1")
        with pytest.raises(DelegationStateError) as info:
            await store.append_room_events(
                "r1", [_event(f"late-{head}")], delegation=delegation, expect=expect, cursor=cursor
            )
        assert isinstance(info.value, StoreError)
        assert info.value.status == found
        assert await store.room_head("r1") == head  # no event, ...
        assert await store.list_delegations("r1") == before  # ... no delegation change, ...
        assert await store.get_cursor("r1", "agent:stats") == 1  # ... no cursor

    await refused(done, ["pending"], "running", cursor=("agent:stats", 2))
    await refused(done, [], "running")  # nothing is expected: nothing may change
    await refused(_delegation("d9", "completed"), ("running",), None)  # missing
    assert await store.get_delegation("r1", "d9") is None
    (event,) = await store.append_room_events(
        "r1", [_event("done")], delegation=done, expect={"running", "pending"}
    )
    assert event.position == 3
    assert await store.get_delegation("r1", "d1") == done
    await refused(_delegation("d1", "failed"), DELEGATION_STATUSES - DELEGATION_ENDED, "completed")
    assert await _ids(store) == ["req", "taken", "done"]


async def test_expect_and_cursor_are_checked_before_anything_is_written(store: Store) -> None:
    await store.append_room_events("r1", [_event("req")], delegation=_delegation("d1"))
    d1 = _delegation("d1")
    bad_calls: list[tuple[type[Exception], str, dict[str, Any]]] = [
        (ValueError, "only meaningful with a delegation", {"expect": ("pending",)}),
        (ValueError, "not the string", {"delegation": d1, "expect": "pending"}),
        (ValueError, "unknown delegation status 'done'", {"delegation": d1, "expect": ["done"]}),
        (TypeError, "cursor", {"cursor": ("agent:stats",)}),
        (TypeError, "cursor", {"cursor": ("agent:stats", "2")}),
        (TypeError, "cursor", {"cursor": (7, 2)}),
        (TypeError, "cursor", {"cursor": ["agent:stats", 2]}),
    ]  # fmt: skip
    for error, message, arguments in bad_calls:
        with pytest.raises(error, match=message):
            await store.append_room_events("r1", [_event("x")], **arguments)
    with pytest.raises(ValueError, match="at least one event"):
        await store.append_room_events("r1", [], cursor=("agent:stats", 1))
    assert await store.room_head("r1") == 1
    assert await store.get_cursor("r1", "agent:stats") is None


async def test_a_cursor_moves_with_the_events_all_or_nothing(store: Store) -> None:
    await store.append_room_events("r1", [_event("ask")])
    (reply,) = await store.append_room_events(
        "r1", [_event("reply", caused_by=1)], cursor=("agent:stats", 1)
    )
    assert await store.get_cursor("r1", "agent:stats") == 1
    # Replacing, and moving back, as `set_cursor` does.
    await store.append_room_events("r1", [_event("again")], cursor=("agent:stats", 0))
    assert await store.get_cursor("r1", "agent:stats") == 0
    # An append that fails (an id already in the room) moves no cursor.
    with pytest.raises(StoreError, match="already in the room"):
        await store.append_room_events("r1", [_event("new"), _event("reply")], cursor=("c", 3))
    assert await store.get_cursor("r1", "c") is None
    assert await store.room_head("r1") == 3
    with pytest.raises(StoreError, match="no room"):
        await store.append_room_events("gone", [_event("x")], cursor=("c", 1))
    assert await store.get_cursor("gone", "c") is None
    assert reply.position == 2


# --- listing and the overdue sweep ---------------------------------------------------------


async def test_list_delegations_filters_and_pages_oldest_first(store: Store) -> None:
    await _with_room(store, "r2")
    specs = [  # recorded out of order: listed by (created_at, id)
        ("d5", "pending", "agent:a", 1003.0),
        ("d2", "running", "agent:b", 1001.0),
        ("d4", "completed", "agent:a", 1002.0),
        ("d3", "failed", "agent:a", 1002.0),
        ("d1", "pending", "agent:a", 1000.0),
        ("d6", "cancelled", "agent:b", 1004.0),
    ]
    for delegation_id, status, agent, created in specs:
        record = _delegation(delegation_id, status, agent=agent, created_at=created)
        await store.append_room_events("r1", [_event(f"e-{delegation_id}")], delegation=record)
    other = _delegation("d0", room_id="r2", created_at=1.0)
    await store.append_room_events("r2", [_event("e-d0")], delegation=other)

    async def ids(**query: Any) -> list[str]:
        return [d.id for d in await store.list_delegations("r1", **query)]

    assert await ids() == ["d1", "d2", "d3", "d4", "d5", "d6"]
    assert await ids(statuses=["pending", "running"]) == ["d1", "d2", "d5"]
    assert await ids(statuses=("completed", "failed", "cancelled", "expired")) == ["d3", "d4", "d6"]
    assert await ids(statuses=[]) == []
    assert await ids(agent="agent:a") == ["d1", "d3", "d4", "d5"]
    assert await ids(agent="agent:a", statuses=["pending"]) == ["d1", "d5"]
    assert await ids(agent="agent:nobody") == []
    assert await ids(limit=2) == ["d1", "d2"]
    assert await ids(limit=0) == []
    assert await ids(after=(1001.0, "d2")) == ["d3", "d4", "d5", "d6"]
    assert await ids(after=(1002, "d3"), limit=2) == ["d4", "d5"]  # an int time works too
    assert await ids(after=(1004.0, "d6")) == []
    # Page by page, each page starting after the key of the last one.
    pages: list[list[str]] = []
    key = None
    while page := await store.list_delegations("r1", after=key, limit=4, agent=None):
        pages.append([d.id for d in page])
        key = (page[-1].created_at, page[-1].id)
    assert pages == [["d1", "d2", "d3", "d4"], ["d5", "d6"]]
    assert [d.id for d in await store.list_delegations("r2")] == ["d0"]
    assert await store.list_delegations("gone", statuses=["pending"]) == []
    for bad in ({"statuses": ["done"]}, {"statuses": "pending"}, {"limit": -1}):
        with pytest.raises(ValueError):
            await store.list_delegations("r1", **bad)
    with pytest.raises(ValueError, match="page key"):
        await store.list_delegations("r1", after=(float("nan"), "d1"))


async def test_overdue_delegations_are_the_open_ones_past_their_deadline(store: Store) -> None:
    await _with_room(store, "r2")
    await _with_room(store, "r3")
    specs = [
        ("r1", "late-run", "running", 1005.0),
        ("r2", "late-pend", "pending", 1001.0),
        ("r3", "at-now", "pending", 1010.0),  # a deadline equal to `now` has passed
        ("r1", "tie-b", "pending", 1003.0),
        ("r2", "tie-a", "running", 1003.0),
        ("r1", "future", "pending", 1010.5),
        ("r1", "no-deadline", "pending", None),
        ("r2", "ended", "completed", 1000.0),
        ("r3", "cancelled", "cancelled", 1000.0),
        ("r3", "expired", "expired", 1000.0),
    ]
    for room_id, delegation_id, status, deadline in specs:
        record = _delegation(delegation_id, status, room_id=room_id, deadline=deadline)
        await store.append_room_events(room_id, [_event(delegation_id)], delegation=record)
    overdue = await store.overdue_delegations(1010.0)
    assert [(d.room_id, d.id) for d in overdue] == [
        ("r2", "late-pend"),
        ("r1", "tie-b"),  # the same deadline: by room, then id
        ("r2", "tie-a"),
        ("r1", "late-run"),
        ("r3", "at-now"),
    ]
    assert overdue[0] == await store.get_delegation("r2", "late-pend")
    assert [d.id for d in await store.overdue_delegations(1010.0, limit=2)] == [
        "late-pend",
        "tie-b",
    ]
    assert await store.overdue_delegations(1000.5) == []
    assert await store.overdue_delegations(1010.0, limit=0) == []
    with pytest.raises(ValueError):
        await store.overdue_delegations(1010.0, limit=-1)
    # The sweep ends one as expired; it is overdue no more.
    first = overdue[0]
    expired = DelegationRecord(**{**_fields(first), "status": "expired", "updated_at": 1010.0})
    await store.append_room_events(
        "r2",
        [_event("expired-1", type="delegation.expired")],
        delegation=expired,
        expect=("pending", "running"),
    )
    assert [d.id for d in await store.overdue_delegations(1010.0)][:1] == ["tie-b"]


def _fields(record: DelegationRecord) -> dict[str, Any]:
    return {name: getattr(record, name) for name in DelegationRecord.__dataclass_fields__}


def test_the_records_new_fields_are_camel_case_on_the_wire() -> None:
    event = RoomEvent("r1", 2, "e2", "chat.message", "agent:a", None, 1.0, 1, "run-1")
    assert TypeAdapter(RoomEvent).dump_python(event, by_alias=True) == {
        "roomId": "r1",
        "position": 2,
        "id": "e2",
        "type": "chat.message",
        "author": "agent:a",
        "payload": None,
        "createdAt": 1.0,
        "causedBy": 1,
        "runId": "run-1",
    }
    wire = TypeAdapter(DelegationRecord).dump_python(
        _delegation("d1", "expired", deadline=5.0, attempts=2), by_alias=True
    )
    assert (wire["status"], wire["deadline"], wire["attempts"]) == ("expired", 5.0, 2)
    assert "requestedBy" in wire


# --- two processes, one delegation ---------------------------------------------------------


async def test_of_two_competing_endings_exactly_one_wins(store_url: str) -> None:
    """Two stores (two processes' worth of connections) end each of 12 running
    delegations at the same moment, one as completed and one as failed, both
    `expect=("running",)`: exactly one of each pair writes, the other is refused with the
    winner's status and writes nothing."""
    first, second = open_store(store_url), open_store(store_url)
    count = 12
    try:
        await _with_room(first)
        for i in range(count):
            taken = _delegation(f"d{i}", "running", attempts=1)
            await first.append_room_events("r1", [_event(f"run-{i}")], delegation=taken)
        await second.room_head("r1")  # connected
        outcomes: dict[str, list[str]] = {f"d{i}": [] for i in range(count)}

        async def end(store: Store, delegation_id: str, status: str, go: anyio.Event) -> None:
            ending = _delegation(delegation_id, status, attempts=1, updated_at=1002.0)
            await go.wait()
            try:
                await store.append_room_events(
                    "r1",
                    [_event(f"{status}-{delegation_id}", type=f"delegation.{status}")],
                    delegation=ending,
                    expect=("running",),
                )
            except DelegationStateError as exc:
                outcomes[delegation_id].append(f"refused:{exc.status}")
            else:
                outcomes[delegation_id].append(f"won:{status}")

        for i in range(count):
            go = anyio.Event()
            async with anyio.create_task_group() as group:
                group.start_soon(end, first, f"d{i}", "completed", go)
                group.start_soon(end, second, f"d{i}", "failed", go)
                await anyio.lowlevel.checkpoint()
                go.set()
        for delegation_id, seen in outcomes.items():
            won = [s.split(":")[1] for s in seen if s.startswith("won:")]
            assert len(won) == 1, f"{delegation_id}: {seen}"
            assert f"refused:{won[0]}" in seen, f"{delegation_id}: {seen}"
            stored = await second.get_delegation("r1", delegation_id)
            assert stored is not None and stored.status == won[0]
        events = await first.read_room_events("r1")
        assert [e.position for e in events] == list(range(1, 2 * count + 1))
        assert len([e for e in events if e.type.startswith("delegation.")]) == count
    finally:
        await first.aclose()
        await second.aclose()


# --- migration 5 -------------------------------------------------------------------------


async def test_a_version_4_database_upgrades_in_place_and_keeps_its_rooms(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    older_layout(monkeypatch, 4)
    old = open_store(store_url)
    await _with_room(old)
    await old.set_cursor("r1", "agent:stats", 1)
    await old.aclose()
    monkeypatch.undo()
    # What version-4 code wrote: an event and a running delegation, without the columns
    # of version 5.
    run_sql(
        store_url,
        [
            "INSERT INTO agentkit_room_events (room_id, pos, id, type, author, payload, "
            "created_at) VALUES ('r1', 1, 'e1', 'chat.message', 'member:ada', "
            '\'{"text": "hi"}\', 1000.5)',
            "UPDATE agentkit_rooms SET head = 1 WHERE id = 'r1'",
            "INSERT INTO agentkit_delegations (room_id, id, agent, task, status, requested_by, "
            "created_at, updated_at, result, error) VALUES ('r1', 'd1', 'agent:stats', "
            "'{\"count\": \"words\"}', 'running', 'member:ada', 1000.0, 1000.0, 'null', NULL)",
        ],
    )
    versions = run_sql(store_url, ["SELECT version FROM agentkit_schema_version"])
    assert sorted(row[0] for row in versions) == [1, 2, 3, 4]

    store = open_store(store_url)
    try:
        (kept,) = await store.read_room_events("r1")
        assert kept == RoomEvent(
            "r1", 1, "e1", "chat.message", "member:ada", {"text": "hi"}, 1000.5
        )
        running = await store.get_delegation("r1", "d1")
        assert running == _delegation("d1", "running")
        assert (running.deadline, running.attempts) == (None, 0)
        versions = run_sql(store_url, ["SELECT version FROM agentkit_schema_version"])
        assert sorted(row[0] for row in versions) == [m.version for m in _migrations.MIGRATIONS]
        assert await store.get_cursor("r1", "agent:stats") == 1
        # Everything of version 5 works on the old rows.
        done = _delegation("d1", "completed", attempts=1, deadline=2000.0)
        (event,) = await store.append_room_events(
            "r1",
            [_event("done", caused_by=1, run_id="run-1")],
            delegation=done,
            expect=("running",),
            cursor=("agent:stats", 2),
        )
        assert (event.position, event.caused_by, event.run_id) == (2, 1, "run-1")
        assert await store.list_delegations("r1", statuses=["completed"]) == [done]
        assert await store.overdue_delegations(3000.0) == []
    finally:
        await store.aclose()


async def test_sqlite_reads_overdue_and_listed_delegations_through_their_indexes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plan.db"
    store = SQLiteStore(path)
    await _with_room(store)
    await store.aclose()
    conn = sqlite3.connect(path)
    try:
        plans = {
            "overdue": "SELECT id FROM agentkit_delegations "
            "WHERE status IN ('pending', 'running') AND deadline IS NOT NULL AND deadline <= ? "
            "ORDER BY deadline, room_id, id LIMIT ?",
            "listed": "SELECT id FROM agentkit_delegations WHERE room_id = ? "
            "AND (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?",
        }
        params = {"overdue": (1.0, 100), "listed": ("r1", 1.0, "d1", 10)}
        for name, query in plans.items():
            plan = " ".join(
                str(row[-1]) for row in conn.execute(f"EXPLAIN QUERY PLAN {query}", params[name])
            )
            assert f"agentkit_delegations_{name}" in plan, plan
    finally:
        conn.close()


# --- storage faults ----------------------------------------------------------------------


async def test_a_full_disk_fails_an_append_whole_and_the_next_one_continues() -> None:
    """On a real filesystem that fills up: the append that does not fit raises
    `StoreUnavailableError` and leaves nothing behind, for this store and for another
    reader; once there is room again, appends continue at the next position."""
    big = {"text": "x" * 300_000}  # more than any space SQLite set aside
    with small_filesystem("2m") as disk:
        path = disk.path / "rooms.db"
        store = SQLiteStore(path)
        try:
            await _with_room(store)
            await store.append_room_events("r1", [_event("e1")], cursor=("agent:stats", 1))
            assert disk.fill() > 0
            for attempt in range(2):  # and it stays so while the disk is full
                with pytest.raises(StoreUnavailableError, match=r"rooms\.db"):
                    await store.append_room_events(
                        "r1",
                        [_event(f"e2-{attempt}"), _event(f"big-{attempt}", payload=big)],
                        delegation=_delegation("d1"),
                        cursor=("agent:stats", 3),
                    )
            assert await store.room_head("r1") == 1
            assert await _ids(store) == ["e1"]
            assert await store.get_delegation("r1", "d1") is None
            assert await store.get_cursor("r1", "agent:stats") == 1
            reader = SQLiteStore(path)
            try:
                assert await _ids(reader) == ["e1"]
                assert await reader.room_head("r1") == 1
            finally:
                await reader.aclose()
            disk.free()
            events = await store.append_room_events(
                "r1", [_event("e2"), _event("big", payload=big)], delegation=_delegation("d1")
            )
            assert [e.position for e in events] == [2, 3]
            assert await _ids(store) == ["e1", "e2", "big"]
            assert await store.get_delegation("r1", "d1") == _delegation("d1")
        finally:
            await store.aclose()


async def test_sqlite_storage_it_cannot_open_is_unavailable(tmp_path: Path) -> None:
    nowhere = SQLiteStore(tmp_path / "no" / "such" / "dir.db")
    with pytest.raises(StoreUnavailableError, match="unable to open database file"):
        await nowhere.list_rooms()
    await nowhere.aclose()


async def test_an_unreachable_postgres_is_unavailable() -> None:
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none?connect_timeout=2")
    try:
        with pytest.raises(StoreUnavailableError, match="PostgreSQL: "):
            await store.room_head("r1")
    finally:
        await store.aclose()


def _terminate_others() -> int:
    """End every other session on the test database, as a server restart would."""
    import psycopg

    with psycopg.connect(dsn(), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return len(rows)


async def _retried(call: Callable[[], Any]) -> Any:
    """`call()` once more if it failed because the store was unavailable."""
    try:
        return await call()
    except StoreUnavailableError:
        return await call()


@pytest.mark.postgres
async def test_postgres_connections_the_server_ended_are_never_reused() -> None:
    with new_schema("life") as schema:
        store = PostgresStore(dsn(), schema=schema, max_connections=3)
        try:
            await _with_room(store)
            # Several idle connections in the pool.
            async with anyio.create_task_group() as group:
                for _ in range(3):
                    group.start_soon(store.room_head, "r1")
            assert _terminate_others() >= 1
            await _retried(lambda: store.append_room_events("r1", [_event("e1")]))
            assert await store.room_head("r1") == 1
            assert _terminate_others() >= 1
            # Every pooled connection is dead: each call works or says the store is
            # unavailable, and the next one works.
            for i in range(4):
                await _retried(lambda i=i: store.append_room_events("r1", [_event(f"e{i + 2}")]))
            assert [e.position for e in await store.read_room_events("r1")] == [1, 2, 3, 4, 5]
        finally:
            await store.aclose()


@pytest.mark.postgres
async def test_postgres_a_connection_lost_mid_call_is_unavailable_and_replaced() -> None:
    with new_schema("life") as schema:
        store = PostgresStore(dsn(), schema=schema, max_connections=1)
        try:
            await _with_room(store)

            async def slow(conn: Connection) -> None:
                await conn.execute("SELECT pg_sleep(30) /* agentkit-lost-mid-call */")

            def kill_it() -> None:
                import psycopg

                deadline = time.monotonic() + 10
                with psycopg.connect(dsn(), autocommit=True) as conn:
                    while time.monotonic() < deadline:
                        killed = conn.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE query LIKE '%agentkit-lost-mid-call%' "
                            "AND pid <> pg_backend_pid() AND state = 'active'"
                        ).fetchall()
                        if killed:
                            return
                        time.sleep(0.02)
                raise AssertionError("the slow call never started")

            started = time.monotonic()
            with anyio.fail_after(20):
                async with anyio.create_task_group() as group:
                    group.start_soon(anyio.to_thread.run_sync, kill_it)
                    with pytest.raises(StoreUnavailableError, match="PostgreSQL: "):
                        await store._run(slow)
            assert time.monotonic() - started < 15
            # The only connection died with its call: the next call gets a new one.
            (event,) = await store.append_room_events("r1", [_event("after")])
            assert event.position == 1
        finally:
            await store.aclose()
