"""A conversation's changes: made one at a time, and signalled to its watches.

Two prompts through two servers on one PostgreSQL store must never both pass the check that
no run is going, nor both repair a transcript: a change holds the conversation's lock in
this process and, when the store's notifications are shared, across every process on the
store. Watches in this process wait on a signal that each change sets.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import anyio

from agentkit.stores import Notifications

__all__ = ["ConversationChanges"]

_LOCKS = 64  # conversations hash onto this many locks: bounded, whatever their number


class ConversationChanges:
    """The locks and change signals of a machine's conversations."""

    def __init__(self, notifications: Notifications) -> None:
        self._notifications = notifications
        self._locks: list[anyio.Lock] = []
        self._signals: dict[str, anyio.Event] = {}

    def open(self) -> None:
        """Make the locks (inside the event loop the machine runs in)."""
        self._locks = [anyio.Lock() for _ in range(_LOCKS)]

    @contextlib.asynccontextmanager
    async def lock(self, conversation_id: str) -> AsyncIterator[None]:
        """Hold the conversation: in this process, then (shared notifications) with every
        other process on the store."""
        if not self._locks:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        shared = self._notifications.lock(f"conversation {conversation_id}")
        async with self._locks[hash(conversation_id) % _LOCKS], shared:
            yield

    def changed(self, conversation_id: str) -> None:
        """Wake what waits on the conversation's signal."""
        event = self._signals.pop(conversation_id, None)
        if event is not None:
            event.set()

    def signal(self, conversation_id: str) -> anyio.Event:
        """An event set at the conversation's next change (take it before reading, so
        that no change between the read and the wait is missed)."""
        event = self._signals.get(conversation_id)
        if event is None:
            event = self._signals[conversation_id] = anyio.Event()
        return event
