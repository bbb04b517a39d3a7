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

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from agentkit.conversations._errors import (
    AccessDeniedError,
    ConversationNotFoundError,
    RunNotFoundError,
)
from agentkit.conversations._models import FollowEvent, OutputEvent
from agentkit.conversations._turns import final_of, part_of
from agentkit.events import ErrorEvent, TurnEnd
from agentkit.runtime import Runtime
from agentkit.stores import EventEntry

__all__ = ["follow_run", "guarded"]


async def follow_run(
    runtime: Runtime, run_id: str, after: int | None, poll_interval: float
) -> AsyncGenerator[FollowEvent, None]:
    """What `follow(conversation_id, run_id, after=after)` yields, once the caller has
    checked that the member may read the run."""
    cursor = -1 if after is None else after
    error: str | None = None
    live = runtime.get_run(run_id)
    entries = runtime.follow(run_id, cursor, poll_interval=poll_interval)
    async for entry in entries:
        if isinstance(entry.event, TurnEnd):
            if live is not None:
                # Once its ending is stored too: a caller that prompts again as soon
                # as it has the final event finds the conversation idle.
                outcome = await live.wait()
                error = error or outcome.error
            elif error is None:
                record = await runtime.store.get_run(run_id)
                error = record.error if record is not None else None
            yield final_of(entry.event, error, entry.offset)
            return
        error = _error(entry, error)
        part = part_of(entry.event)
        if part is not None:
            yield OutputEvent(offset=entry.offset, part=part)


def _error(entry: EventEntry, current: str | None) -> str | None:
    event = entry.event
    if isinstance(event, ErrorEvent) and event.agent is None:
        return event.error
    return current


_RECHECK = 5.0  # seconds between two checks of a follower's access while nothing changes


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

    The events are read by a task of the machine's `group`, so that this generator never
    yields from inside a cancel scope; it is stopped when the reader stops reading.
    """
    send, receive = anyio.create_memory_object_stream[FollowEvent | BaseException](16)
    scope = anyio.CancelScope()

    async def pump() -> None:
        with scope:
            async with send, anyio.create_task_group() as inner:
                inner.start_soon(_watch_access, allowed, changed, send, inner.cancel_scope)
                try:
                    async with contextlib.aclosing(events) as source:
                        async for event in source:
                            await send.send(event)
                except Exception as exc:  # the store failed: the reader gets the error
                    await send.send(exc)
                inner.cancel_scope.cancel()

    group.start_soon(pump)
    try:
        async with receive:
            async for item in receive:
                if isinstance(item, BaseException):
                    raise item
                yield item
    finally:
        scope.cancel()


async def _watch_access(
    allowed: Callable[[], Awaitable[None]],
    changed: Callable[[], anyio.Event],
    send: MemoryObjectSendStream[FollowEvent | BaseException],
    scope: anyio.CancelScope,
) -> None:
    while True:
        signal = changed()
        with anyio.move_on_after(_RECHECK):
            await signal.wait()
        try:
            await allowed()
        except (ConversationNotFoundError, AccessDeniedError, RunNotFoundError) as exc:
            await send.send(exc)
            scope.cancel()
            return
        except Exception:  # the store failed: the next check tries again
            continue
