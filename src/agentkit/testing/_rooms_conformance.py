"""The rooms client conformance suite: what every [`RoomsClient`][agentkit.rooms.RoomsClient]
must do, in process or over HTTP.

The suite is given a *host*: a machine reached through the client implementation under
test, which adds members (`client(name, role)`) and registers room agents by name
(`register_agent(room_id, name)`). Checks that need agents use only the agents of
`TEST_ROOM_AGENTS` (`word-count` and `adder`, see
[`WordCountAgent`][agentkit.testing.WordCountAgent] and
[`AdderAgent`][agentkit.testing.AdderAgent]), so that a remote host can register them
honestly, inside the server process: a server started with
`--extension agentkit.testing:rooms_conformance_extension` registers them when a machine
owner delegates to the `registrar` agent of its control room
([`register_test_agent`][agentkit.testing.register_test_agent]). No check reaches past
the client into the machine.

A host may share its machine with other hosts (a server started once for many checks):
it may then make member names unique (a check uses `client.participant`, never the name
it asked for), and checks assert only about the rooms they created.
[`MachineRoomsHost`][agentkit.testing.MachineRoomsHost] is the host of the in-process
client. Two ways to run the suite:

- Under pytest, subclass [`RoomsConformance`][agentkit.testing.RoomsConformance] and give
  it a `rooms_host` fixture; each check becomes one test, run under asyncio and trio:

    ```python
    import pytest

    from agentkit.testing import MachineRoomsHost, RoomsConformance


    class TestLocalRooms(RoomsConformance):
        @pytest.fixture
        async def rooms_host(self, tmp_path):
            async with MachineRoomsHost.open(tmp_path) as host:
                yield host
    ```

- Anywhere else, `await rooms_conformance(make_host)` runs every check on a host from
  `make_host()` (an async context manager) and raises an `ExceptionGroup` naming each
  check that failed.

This module does not import pytest.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import anyio

from agentkit.conversations import Machine
from agentkit.errors import InvalidPageError
from agentkit.rooms import (
    MAX_BATCH,
    MAX_PAYLOAD_BYTES,
    DelegationEndedError,
    DelegationNotFoundError,
    EventInput,
    Role,
    RoomAccessError,
    RoomAgentError,
    RoomError,
    RoomEvent,
    RoomGrant,
    RoomInfo,
    RoomNotFoundError,
    RoomsClient,
)
from agentkit.testing._conversation_conformance import conformance_provider
from agentkit.testing._rooms_agents import make_test_agent
from agentkit.testing._suite import add_tests, run_checks

__all__ = [
    "ROOMS_CHECKS",
    "MachineRoomsHost",
    "RoomsCheck",
    "RoomsConformance",
    "RoomsHost",
    "rooms_conformance",
]

_TIMEOUT = 20.0


# --- the host --------------------------------------------------------------------------------


class RoomsHost(Protocol):
    """What the suite runs against: a machine behind some rooms client implementation."""

    async def client(self, name: str, role: Role) -> RoomsClient:
        """Add a member with this role (named `name`, or a unique name made from it) and
        return a rooms client acting as it."""
        ...

    async def register_agent(self, room_id: str, agent: str) -> None:
        """Register the test agent `agent` (a name of `TEST_ROOM_AGENTS`) in the room, on
        the machine the clients talk to; returns once it is registered."""
        ...


class MachineRoomsHost:
    """The host of the in-process client: a [`Machine`][agentkit.conversations.Machine]
    on a SQLite file; agents are registered on `machine.rooms` directly."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        """The machine the clients act on."""

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, folder: Path, **options: Any) -> AsyncIterator[MachineRoomsHost]:
        """A fresh machine in `folder` (`options` go to `Machine`)."""
        options.setdefault("store", str(folder / f"rooms-{uuid.uuid4().hex[:8]}.db"))
        options.setdefault("provider", conformance_provider())
        async with Machine(**options) as machine:
            yield cls(machine)

    async def client(self, name: str, role: Role) -> RoomsClient:
        """Add the member and return its in-process rooms client."""
        await self.machine.add_member(name, role)
        return self.machine.rooms_client(await self.machine.member(name))

    async def register_agent(self, room_id: str, agent: str) -> None:
        """Register a test agent on the machine's rooms."""
        await self.machine.rooms.register_agent(room_id, make_test_agent(agent))


