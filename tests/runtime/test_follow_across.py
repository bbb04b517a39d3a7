"""A reader on one process follows a run another process executes, on PostgreSQL: a
reader that joins mid-step gets the step's text so far at once and every later delta
live, before the step ends, in order, each offset once; one that reconnects resumes
without a gap or a duplicate. The run's process is a real subprocess
(`follow_child.py`); the readers are this process's, under asyncio and trio."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from agentkit import Runtime
from agentkit.events import Text, TextDelta, TurnEnd
from agentkit.stores import EventEntry
from agentkit.testing import FunctionProvider
from support.paths import SRC
from support.pg import postgres_url

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

CHILD = Path(__file__).resolve().parent / "follow_child.py"


@pytest.fixture
def url() -> Iterator[str]:
    with postgres_url("follow") as found:
        yield found


class Child:
    """The run's process: told what to stream, saying what it did."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._lines = BufferedByteReceiveStream(process.stdout)

    async def line(self) -> str:
        with anyio.fail_after(30):
            return (await self._lines.receive_until(b"\n", 10_000)).decode()

    async def say(self, line: str) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(line.encode() + b"\n")

    async def piece(self, text: str) -> None:
        """Stream `text` as one delta, once it is in the run's log."""
        await self.say(f"piece {text}")
        assert (await self.line()).startswith("emitted ")


async def _child(url: str) -> AsyncIterator[Child]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    async with await anyio.open_process([sys.executable, str(CHILD), url], env=env) as process:
        try:
            yield Child(process)
        finally:
            if process.returncode is None:
                process.kill()


@pytest.fixture
async def child(url: str) -> AsyncIterator[Child]:
    async for found in _child(url):
        yield found


async def _reader(runtime: Runtime, run_id: str, after: int, into: list[EventEntry]) -> None:
    async for entry in runtime.follow(run_id, after, poll_interval=60.0):
        into.append(entry)


async def _until(got: list[EventEntry], count: int) -> None:
    # No timing threshold: the run's step is held open by this test, so whatever comes
    # came live; the limit only stops a test that would hang.
    with anyio.fail_after(20):
        while len(got) < count:  # noqa: ASYNC110 (a list another task fills)
            await anyio.sleep(0.005)


def _deltas(entries: list[EventEntry]) -> list[str]:
    return [e.event.content for e in entries if isinstance(e.event, TextDelta)]


async def test_a_late_joiner_on_another_process_gets_the_step_so_far_and_then_live_deltas(
    url: str, child: Child
) -> None:
    async with Runtime(provider=FunctionProvider(lambda request: "unused"), store=url) as runtime:
        run_id = (await child.line()).split()[1]
        before = [f"b{n} " for n in range(5)]
        for piece in before:
            await child.piece(piece)
        # Joining mid-step: the step's five deltas are in no store, only in the log of
        # the run's process.
        first: list[EventEntry] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_reader, runtime, run_id, -1, first)
            await _until(first, 2 + len(before))  # turn_start, session_init, the deltas
            assert _deltas(first) == before
            # Live: each delta reaches the reader while the step waits for the next.
            live = [f"l{n} " for n in range(5)]
            for index, piece in enumerate(live, 1):
                await child.piece(piece)
                await _until(first, 2 + len(before) + index)
                assert _deltas(first)[-1] == piece
            # A second reader joins later, and one reconnects after the third live delta.
            second: list[EventEntry] = []
            group.start_soon(_reader, runtime, run_id, -1, second)
            resumed: list[EventEntry] = []
            group.start_soon(_reader, runtime, run_id, first[2 + len(before) + 2].offset, resumed)
            await _until(second, len(first))
            await _until(resumed, 2)
            await child.say("end")
            assert await child.line() == "ended"
            with anyio.fail_after(20):
                while not (first and isinstance(first[-1].event, TurnEnd)):  # noqa: ASYNC110
                    await anyio.sleep(0.005)
        offsets = [e.offset for e in first]
        assert offsets == list(range(len(first)))  # in order, no gap, no duplicate
        assert _deltas(first) == before + live
        assert [e.event.content for e in first if isinstance(e.event, Text)] == [
            "".join(before + live)
        ]
        assert [(e.offset, e.event) for e in second] == [(e.offset, e.event) for e in first]
        assert [(e.offset, e.event) for e in resumed] == [
            (e.offset, e.event) for e in first if e.offset > first[2 + len(before) + 2].offset
        ]


async def test_a_run_nobody_follows_elsewhere_relays_nothing(url: str, child: Child) -> None:
    seen: list[str] = []
    async with Runtime(provider=FunctionProvider(lambda request: "unused"), store=url) as runtime:
        run_id = (await child.line()).split()[1]
        # Listening to the run's live topic, as a reader would, without asking for it.
        subscription = await runtime.notifications.subscribe(f"live:{run_id}")
        with subscription:
            for n in range(5):
                await child.piece(f"p{n} ")
            await anyio.sleep(0.3)
            _, data = subscription.take()
            seen.extend(data)
        assert seen == []  # nobody asked: no notification per delta
        got: list[EventEntry] = []
        async with anyio.create_task_group() as group:
            group.start_soon(_reader, runtime, run_id, -1, got)
            await _until(got, 7)
            await child.say("end")
            assert await child.line() == "ended"
            await _until(got, 9)
        assert _deltas(got) == [f"p{n} " for n in range(5)]
