"""Queued prompts: what a busy conversation is prompted with `if_busy="enqueue"`, started in
order, one after the other, once the running run ends, however it ends.

A queued prompt is a row of the store (`QueueStore`) whose id is the id of the run it
becomes. Starting it (the drain) reads the head of the conversation's queue and starts its
run through the same path as a prompt, under the conversation's lock (held against every
process sharing the store on PostgreSQL), after checking that the row is still there: a
cancel takes the same lock, so a cancelled prompt never starts. The run's id is its claim:
the store refuses a second run with that id, so whichever process gets there first starts
it, once, and any other deletes the row it finds started.

Who drains: the process whose run ended (`drain_after`), and every machine at start-up and
then at every heartbeat (`serve`), for runs ended by the lease sweep (their process died)
and queues left by a server that was killed. The member who queued a prompt is checked
again when it starts: one removed, demoted to viewer, or no longer seeing the conversation
gets its prompt `dropped`, with the reason, instead of run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import anyio

from agentkit.conversations._access import Access
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import (
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    QueuedPromptNotFoundError,
    QueuedPromptStartedError,
)
from agentkit.conversations._meta import ConversationMeta
from agentkit.conversations._models import Member, PromptAccepted, QueuedPrompt
from agentkit.conversations._turns import user_turn_id
from agentkit.runtime import Run
from agentkit.stores import QueuedRecord, Store, StoreError

__all__ = ["MAX_QUEUED", "PromptQueue", "QueuedStart", "queued_prompts"]

_logger = logging.getLogger("agentkit.conversations")

MAX_QUEUED = 32
"""The most prompts a conversation's queue holds waiting; one more is refused (busy)."""
_KEPT_DROPPED = 8  # dropped prompts kept per conversation (the oldest go first)
_SWEPT = 100  # conversations the periodic drain looks at, at most, each round

QueuedStart = Callable[
    [Member, str, str, dict[str, Any], str, Callable[[], Awaitable[bool]]], Awaitable[Run | None]
]
"""Starts a queued prompt's run: `(member, conversation id, text, options, run id, still
queued)`; `still_queued` is asked under the conversation's lock, just before the run
starts (`None` is returned, nothing started, when it says no)."""


async def queued_prompts(store: Store, conversation_id: str) -> tuple[QueuedPrompt, ...]:
    """The conversation's queued (and dropped) prompts, oldest first, with their members'
    names."""
    rows = await store.list_queued(conversation_id)
    names: dict[str, str] = {}
    for member_id in {row.member_id for row in rows}:
        found = await store.get_member(member_id)
        names[member_id] = found.name if found is not None else ""
    return tuple(
        QueuedPrompt(
            id=row.id,
            prompt=row.prompt,
            member=names.get(row.member_id, ""),
            member_id=row.member_id,
            created_at=row.created_at,
            status=row.status,
            error=row.error,
        )
        for row in rows
    )