# --- helpers ---------------------------------------------------------------------------------


async def _expect(exc_type: type[BaseException], call: Awaitable[Any], what: str) -> BaseException:
    try:
        await call
    except exc_type as exc:
        return exc
    raise AssertionError(f"{what}: expected {exc_type.__name__}")


async def _take(events: AsyncIterator[RoomEvent], count: int) -> list[RoomEvent]:
    """The next `count` events of a subscription (left open: close it with `_closed`)."""
    taken: list[RoomEvent] = []
    if count == 0:
        return taken
    with anyio.fail_after(_TIMEOUT):
        async for event in events:
            taken.append(event)
            if len(taken) == count:
                break
    return taken


@contextlib.asynccontextmanager
async def _closed(events: AsyncIterator[RoomEvent]) -> AsyncIterator[AsyncIterator[RoomEvent]]:
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            with anyio.CancelScope(shield=True):
                await aclose()


async def _first(events: AsyncIterator[RoomEvent]) -> RoomEvent:
    async with _closed(events):
        return (await _take(events, 1))[0]


def _name(client: RoomsClient) -> str:
    return client.participant.removeprefix("member:")


def _chat(text: str, kind: str = "chat.message") -> EventInput:
    return EventInput(type=kind, payload={"text": text})


async def _room(client: RoomsClient, name: str = "lab") -> RoomInfo:
    return await client.create_room(f"{name} {uuid.uuid4().hex[:6]}")


# --- the checks ------------------------------------------------------------------------------

RoomsCheck = Callable[[RoomsHost], Awaitable[None]]
"""One conformance check: an async function given a host."""

_checks: dict[str, RoomsCheck] = {}


def _check(fn: RoomsCheck) -> RoomsCheck:
    _checks[fn.__name__.removeprefix("check_")] = fn
    return fn


@_check
async def check_create_get_list_delete(host: RoomsHost) -> None:
    """A new room is its creator's (owner, head 0), got and listed by it, missing to
    everyone else; viewers create none; only owners delete it."""
    ada = await host.client("ada", "editor")
    bob = await host.client("bob", "editor")
    assert isinstance(ada, RoomsClient) and ada.participant.startswith("member:")
    room = await ada.create_room("lab")
    assert (room.name, room.created_by, room.owners, room.head) == (
        "lab",
        _name(ada),
        (_name(ada),),
        0,
    )
    assert await ada.get_room(room.id) == room
    assert room.id in [r.id for r in await ada.list_rooms()]
    assert room.id not in [r.id for r in await bob.list_rooms()]
    await _expect(RoomNotFoundError, bob.get_room(room.id), "a stranger gets the room")
    await _expect(RoomNotFoundError, ada.get_room("no-such-room"), "an unknown room")
    viewer = await host.client("vera", "viewer")
    await _expect(RoomAccessError, viewer.create_room("mine"), "a viewer creates a room")
    await _expect(RoomError, ada.create_room(""), "an empty name")
    await _expect(RoomError, ada.create_room("x" * 201), "a name too long")
    await ada.set_grant(room.id, bob.participant, read=["*"], publish=["*"])
    await _expect(RoomAccessError, bob.delete_room(room.id), "a grantee deletes the room")
    await ada.delete_room(room.id)
    await _expect(RoomNotFoundError, ada.get_room(room.id), "a deleted room")
    assert room.id not in [r.id for r in await ada.list_rooms()]


