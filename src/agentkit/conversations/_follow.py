"""`follow()`: a run's output parts after an offset, then its one final event.

A live run (executed by this machine's runtime) is read from its log in memory, text
deltas included. Any other run (another process executes it, or its process died and the
core's leases will end it) is read from the store as it is notified, with its live
events relayed from the process executing it when the store's notifications are shared
(PostgreSQL): see `agentkit.runtime._relay`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from agentkit.conversations._models import FollowEvent, OutputEvent
from agentkit.conversations._turns import final_of, part_of
from agentkit.events import ErrorEvent, TurnEnd
from agentkit.runtime import Runtime
from agentkit.stores import EventEntry

__all__ = ["follow_run"]


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