class PromptQueue:
    """The queued prompts of a machine's conversations (part of `machine.runs`)."""

    def __init__(self, context: MachineContext, access: Access, start: QueuedStart) -> None:
        self._context = context
        self._access = access
        self._start = start
        self.closing = False
        """Set when the machine stops its runs: nothing more is started."""
        self._held: dict[str, int] = {}  # conversations an interrupt is starting a run in

    @contextlib.contextmanager
    def held(self, conversation_id: str) -> Iterator[None]:
        """Start nothing queued in the conversation from this process during the block
        (an interrupting prompt's run starts first; the queue goes on after it)."""
        self._held[conversation_id] = self._held.get(conversation_id, 0) + 1
        try:
            yield
        finally:
            self._held[conversation_id] -= 1
            if not self._held[conversation_id]:
                del self._held[conversation_id]

    async def enqueue(
        self, member: Member, conversation_id: str, text: str, options: dict[str, Any]
    ) -> PromptAccepted:
        """Queue a prompt whose options were checked (as `member`, who may prompt); it
        starts at once when the conversation is idle by then."""
        store = self._context.store
        record = QueuedRecord(
            id=os.urandom(16).hex(),  # as a run's: the run's id once it starts
            session_id=conversation_id,
            member_id=member.id,
            prompt=text,
            created_at=time.time(),
            options=options,
        )
        if not await store.enqueue_prompt(record, limit=MAX_QUEUED):
            raise ConversationBusyError(
                f"conversation {conversation_id!r} has {MAX_QUEUED} prompts queued already: "
                "wait for them to run or cancel some"
            )
        self._context.changes.changed(conversation_id)
        # The run may have ended meanwhile (its drain found nothing yet): look now.
        await self.drain(conversation_id)
        started = await store.get_run(record.id) is not None
        return PromptAccepted(
            conversation_id=conversation_id,
            run_id=record.id,
            turn_id=user_turn_id(record.id),
            status="running" if started else "queued",
        )

    async def waiting(self, conversation_id: str) -> bool:
        """Whether the conversation has prompts waiting (a new one waits behind them)."""
        rows = await self._context.store.list_queued(conversation_id)
        return any(row.status == "queued" for row in rows)

    async def cancel(self, member: Member, conversation_id: str, queued_id: str) -> None:
        """Remove a queued (or dropped) prompt as `member`, who may prompt the
        conversation; `QueuedPromptStartedError` when it has started,
        `QueuedPromptNotFoundError` when the conversation has no such prompt."""
        context = self._context
        store = context.store
        async with context.changes.lock(conversation_id):  # no drain starts it meanwhile
            _, _, _, meta = await self._access.writable(
                member, conversation_id, "cancel queued prompts"
            )
            row = await store.get_queued(queued_id) if isinstance(queued_id, str) else None
            ours = row is not None and row.session_id == conversation_id
            if not ours or not await store.delete_queued(queued_id):
                await self._missing(conversation_id, meta, queued_id)
        context.changes.changed(conversation_id)

    async def _missing(self, conversation_id: str, meta: ConversationMeta, queued_id: str) -> None:
        run = await self._context.store.get_run(queued_id) if isinstance(queued_id, str) else None
        if run is not None and run.session_id == conversation_id and run.id not in meta.dropped:
            raise QueuedPromptStartedError(
                f"queued prompt {queued_id!r} has started: cancel its run instead"
            )
        raise QueuedPromptNotFoundError(
            f"conversation {conversation_id!r} has no queued prompt {str(queued_id)[:200]!r}"
        )

    async def drain_after(self, run: Run) -> None:
        """Once `run` (one this machine executes) has ended, start its conversation's next
        queued prompt."""
        await run.wait()
        await self._drain_logged(run.session_id)

    async def serve(self, interval: float) -> None:
        """Start what waits in any conversation whose run is no longer going, now (a
        machine that opens: queues left by a process that was killed) and then every
        `interval` seconds (runs ended by the lease sweep); runs until cancelled."""
        store = self._context.store
        while True:
            try:
                waiting = await store.queued_sessions(_SWEPT)
                running = await store.running_sessions(waiting)
            except Exception as exc:  # the store failed: the next round looks again
                _logger.warning("could not read the queued prompts: %s", exc)
                waiting, running = [], set()
            for conversation_id in waiting:
                if conversation_id not in running:
                    await self._drain_logged(conversation_id)
            await anyio.sleep(interval)

    async def _drain_logged(self, conversation_id: str) -> None:
        try:
            await self.drain(conversation_id)
        except Exception as exc:  # a store failure: the periodic drain tries again
            _logger.warning("could not start the queued prompts of %s: %s", conversation_id, exc)

    async def drain(self, conversation_id: str) -> None:
        """Start the conversation's oldest queued prompt if no run is going; drop the
        prompts that can no longer run on the way."""
        store = self._context.store
        for _ in range(2 * MAX_QUEUED + _KEPT_DROPPED):
            if self.closing or conversation_id in self._held:
                return
            rows = await store.list_queued(conversation_id)
            head = next((row for row in rows if row.status == "queued"), None)
            if head is None:
                return
            if await store.get_run(head.id) is not None:  # started by another process
                await store.delete_queued(head.id)
                continue
            member = Member(id=head.member_id, name=head.member_id, role="viewer")

            async def still_queued(queued_id: str = head.id) -> bool:
                found = await store.get_queued(queued_id)
                return found is not None and found.status == "queued"

            try:
                run = await self._start(
                    member, conversation_id, head.prompt, head.options, head.id, still_queued
                )
            except ConversationBusyError:
                return  # the running run's end drains it
            except ConversationNotFoundError as exc:
                if await store.get_conversation(conversation_id) is None:
                    return  # deleted: its queue went with it
                await self._drop(conversation_id, head.id, str(exc), rows)
                continue
            except ConversationError as exc:  # the member may no longer prompt, ...
                await self._drop(conversation_id, head.id, str(exc), rows)
                continue
            except StoreError:
                if await store.get_run(head.id) is None:
                    raise
                continue  # another process started it first
            if run is None:
                continue  # cancelled meanwhile
            await store.delete_queued(head.id)
            self._context.changes.changed(conversation_id)
            return

    async def _drop(
        self, conversation_id: str, queued_id: str, why: str, rows: Sequence[QueuedRecord]
    ) -> None:
        store = self._context.store
        await store.drop_queued(queued_id, why)
        dropped = [row.id for row in rows if row.status == "dropped"]
        for old in dropped[: max(len(dropped) + 1 - _KEPT_DROPPED, 0)]:
            await store.delete_queued(old)
        _logger.info("queued prompt %s of %s dropped: %s", queued_id, conversation_id, why)
        self._context.changes.changed(conversation_id)