@_check
async def check_publish_and_read(host: RoomsHost) -> None:
    """One event, then a batch, get contiguous positions; events come back as published
    (author, type, payload); pages follow `after`, `limit` and `types`."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    payload = {"text": "héllo ✓", "nested": [1, 2.5, None, True, {"k": "v"}]}
    assert await ada.publish(room.id, EventInput(type="chat.message", payload=payload)) == [1]
    batch = [
        EventInput(type="notes.added", payload=[1]),
        {"type": "chat.message", "payload": "plain"},  # dicts are validated as inputs
        EventInput(type="notes.removed"),
    ]
    assert await ada.publish(room.id, batch) == [2, 3, 4]  # type: ignore[arg-type]
    events = await ada.read(room.id)
    assert [e.position for e in events] == [1, 2, 3, 4]
    assert [e.type for e in events] == [
        "chat.message",
        "notes.added",
        "chat.message",
        "notes.removed",
    ]
    assert events[0].payload == payload and events[3].payload is None
    assert all(e.author == ada.participant and e.room_id == room.id for e in events)
    assert len({e.id for e in events}) == 4
    assert [e.position for e in await ada.read(room.id, after=2)] == [3, 4]
    assert [e.position for e in await ada.read(room.id, limit=2)] == [1, 2]
    assert [e.position for e in await ada.read(room.id, after=1, limit=2)] == [2, 3]
    assert [e.position for e in await ada.read(room.id, types=["notes.*"])] == [2, 4]
    assert [e.position for e in await ada.read(room.id, types=["chat.message"], after=1)] == [3]
    assert await ada.read(room.id, after=4) == []
    assert (await ada.get_room(room.id)).head == 4


@_check
async def check_subscribe_replays_follows_and_resumes(host: RoomsHost) -> None:
    """A subscription replays what is there, then yields each new event as it is
    published; one resumed after a position continues with no gap and no duplicate."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    await ada.publish(room.id, [_chat(f"m{i}") for i in range(3)])
    seen: list[RoomEvent] = []
    replayed = anyio.Event()

    async def subscriber() -> None:
        async with _closed(ada.subscribe(room.id)) as events:
            seen.extend(await _take(events, 3))
            replayed.set()
            seen.extend(await _take(events, 2))

    with anyio.fail_after(_TIMEOUT):
        async with anyio.create_task_group() as group:
            group.start_soon(subscriber)
            await replayed.wait()
            await anyio.sleep(0.05)  # the subscriber is waiting for news
            await ada.publish(room.id, _chat("m3"))
            await ada.publish(room.id, [_chat("m4"), EventInput(type="notes.added")])
    assert [e.position for e in seen] == [1, 2, 3, 4, 5]
    assert [e.payload["text"] for e in seen] == ["m0", "m1", "m2", "m3", "m4"]
    everything = await ada.read(room.id)
    async with _closed(ada.subscribe(room.id, after=3)) as events:
        resumed = await _take(events, 3)
        await ada.publish(room.id, _chat("m6"))
        resumed += await _take(events, 1)
    assert resumed == [*everything[3:], (await ada.read(room.id, after=6))[0]]
    assert [e.position for e in resumed] == [4, 5, 6, 7]
    typed = ada.subscribe(room.id, after=1, types=["notes.*"])
    assert (await _first(typed)).position == 6


