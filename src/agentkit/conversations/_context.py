"""What a machine's services share: its runtime, its settings, the locks and change signals
of its conversations, and its task group while it is open.

The machine owns all of it (it makes the runtime and opens and closes the group); the
services (members, agents, conversations, runs) get this one object instead of the machine,
so that none of them depends on the class that composes them.
"""

from __future__ import annotations

from pathlib import Path

from anyio.abc import TaskGroup

from agentkit.conversations._changes import ConversationChanges
from agentkit.runtime import Runtime
from agentkit.stores import Store

__all__ = ["MachineContext"]


class MachineContext:
    """A machine's runtime, settings, conversation changes and task group."""

    def __init__(
        self, runtime: Runtime, attachment_roots: tuple[Path, ...], poll_interval: float
    ) -> None:
        self.runtime = runtime
        """The runtime every conversation run runs in."""
        self.attachment_roots = attachment_roots
        """The attachment roots, absolute (each also by its real path)."""
        self.poll_interval = poll_interval
        """Seconds between two reads of the store for work another process does."""
        self.changes = ConversationChanges(runtime.notifications)
        """The conversations' locks and change signals."""
        self._group: TaskGroup | None = None

    @property
    def store(self) -> Store:
        """The store everything is kept in."""
        return self.runtime.store

    @property
    def is_open(self) -> bool:
        """Whether the machine is open (inside its `async with`)."""
        return self._group is not None

    def open(self, group: TaskGroup) -> None:
        """The machine opened: its background tasks go in `group`."""
        self.changes.open()
        self._group = group

    def close(self) -> TaskGroup | None:
        """The machine closes: no call is accepted any more; returns the group to end."""
        group, self._group = self._group, None
        return group

    def task_group(self) -> TaskGroup:
        """The group of the machine's background tasks (`RuntimeError` when closed)."""
        if self._group is None:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        return self._group
