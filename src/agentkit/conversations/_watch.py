"""`watch()`: a conversation's view, delivered at once and after every change.

One task per watch, in the machine's task group. It reads the saved turns; while a run is
going it follows the run's log (`Runtime.follow`: live from the runtime, or from the
store and the live relay when another process executes it), and otherwise waits for a
change made through this machine (a prompt, a cancel, a rename, a deletion), one notified
by another process sharing the store (PostgreSQL), or for `poll_interval` to pass. It
goes on across runs, by itself, until it is stopped or the machine closes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from agentkit._internal.callbacks import call_logged
from agentkit.conversations._client import WatchCallback
from agentkit.conversations._errors import AccessDeniedError, ConversationNotFoundError
from agentkit.conversations._follow import run_entries
from agentkit.conversations._models import (
    AnswerPart,
    ConversationDetails,
    ConversationView,
    Part,
    PendingRequestInfo,
    PermissionDecisionPart,
    PermissionRequestPart,
    QuestionPart,
    QueuedPrompt,
    Turn,
    TurnPart,
)
from agentkit.conversations._turns import OutputBuffer, part_of
from agentkit.runtime import Runtime
from agentkit.stores import Subscription

__all__ = ["Watch"]

_logger = logging.getLogger("agentkit.conversations")


class Watch:
    """One watch of one conversation for one member.

    Args:
        runtime: The machine's runtime (the runs' logs, the store's notifications).
        poll_interval: Seconds between two reads when nothing signals a change.
        conversation_id: The conversation watched.
        read: Reads the conversation as the member sees it, its access checked (a member
            removed, or a conversation it no longer sees, ends the watch).
        signal: An event the next change of the conversation through this machine sets.
        callback: Called with each view.
    """

    def __init__(
        self,
        *,
        runtime: Runtime,
        poll_interval: float,
        conversation_id: str,
        read: Callable[[], Awaitable[ConversationDetails]],
        signal: Callable[[], anyio.Event],
        callback: WatchCallback,
    ) -> None:
        self._runtime = runtime
        self._poll_interval = poll_interval
        self._id = conversation_id
        self._read = read
        self._signal = signal
        self._callback = callback
        self._scope = anyio.CancelScope()
        self._last: ConversationView | None = None
        self._turns: tuple[Turn, ...] = ()
        self._queued: tuple[QueuedPrompt, ...] = ()
        self._pending: tuple[PendingRequestInfo, ...] = ()
        self._changes: Subscription

    def stop(self) -> None:
        """Stop the watch: no view is delivered once this has returned."""
        self._scope.cancel()

    async def run(self) -> None:
        with self._scope:
            await self._deliver(ConversationView(loading=True))
            # Changes made by other processes sharing the store (PostgreSQL): notified.
            notifications = self._runtime.notifications
            with await notifications.subscribe(f"session:{self._id}") as changes:
                self._changes = changes
                while True:
                    if not await self._round():
                        return

    async def _round(self) -> bool:
        """Read, deliver, and wait for the next change; `False` once the watch is over."""
        signal = self._signal()  # taken first: no change is missed
        try:
            details = await self._read()
        except (ConversationNotFoundError, AccessDeniedError) as exc:
            await self._deliver(ConversationView(error=str(exc)))
            return False
        except Exception as exc:  # the store failed: said in the view, then tried again
            await self._deliver(
                ConversationView(turns=self._turns, error=f"{type(exc).__name__}: {exc}")
            )
            await anyio.sleep(self._poll_interval)
            return True
        self._turns, self._queued = details.turns, details.queued
        self._pending = details.pending_requests
        active = details.active_run_id
        if active is None:
            await self._deliver(ConversationView(turns=self._turns, queued=self._queued))
            await self._until_changed(signal)
            return True
        await self._follow(active, signal)
        return True

    async def _follow(self, run_id: str, signal: anyio.Event) -> None:
        buffer = OutputBuffer()
        await self._deliver(self._running(run_id, buffer.parts))
        async with anyio.create_task_group() as group:
            # Changed through this machine (cancelled, deleted): read the turns again.
            group.start_soon(_cancel_when_set, signal, group.cancel_scope)
            runtime = self._runtime
            entries = run_entries(runtime, run_id, -1, self._poll_interval, runtime.get_run(run_id))
            async for entry in entries:
                part = part_of(entry.event)
                if part is not None:
                    self._pending = _pending_after(self._pending, run_id, part)
                    buffer.add(part)
                    await self._deliver(self._running(run_id, buffer.parts))
            group.cancel_scope.cancel()

    async def _until_changed(self, signal: anyio.Event) -> None:
        """Wait for a change through this machine (`signal`), one notified by another
        process, or `poll_interval` (changes of a process whose notifications this one
        does not get)."""
        async with anyio.create_task_group() as group:
            group.start_soon(_cancel_when_set, signal, group.cancel_scope)
            await self._changes.wait(self._poll_interval)
            group.cancel_scope.cancel()
        self._changes.take()

    def _running(self, run_id: str, parts: list[TurnPart]) -> ConversationView:
        return ConversationView(
            turns=self._turns,
            output=tuple(parts),
            is_running=True,
            active_run_id=run_id,
            queued=self._queued,
            pending_requests=self._pending,
        )

    async def _deliver(self, view: ConversationView) -> None:
        if view == self._last:
            return
        self._last = view
        await call_logged(
            self._callback, view, _logger, "a watch callback of conversation %s failed", self._id
        )


def _pending_after(
    pending: tuple[PendingRequestInfo, ...], run_id: str, part: Part
) -> tuple[PendingRequestInfo, ...]:
    """What the run waits for once `part` of its log is read: a request adds itself, its
    decision (or answers) removes it."""
    if isinstance(part, PermissionRequestPart):
        request = PendingRequestInfo(
            request_id=part.request_id,
            run_id=run_id,
            kind="permission",
            tool=part.tool,
            tool_call_id=part.tool_call_id,
            input=part.input,
            effect=part.effect,
            deadline=part.deadline,
        )
    elif isinstance(part, QuestionPart):
        request = PendingRequestInfo(
            request_id=part.request_id,
            run_id=run_id,
            kind="question",
            tool="questionnaire",
            tool_call_id=part.tool_call_id,
            questions=part.questions,
            deadline=part.deadline,
        )
    elif isinstance(part, PermissionDecisionPart | AnswerPart):
        return tuple(kept for kept in pending if kept.request_id != part.request_id)
    else:
        return pending
    others = tuple(kept for kept in pending if kept.request_id != request.request_id)
    return (*others, request)


async def _cancel_when_set(signal: anyio.Event, scope: anyio.CancelScope) -> None:
    await signal.wait()
    scope.cancel()