@_check
async def check_grants_on_every_path(host: RoomsHost) -> None:
    """Without a grant a room is missing on every path; a grant limits what is read
    (pages and subscriptions) and published (all or nothing); only owners manage grants;
    `member:*` covers every member without a grant of its own; empty lists revoke."""
    ada = await host.client("ada", "editor")
    bob = await host.client("bob", "editor")
    carol = await host.client("carol", "editor")
    room = await _room(ada)
    await ada.publish(room.id, [_chat("hi"), EventInput(type="secret.plan", payload=1)])
    hidden: dict[str, Callable[[], Awaitable[Any]]] = {
        "get_room": lambda: bob.get_room(room.id),
        "delete_room": lambda: bob.delete_room(room.id),
        "set_grant": lambda: bob.set_grant(room.id, bob.participant, read=["*"], publish=["*"]),
        "list_grants": lambda: bob.list_grants(room.id),
        "publish": lambda: bob.publish(room.id, _chat("let me in")),
        "read": lambda: bob.read(room.id),
        "subscribe": lambda: _first(bob.subscribe(room.id)),
        "delegate": lambda: bob.delegate(room.id, "adder", [1]),
        "get_delegation": lambda: bob.get_delegation(room.id, "some-id"),
        "wait_delegation": lambda: bob.wait_delegation(room.id, "some-id"),
    }
    for what, call in hidden.items():
        await _expect(RoomNotFoundError, call(), f"{what} without a grant")
    assert room.id not in [r.id for r in await bob.list_rooms()]

    grant = await ada.set_grant(room.id, bob.participant, read=["chat.*"], publish=["chat.message"])
    assert grant == RoomGrant(bob.participant, ("chat.*",), ("chat.message",))
    assert await ada.list_grants(room.id) == [grant]
    assert room.id in [r.id for r in await bob.list_rooms()]
    assert [e.position for e in await bob.read(room.id)] == [1]
    assert await bob.read(room.id, types=["secret.*"]) == []
    mixed = [_chat("mine"), EventInput(type="secret.plan", payload=2)]
    await _expect(RoomAccessError, bob.publish(room.id, mixed), "a batch outside the grant")
    assert (await ada.get_room(room.id)).head == 2  # nothing of the batch
    assert await bob.publish(room.id, _chat("mine")) == [3]
    await ada.publish(room.id, EventInput(type="secret.plan", payload=3))
    await ada.publish(room.id, _chat("after the secret"))
    assert [e.position for e in await _take_closed(bob.subscribe(room.id), 3)] == [1, 3, 5]
    owners_only: dict[str, Callable[[], Awaitable[Any]]] = {
        "set_grant": lambda: bob.set_grant(room.id, carol.participant, read=["*"], publish=[]),
        "list_grants": lambda: bob.list_grants(room.id),
        "delete_room": lambda: bob.delete_room(room.id),
    }
    for what, call in owners_only.items():
        await _expect(RoomAccessError, call(), f"a grantee's {what}")
    await _expect(
        RoomError,
        ada.set_grant(room.id, "nobody", read=["*"], publish=[]),
        "a participant that is not member: or agent:",
    )

    await ada.set_grant(room.id, "member:*", read=["secret.*"], publish=[])
    assert [e.position for e in await carol.read(room.id)] == [2, 4]
    await _expect(RoomAccessError, carol.publish(room.id, _chat("x")), "member:* publishes")
    assert [e.position for e in await bob.read(room.id)] == [1, 3, 5]  # his own grant
    await ada.set_grant(room.id, bob.participant, read=[], publish=[])
    assert [e.position for e in await bob.read(room.id)] == [2, 4]  # member:* now
    await ada.set_grant(room.id, "member:*", read=[], publish=[])
    assert await ada.list_grants(room.id) == []
    await _expect(RoomNotFoundError, bob.read(room.id), "a revoked grant")
    await _expect(RoomNotFoundError, carol.get_room(room.id), "a revoked member:*")


async def _take_closed(events: AsyncIterator[RoomEvent], count: int) -> list[RoomEvent]:
    async with _closed(events):
        return await _take(events, count)


