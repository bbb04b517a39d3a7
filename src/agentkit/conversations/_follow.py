"""`follow()`: a run's output parts after an offset, then its one final event.

A live run (executed by this machine's runtime) is read from its log in memory, text
deltas included. Any other run (another process executes it, or its process died and the
core's leases will end it) is read from the store as it is notified, with its live
events relayed from the process executing it when the store's notifications are shared
(PostgreSQL): see `agentkit.runtime._relay`.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import anyio
from anyio.abc import TaskGroup

from agentkit._internal.models import (
    new_model,
    set_dict,
    set_extra,
    set_fields_set,
    set_private,
    shared_fields_set,
)
from agentkit.conversations._errors import (
    AccessDeniedError,
    ConversationNotFoundError,
    RunNotFoundError,
)
from agentkit.conversations._models import FollowEvent, OutputEvent, TextDeltaPart
from agentkit.conversations._turns import final_of, part_of
from agentkit.events import (
    ErrorEvent,
    PermissionRequestEvent,
    QuestionEvent,
    TextDelta,
    TurnEnd,
)
from agentkit.runtime import Run, Runtime
from agentkit.stores import EventEntry

__all__ = ["follow_run", "guarded", "run_entries"]


async def follow_run(
    runtime: Runtime, run_id: str, after: int | None, poll_interval: float, run: Run | None = None
) -> AsyncGenerator[FollowEvent, None]:
    """What `follow(conversation_id, run_id, after=after)` yields, once the caller has
    checked that the member may read the run. With `run` (the run itself, which this
    machine started), its log in memory is read even once the run has ended: every event
    from the first, text deltas included."""
    cursor = -1 if after is None else after
    error: str | None = None
    live = run or runtime.get_run(run_id)
    entries = run_entries(runtime, run_id, cursor, poll_interval, live)
    async for entry in entries:
        if isinstance(entry.event, TurnEnd):
            if live is not None and not live.waiting:  # (a `Run` that went on elsewhere waits)
                # Once its ending is stored too: a caller that prompts again as soon
                # as it has the final event finds the conversation idle.
                outcome = await live.wait()
                error = error or outcome.error
            elif error is None:
                record = await runtime.store.get_run(run_id)
                error = record.error if record is not None else None
            yield final_of(entry.event, error, entry.offset)
            return
        event = entry.event
        if type(event) is TextDelta and event.agent is None:
            # Most of a streamed answer, for every follower: built without validation.
            yield _delta_output(entry.offset, event.content)
            continue
        error = _error(entry, error)
        part = part_of(event)
        if part is not None:
            yield OutputEvent(offset=entry.offset, part=part)


async def run_entries(
    runtime: Runtime, run_id: str, cursor: int, poll_interval: float, live: Run | None
) -> AsyncGenerator[EventEntry, None]:
    """Run `run_id`'s entries after `cursor`: of `live` (held by this runtime) while it
    runs here; once it waits for a person, wherever it goes on (`Runtime.follow`: here
    when decided here, else from the store and the live relay), since a decision given
    through another process resumes it there and this process's `Run` sees no more."""
    while True:
        if live is None:
            async for entry in runtime.follow(run_id, cursor, poll_interval=poll_interval):
                yield entry
            return
        asked = False
        async for entry in live.entries(cursor):
            cursor = entry.offset
            yield entry
            if isinstance(entry.event, PermissionRequestEvent | QuestionEvent):
                asked = True
                break
        if not asked:
            return
        # Stored waiting in a moment (it is not held here once it is), or decided here
        # (its log goes on); then read wherever it goes on. The core signals neither,
        # and it is a store transaction away: looked at every 10 ms.
        while True:
            if runtime.get_run(run_id) is not live or len(live) > cursor + 1 or live.done:
                break
            await anyio.sleep(0.01)
        if live.waiting:  # not decided here (yet): read it from the store
            live = None


_PART_FIELDS = shared_fields_set(("text",))
_OUTPUT_FIELDS = shared_fields_set(("offset", "part"))


def _delta_output(offset: int, text: str) -> OutputEvent:
    """`OutputEvent(offset=offset, part=TextDeltaPart(text=text))`, equal to it, built as
    `agentkit._internal.models` builds what agentkit made itself (valid by construction)."""
    part: Any = new_model(TextDeltaPart)
    set_dict(part, {"type": "text_delta", "text": text})
    set_fields_set(part, _PART_FIELDS)
    set_extra(part, None)
    set_private(part, None)
    output: Any = new_model(OutputEvent)
    set_dict(output, {"type": "output", "offset": offset, "part": part})
    set_fields_set(output, _OUTPUT_FIELDS)
    set_extra(output, None)
    set_private(output, None)
    result: OutputEvent = output
    return result


def _error(entry: EventEntry, current: str | None) -> str | None:
    event = entry.event
    if isinstance(event, ErrorEvent) and event.agent is None:
        return event.error
    return current


_RECHECK = 5.0  # seconds between two checks of a follower's access while nothing changes


class _Guard:
    """Between a guarded reader and the task watching its access."""

    __slots__ = ("denied", "reading")

    def __init__(self) -> None:
        self.denied: BaseException | None = None  # why the reader lost access
        self.reading: anyio.CancelScope | None = None  # around the read in progress

    def deny(self, exc: BaseException) -> None:
        self.denied = exc
        if self.reading is not None:
            self.reading.cancel()


async def guarded(
    events: AsyncGenerator[FollowEvent, None],
    allowed: Callable[[], Awaitable[None]],
    changed: Callable[[], anyio.Event],
    group: TaskGroup,
) -> AsyncGenerator[FollowEvent, None]:
    """`events`, ended as soon as the reader loses access (`allowed` raises): checked at
    every change of the conversation (`changed` gives the signal of the next one) and
    every few seconds (a member removed, a role changed). The error `allowed` raised is
    raised here, where the reader reads.

    The reader's task reads `events` itself, each read in a cancel scope of its own
    (never around a `yield`) that the watch, a task of the machine's `group`, cancels when
    access is lost; it is stopped when the reader stops reading. Not a task that reads
    and hands events over: that would cost every event of a live run (every text delta
    of a streaming model) a hand-over and a task switch per follower.
    """
    guard = _Guard()
    watching = anyio.CancelScope()

    async def watch() -> None:
        with watching:
            await _watch_access(allowed, changed, guard)

    group.start_soon(watch)
    try:
        async with contextlib.aclosing(events) as source:
            while True:
                if guard.denied is not None:
                    raise guard.denied
                reading = guard.reading = anyio.CancelScope()
                with reading:
                    try:
                        event = await source.__anext__()
                    except StopAsyncIteration:
                        return
                guard.reading = None
                if reading.cancelled_caught:
                    assert guard.denied is not None  # only the watch cancels it
                    raise guard.denied
                yield event
    finally:
        watching.cancel()


async def _watch_access(
    allowed: Callable[[], Awaitable[None]],
    changed: Callable[[], anyio.Event],
    guard: _Guard,
) -> None:
    while True:
        signal = changed()
        with anyio.move_on_after(_RECHECK):
            await signal.wait()
        try:
            await allowed()
        except (ConversationNotFoundError, AccessDeniedError, RunNotFoundError) as exc:
            guard.deny(exc)
            return
        except Exception:  # the store failed: the next check tries again
            continue
