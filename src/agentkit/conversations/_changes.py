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
        # Changes counted per bucket of conversations (bounded, like the locks): what was
        # read of a conversation stands for it while its bucket's count stays the same.
        self._versions = [0] * _LOCKS
        self._access_versions = [0] * _LOCKS

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

    def version(self, conversation_id: str) -> int:
        """A count that grows at every change of the conversation made in this process
        (and of a few others: conversations share counts)."""
        return self._versions[hash(conversation_id) % _LOCKS]

    def access_version(self, conversation_id: str) -> int:
        """A count that grows at every change made in this process of who may read the
        conversation or its runs: its visibility, its deletion, a run dropped."""
        return self._access_versions[hash(conversation_id) % _LOCKS]

    def access_changed(self, conversation_id: str) -> None:
        """Who may read the conversation or which runs it has changed (then `changed`)."""
        self._access_versions[hash(conversation_id) % _LOCKS] += 1
        self.changed(conversation_id)

    def changed(self, conversation_id: str) -> None:
        """Wake what waits on the conversation's signal."""
        self._versions[hash(conversation_id) % _LOCKS] += 1
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