@_check
async def check_agents_derive_events(host: RoomsHost) -> None:
    """A registered agent handles each selected event once, in order, and publishes its
    derived events under its own identity; its grant is listed with the room's."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    await host.register_agent(room.id, "word-count")
    said = await ada.publish(room.id, [_chat("three little words"), _chat("two words")])
    await ada.publish(room.id, EventInput(type="notes.added", payload={"text": "not chat"}))
    derived = await _take_closed(ada.subscribe(room.id, types=["measurements.*"]), 2)
    assert [e.author for e in derived] == ["agent:word-count"] * 2
    assert [e.payload for e in derived] == [
        {"position": said[0], "words": 3},
        {"position": said[1], "words": 2},
    ]
    assert all(e.position > said[1] for e in derived)
    grants = {g.participant: g for g in await ada.list_grants(room.id)}
    assert grants["agent:word-count"].publish == ("measurements.*",)


@_check
async def check_delegations(host: RoomsHost) -> None:
    """A delegation goes pending, running, then completed with its result or failed with
    its error, each a `delegation.*` event; unknown agents and ids are errors; a member
    without the grant to publish `delegation.requested` cannot delegate."""
    ada = await host.client("ada", "editor")
    bob = await host.client("bob", "editor")
    room = await _room(ada)
    await host.register_agent(room.id, "adder")
    pending = await ada.delegate(room.id, "adder", [1, 2, 3.5])
    assert (pending.status, pending.agent, pending.room_id) == ("pending", "adder", room.id)
    assert pending.requested_by == ada.participant and pending.task == [1, 2, 3.5]
    with anyio.fail_after(_TIMEOUT):
        done = await ada.wait_delegation(room.id, pending.id)
    assert (done.status, done.result, done.error) == ("completed", 6.5, None)
    assert await ada.get_delegation(room.id, pending.id) == done
    bad = await ada.delegate(room.id, "adder", "not numbers")
    with anyio.fail_after(_TIMEOUT):
        failed = await ada.wait_delegation(room.id, bad.id)
    assert failed.status == "failed" and failed.error and failed.result is None
    kinds = [(e.type, e.payload["id"]) for e in await ada.read(room.id, types=["delegation.*"])]
    assert kinds == [
        ("delegation.requested", pending.id),
        ("delegation.running", pending.id),
        ("delegation.completed", pending.id),
        ("delegation.requested", bad.id),
        ("delegation.running", bad.id),
        ("delegation.failed", bad.id),
    ]
    await _expect(RoomAgentError, ada.delegate(room.id, "nobody", 1), "an unknown agent")
    await _expect(
        DelegationNotFoundError, ada.get_delegation(room.id, "no-such-id"), "an unknown id"
    )
    await ada.set_grant(room.id, bob.participant, read=["chat.*"], publish=["chat.*"])
    await _expect(RoomAccessError, bob.delegate(room.id, "adder", [1]), "outside the grant")
    await _expect(
        DelegationNotFoundError, bob.get_delegation(room.id, pending.id), "another's delegation"
    )


@_check
async def check_delegation_lifecycle(host: RoomsHost) -> None:
    """A running delegation is cancelled by its requester (its handler stops; a second
    cancel is `DelegationEndedError`), one past its deadline ends `expired`, a wait has
    a bound, lists filter by status and start after an id; an agent's publication
    records the position that caused it."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    await host.register_agent(room.id, "sleeper")
    await host.register_agent(room.id, "word-count")
    long = await ada.delegate(room.id, "sleeper", 600)
    with anyio.fail_after(_TIMEOUT):
        while True:
            if (await ada.get_delegation(room.id, long.id)).status == "running":
                break
            await anyio.sleep(0.02)
    await _expect(TimeoutError, ada.wait_delegation(room.id, long.id, timeout=0.1), "a bound")
    cancelled = await ada.cancel_delegation(room.id, long.id)
    assert (cancelled.status, cancelled.error) == ("cancelled", f"cancelled by {ada.participant}")
    await _expect(DelegationEndedError, ada.cancel_delegation(room.id, long.id), "a second cancel")
    short = await ada.delegate(room.id, "sleeper", 600, deadline=0.2)
    with anyio.fail_after(_TIMEOUT):
        expired = await ada.wait_delegation(room.id, short.id)
    assert expired.status == "expired" and expired.deadline is not None
    by_status = await ada.list_delegations(room.id, status=["expired", "cancelled"])
    assert [d.id for d in by_status] == [long.id, short.id]
    assert [d.id for d in await ada.list_delegations(room.id, after=long.id)] == [short.id]
    ends = [e.type for e in await ada.read(room.id, types=["delegation.*"])]
    assert ends.count("delegation.cancelled") == ends.count("delegation.expired") == 1
    (said,) = await ada.publish(room.id, _chat("three little words"))
    with anyio.fail_after(_TIMEOUT):
        async for event in ada.subscribe(room.id, after=said, types=["measurements.*"]):
            assert (event.caused_by, event.run_id) == (said, None)
            break


