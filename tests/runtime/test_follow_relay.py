"""The relay of live events on demand, without a database: a run nobody follows from
another process is not relayed; a reader's request brings the events after its offset
(the step streamed so far) and then the live ones; requests that stop let the relay
stop; a lost relayed event comes back with the reader's next request."""

from __future__ import annotations

from collections.abc import Iterable

import anyio
import anyio.lowlevel
import pytest

from agentkit.events import Text, TextDelta
from agentkit.runtime import _relay
from agentkit.runtime._relay import LiveRelay, remote_entries
from agentkit.stores import EventEntry, MemoryStore, Notifications
from support.remote_runs import collect, running_elsewhere, until

pytestmark = pytest.mark.anyio


class SharedHub(Notifications):
    """Process-local notifications that say they are shared: the relay works on demand,
    as it does on PostgreSQL. Records what is published."""

    shared = True

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[str] = []

    def dispatch(self, payloads: Iterable[str]) -> None:
        listed = list(payloads)
        self.sent.extend(listed)
        super().dispatch(listed)


def _live(hub: SharedHub) -> list[str]:
    return [payload for payload in hub.sent if payload.startswith("live:")]


async def test_a_run_is_relayed_only_after_a_request_and_from_its_offset() -> None:
    hub = SharedHub()
    relay = LiveRelay(hub)
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        await until(lambda: "sync" in hub._handlers)  # the relay answers requests
        for offset, piece in enumerate(["a", "b", "c"], 2):
            relay.add("r", offset, piece)
        await anyio.sleep(0.05)
        assert _live(hub) == []  # nobody asked
        hub.dispatch(["sync:r\n2"])  # a reader that has offsets up to 2
        await until(lambda: _live(hub))
        assert _live(hub) == ['live:r\n[[3,"b"],[4,"c"]]']
        relay.add("r", 5, Text(content="abc"))
        await until(lambda: len(_live(hub)) == 2)
        assert _live(hub)[1].startswith("live:r\n[[5,{")
        group.cancel_scope.cancel()


async def test_the_relay_stops_when_requests_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_relay, "WANTED_FOR", 0.05)
    hub = SharedHub()
    relay = LiveRelay(hub)
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        await until(lambda: "sync" in hub._handlers)  # the relay answers requests
        relay.add("r", 2, "a")
        hub.dispatch(["sync:r\n1"])
        await until(lambda: _live(hub))
        await anyio.sleep(0.1)  # no request since
        relay.add("r", 3, "b")
        await anyio.sleep(0.05)
        assert _live(hub) == ['live:r\n[[2,"a"]]']
        group.cancel_scope.cancel()


async def test_a_late_reader_gets_the_step_so_far_and_a_lost_event_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_relay, "SYNC_EVERY", 0.05)
    store, hub = MemoryStore(), SharedHub()
    await running_elsewhere(store)
    relay = LiveRelay(hub)
    got: list[EventEntry] = []
    async with anyio.create_task_group() as group:
        group.start_soon(relay.run)
        await until(lambda: "sync" in hub._handlers)  # the relay answers requests
        relay.add("r", 2, "Hel")
        relay.add("r", 3, "lo")  # the step so far: in no store
        group.start_soon(collect, remote_entries(store, hub, "r", -1, 60.0), got)
        await until(lambda: len(got) == 4)
        assert [e.event for e in got[2:]] == [TextDelta(content="Hel"), TextDelta(content="lo")]
        # A relayed event lost on its way (the listener reconnected, say): the next one
        # waits for it, and the reader's next request brings it back.
        relay._wanted.clear()
        relay.add("r", 4, " wor")
        hub.dispatch(["sync:r\n4"])  # another reader, further on, asks
        relay.add("r", 5, "ld")
        await until(lambda: len(got) == 6)
        group.cancel_scope.cancel()
    assert [e.offset for e in got] == list(range(6))
    assert [e.event for e in got[4:]] == [TextDelta(content=" wor"), TextDelta(content="ld")]