@_check
async def check_bad_input(host: RoomsHost) -> None:
    """Invalid types, payloads, batches, positions and patterns are refused, and nothing
    is published."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    bad_type = ada.publish(room.id, [{"type": "Not A Type"}])  # type: ignore[list-item]
    await _expect(ValueError, bad_type, "an invalid type")
    big = EventInput(type="chat.message", payload="x" * MAX_PAYLOAD_BYTES)
    await _expect(RoomError, ada.publish(room.id, big), "a payload too large")
    await _expect(RoomError, ada.publish(room.id, [big, _chat("ok")]), "a batch with one")
    many = [_chat(str(i)) for i in range(MAX_BATCH + 1)]
    await _expect(RoomError, ada.publish(room.id, many), "a batch too large")
    await _expect(RoomError, ada.publish(room.id, []), "an empty batch")
    await _expect(RoomError, ada.read(room.id, after=-1), "a negative position")
    assert (await ada.get_room(room.id)).head == 0
    assert await ada.publish(room.id, [_chat(str(i)) for i in range(MAX_BATCH)]) == list(
        range(1, MAX_BATCH + 1)
    )


@_check
async def check_bad_patterns(host: RoomsHost) -> None:
    """Invalid type patterns, in a read's `types` or in a grant, are refused with
    `ValueError` (`RoomError` is one), and the grants do not change."""
    ada = await host.client("ada", "editor")
    room = await _room(ada)
    await _expect(ValueError, ada.read(room.id, types=["Not A Pattern"]), "a bad read pattern")
    await _expect(ValueError, ada.read(room.id, types=["chat*"]), "a bad wildcard")
    bad_grant = ada.set_grant(room.id, "member:someone", read=["Bad Pattern"], publish=[])
    await _expect(ValueError, bad_grant, "a bad grant pattern")
    assert await ada.list_grants(room.id) == []


@_check
async def check_pages(host: RoomsHost) -> None:
    """Rooms, events and delegations are read a page at a time: `limit` 1..1000 (else
    `InvalidPageError`) and the `next` cursor of the page before."""
    ada = await host.client("ada", "editor")
    rooms = [await _room(ada) for _ in range(3)]
    first = await ada.list_rooms(limit=2)
    assert [r.id for r in first] == [r.id for r in rooms[:2]] and first.next is not None
    rest = await ada.list_rooms(limit=2, cursor=first.next)
    assert [r.id for r in rest] == [rooms[2].id] and rest.next is None
    await _expect(InvalidPageError, ada.list_rooms(limit=0), "limit 0")
    await _expect(InvalidPageError, ada.list_rooms(cursor="nope"), "a made-up cursor")

    room = rooms[0]
    await ada.publish(room.id, [_chat(str(i)) for i in range(5)])
    page = await ada.read(room.id, limit=2)
    seen = [event.position for event in page]
    while page.next is not None:
        page = await ada.read(room.id, limit=2, cursor=page.next)
        seen.extend(event.position for event in page)
    assert seen == [1, 2, 3, 4, 5]
    await _expect(InvalidPageError, ada.read(room.id, limit=1001), "limit 1001")

    await host.register_agent(room.id, "adder")
    made = [(await ada.delegate(room.id, "adder", [i])).id for i in range(3)]
    delegations = await ada.list_delegations(room.id, limit=2)
    more = await ada.list_delegations(room.id, limit=2, cursor=delegations.next)
    assert [d.id for d in [*delegations, *more]] == made and more.next is None


ROOMS_CHECKS: Mapping[str, RoomsCheck] = dict(_checks)
"""Every rooms conformance check by name, in order."""


async def rooms_conformance(
    make_host: Callable[[], contextlib.AbstractAsyncContextManager[RoomsHost]],
) -> None:
    """Run every check, each on a host from `make_host()`.

    Raises:
        ExceptionGroup: One exception per failed check, each with a note naming it.
    """
    await run_checks("rooms", ROOMS_CHECKS, make_host, limit=_TIMEOUT * 3)


class RoomsConformance:
    """Mix-in for pytest: the rooms conformance suite as one test per check.

    Subclass it in a test module (name the subclass `Test...`) and define a `rooms_host`
    fixture giving a host. Each test takes anyio's `anyio_backend` fixture, so it runs
    under asyncio and trio.
    """


add_tests(RoomsConformance, ROOMS_CHECKS, "rooms_host", limit=_TIMEOUT * 3)
