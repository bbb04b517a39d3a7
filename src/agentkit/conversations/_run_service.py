"""`machine.runs`: prompts that start runs, and following and cancelling them, each call
acting as a member and checked once; and the runs this machine executes, stopped when the
machine closes, shuts down, or another process sharing the store asks.

A prompt is `Runtime.start` on the conversation's session; one to a busy conversation is
refused, queued (`PromptQueue`, which starts it later through the same path) or cancels
the running run first (`if_busy`). A follow replays the run's log
(`Run.entries`, then `Store.read_events`); a cancel is `Run.cancel`, or a request to the
process executing the run through the store's notifications.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from typing import Any, get_args

import anyio

from agentkit.conversations._access import Access
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._agents import fingerprint_of, run_spec
from agentkit.conversations._attachments import check_attachments
from agentkit.conversations._context import MachineContext
from agentkit.conversations._decisions import Decisions
from agentkit.conversations._errors import (
    AttachmentError,
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
    RunNotFoundError,
    TurnNotFoundError,
)
from agentkit.conversations._follow import follow_run, guarded
from agentkit.conversations._meta import ConversationMeta, RunEntry, save_meta
from agentkit.conversations._models import FollowEvent, IfBusy, Member, PromptAccepted
from agentkit.conversations._queue import PromptQueue
from agentkit.conversations._results import (
    RunResult,
    check_wait,
    result_of_events,
    result_of_outcome,
)
from agentkit.conversations._stream import RunStream
from agentkit.conversations._turns import (
    GOING,
    INTERRUPTED_REASON,
    OutputBuffer,
    active_run,
    part_of,
    user_turn_id,
)
from agentkit.events import AgentMessage, TextDelta, TurnEnd, TurnStart
from agentkit.paging import Page, check_limit, decode_key, page_of, record_key
from agentkit.providers import AssistantMessage, Message, UserMessage
from agentkit.runtime import Run, RunOutcome, SessionBusyError
from agentkit.spec import ReasoningEffort, SpecError
from agentkit.stores import RunRecord

__all__ = ["RunService"]

_CANCEL_TOPIC = "cancel"  # notifications asking the process executing a run to stop it
_KEPT_RUNS = 64  # runs kept past their end, at most (ended ones are dropped first)
# A follower's access is read again at a change at most this often, unless this process
# changed it (less than `_follow`'s periodic check, so that one always reads).
_RECHECK_AFTER = 1.0


class RunService:
    """The runs of a machine's conversations: `machine.runs`.

    The methods taking a `member` check it once against its current role and the
    conversation's visibility; a run of a conversation the member cannot see is missing
    to it (`ConversationNotFoundError`).
    """

    def __init__(self, context: MachineContext, access: Access, agents: AgentService) -> None:
        self._context = context
        self._access = access
        self._agents = agents
        self._runs: dict[str, Run] = {}  # the runs this machine started, until seen ended
        self._stopping: set[str] = set()  # runs another process asked to stop
        self.queue = PromptQueue(context, access, self._start_queued)
        """The conversations' queued prompts (`if_busy="enqueue"`)."""
        self.decisions = Decisions(context, access, agents, self._runs.get, self._went_on)
        """A person's decisions and answers to the runs' requests (`decide`, `answer`)."""

    async def prompt(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
        if_busy: IfBusy = "reject",
    ) -> PromptAccepted:
        """Start a run of the conversation's agent on `text` as `member`; returns once
        the run is stored, or the prompt queued (see `ConversationClient.prompt`)."""
        if if_busy not in get_args(IfBusy):
            raise ConversationError(
                f"if_busy must be 'reject', 'enqueue' or 'interrupt', not {if_busy!r}"[:300]
            )
        options = {"attachments": attachments, "effort": effort, "outputSchema": output_schema}
        if if_busy == "enqueue" and replace_turn is None:
            await self._access.writable(member, conversation_id, "prompt", fresh_session=False)
            if await self.queue.waiting(conversation_id):  # first in, first run
                return await self._enqueue(member, conversation_id, text, options)
            try:
                run = await self._start(member, conversation_id, text, options)
            except ConversationBusyError:
                return await self._enqueue(member, conversation_id, text, options)
        elif if_busy == "interrupt":
            run = await self._interrupt(member, conversation_id, text, options, replace_turn)
        else:
            run = await self._start(
                member, conversation_id, text, options, replace_turn=replace_turn
            )
        assert run is not None
        return _accepted(conversation_id, run)

    async def cancel_queued(self, member: Member, conversation_id: str, queued_id: str) -> None:
        """Remove a queued prompt as `member` (see `ConversationClient.cancel_queued`)."""
        await self.queue.cancel(member, conversation_id, queued_id)

    async def _enqueue(
        self, member: Member, conversation_id: str, text: str, options: dict[str, Any]
    ) -> PromptAccepted:
        """Check the prompt as a start would (its access, text, attachments, options),
        then queue it."""
        _, _, record, _ = await self._access.writable(member, conversation_id, "prompt")
        paths, _ = await self._checked(record.agent_id, text, options)
        checked = {**options, "attachments": paths}
        stored = {key: value for key, value in checked.items() if value not in (None, [])}
        return await self.queue.enqueue(member, conversation_id, text, stored)

    async def stream(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
        if_busy: IfBusy = "reject",
    ) -> RunStream:
        """`prompt`, and the run's events from its first one, as `member` (see
        `ConversationClient.stream`): read from the run's log in memory, which holds every
        event from the start, so no text delta is missed however fast the model is. A
        streamed prompt is never queued: `if_busy` is `"reject"` or `"interrupt"`."""
        if if_busy not in ("reject", "interrupt"):
            raise ConversationError(
                f"a streamed prompt's if_busy must be 'reject' or 'interrupt', not {if_busy!r}"[
                    :300
                ]
            )
        options = {"attachments": attachments, "effort": effort, "outputSchema": output_schema}
        if if_busy == "interrupt":
            run = await self._interrupt(member, conversation_id, text, options, replace_turn)
        else:
            run = await self._start(
                member, conversation_id, text, options, replace_turn=replace_turn
            )
        assert run is not None
        return RunStream(
            _accepted(conversation_id, run),
            self._followed(member, conversation_id, run.id, None, run),
        )

    async def wait(
        self, member: Member, conversation_id: str, run_id: str, *, within: float
    ) -> RunResult | None:
        """The run once it has ended, as `member`; `None` when it is still going after
        `within` seconds (0 < within <= `MAX_WAIT`)."""
        check_wait(within)
        live = self._runs.get(run_id) if isinstance(run_id, str) else None
        await self._run_record(member, conversation_id, run_id)
        context = self._context
        outcome: RunOutcome | None = None
        ending: list[AgentMessage] = []  # what a result is made of, for a run elsewhere
        with anyio.move_on_after(within):
            if live is not None:
                outcome = await live.wait()
            else:
                # Executed by another process sharing the store (its events relayed
                # live), or ended and no longer kept: its log, to its end.
                async for entry in context.runtime.follow(
                    run_id, poll_interval=context.poll_interval
                ):
                    if type(entry.event) is not TextDelta:
                        ending.append(entry.event)
                    if isinstance(entry.event, TurnEnd):
                        break
        if outcome is None and not (ending and isinstance(ending[-1], TurnEnd)):
            return None  # still going
        await self._run_record(member, conversation_id, run_id)  # still readable by them
        if outcome is not None:
            return result_of_outcome(conversation_id, outcome)
        return result_of_events(conversation_id, run_id, ending, None)

    async def _interrupt(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        options: dict[str, Any],
        replace_turn: str | None,
    ) -> Run | None:
        """Cancel the running run (wherever it runs), then start, before anything queued
        (this process starts nothing queued meanwhile); a run started by another prompt
        meanwhile is cancelled too, twice at most, then busy."""
        with self.queue.held(conversation_id):
            for _ in range(3):
                await self.cancel(member, conversation_id)
                try:
                    return await self._start(
                        member, conversation_id, text, options, replace_turn=replace_turn
                    )
                except ConversationBusyError:
                    continue
        raise _busy(conversation_id)

    async def _checked(
        self, agent_id: str, text: str, options: dict[str, Any]
    ) -> tuple[list[str], Any]:
        """A prompt's attachments (checked paths) and the spec its options make."""
        if not isinstance(text, str):
            raise ConversationError("a prompt's text must be a string")
        attachments = options.get("attachments") or ()
        if isinstance(attachments, str):
            raise AttachmentError("attachments is a list of paths, not one string")
        paths = check_attachments(list(attachments), self._context.attachment_roots)
        if not text.strip() and not paths:
            raise ConversationError("a prompt needs text or an attachment")
        try:
            spec = run_spec(
                await self._agents.spec_of(agent_id),
                options.get("effort"),
                options.get("outputSchema"),
            )
        except SpecError as exc:
            raise ConversationError(f"the prompt's options are not valid: {exc}") from None
        return paths, spec

    async def _start_queued(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        options: dict[str, Any],
        run_id: str,
        still_queued: Callable[[], Awaitable[bool]],
    ) -> Run | None:
        return await self._start(
            member, conversation_id, text, options, run_id=run_id, still_queued=still_queued
        )

    async def _start(
        self,
        member: Member,
        conversation_id: str,
        text: str,
        options: dict[str, Any],
        *,
        replace_turn: str | None = None,
        run_id: str | None = None,
        still_queued: Callable[[], Awaitable[bool]] | None = None,
    ) -> Run | None:
        """Start a run as `member` (checked now); `ConversationBusyError` when one is
        going. A queued prompt's (`run_id`) starts only if `still_queued` says so under
        the conversation's lock (else `None`)."""
        context = self._context
        store = context.store
        # A store that reads a conversation's state in one statement (PostgreSQL) reads
        # the session with it, under the lock.
        read_state = getattr(store, "conversation_state", None)
        async with context.changes.lock(conversation_id):
            _, session, record, meta = await self._access.writable(
                member, conversation_id, "prompt", fresh_session=read_state is None
            )
            paths, spec = await self._checked(record.agent_id, text, options)
            if read_state is not None:
                state = await read_state(conversation_id)
                if state is None:  # deleted meanwhile
                    raise ConversationNotFoundError(conversation_id)
                session, stored_runs, length, last = state
                meta = ConversationMeta.from_metadata(session.metadata)
            else:
                stored_runs = await store.list_runs(conversation_id)
                transcript = await store.load_transcript(conversation_id)
                length, last = len(transcript), transcript[-1] if transcript else None
            runs = [run for run in stored_runs if run.id not in meta.dropped]
            if any(run.status in GOING for run in runs):  # waiting for a person too
                raise _busy(conversation_id)
            if still_queued is not None and not await still_queued():
                return None
            if replace_turn is not None:
                length = await self._drop_from(conversation_id, meta, runs, replace_turn)
            else:
                length += await self._repair(conversation_id, meta, runs, length, last)
            try:
                run = await context.runtime.start(
                    spec,
                    text,
                    session_id=conversation_id,
                    context_suffix=record.instructions,
                    thread_context={"attachments": paths} if paths else None,
                    run_id=run_id,
                )
            except SessionBusyError:
                raise _busy(conversation_id) from None
            except ValueError as exc:  # text that is not valid Unicode
                raise ConversationError(str(exc)) from None
            self._keep(run)
            meta.runs[run.id] = RunEntry(run.id, length, tuple(paths), fingerprint_of(spec))
            await save_meta(store, session, meta)
        # Once it ends, however it ends, what was queued behind it starts.
        context.task_group().start_soon(self.queue.drain_after, run)
        if replace_turn is not None:  # runs were dropped: their followers lose them
            context.changes.access_changed(conversation_id)
        else:
            context.changes.changed(conversation_id)
        return run

    async def follow(
        self, member: Member, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncGenerator[FollowEvent, None]:
        """A run's output parts after offset `after`, then exactly one `FinalEvent`, as
        `member`. The access and the run are checked before this returns (a server
        answers 404 before it starts a stream), and not again while it is read."""
        if after is not None and (not isinstance(after, int) or isinstance(after, bool)):
            raise ConversationError(f"after must be an offset (an integer), not {after!r}")
        await self._run_record(member, conversation_id, run_id)
        return self._followed(member, conversation_id, run_id, after, None)

    def _followed(
        self, member: Member, conversation_id: str, run_id: str, after: int | None, run: Run | None
    ) -> AsyncGenerator[FollowEvent, None]:
        """`follow`'s events once the access is checked: of `run` (one this machine
        started) when given, else wherever the run is."""
        context = self._context
        checked_at, checked_state = time.monotonic(), self._access_state(conversation_id)

        async def allowed() -> None:
            # Checked against the store when something this process changed could
            # refuse the reader (the conversation's visibility, its deletion, a dropped
            # run, a member), and at least every `_RECHECK_AFTER` seconds for what other
            # processes change; a run's progress alone changes no access.
            nonlocal checked_at, checked_state
            now, state = time.monotonic(), self._access_state(conversation_id)
            if state == checked_state and now - checked_at < _RECHECK_AFTER:
                return
            await self._run_record(member, conversation_id, run_id)
            checked_at, checked_state = now, state

        return guarded(
            follow_run(context.runtime, run_id, after, context.poll_interval, run),
            allowed,
            lambda: context.changes.signal(conversation_id),
            context.task_group(),
        )

    async def cancel(self, member: Member, conversation_id: str, run_id: str | None = None) -> bool:
        """Cancel the conversation's running run as `member` (with `run_id`: only if it is
        that run); returns once it has ended, `False` when no such run was going."""
        _, _, _, meta = await self._access.writable(member, conversation_id, "cancel runs")
        if run_id is not None:
            await self._check_run(conversation_id, meta, run_id)
        active = await active_run(self._context.store, conversation_id)
        if active is None or (run_id is not None and active.id != run_id):
            return False
        run = self._context.runtime.get_run(active.id)
        if run is None and active.status == "waiting":
            # It waits for a person and runs nowhere: its request is withdrawn here
            # (recorded as denied, "the run was cancelled") and it ends here, cancelled.
            run = await self.decisions.withdraw(conversation_id, active.id)
        if run is None:
            # Executed by another process sharing the store, or by one that died.
            return await self._cancel_elsewhere(active.id)
        await self._stop(run)
        return True

    async def readable(self, member: Member, session_id: str) -> bool:
        """Whether `member` may read the runs of session `session_id`: a conversation's
        when it sees the conversation (owners included: private means private); any other
        session's (command-line runs, room agents') when it is an owner."""
        return await self._access.session_readable(member, session_id)

    async def list(
        self,
        member: Member,
        *,
        session_id: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[RunRecord]:
        """A page of the runs `member` may read (see `readable`), newest first; only
        session `session_id`'s when given."""
        current = await self._access.member(member)
        size = check_limit(limit)
        records = await self._context.store.list_readable_runs(
            current.id,
            others=current.role == "owner",
            session_id=session_id,
            after=decode_key(cursor, "runs"),
            limit=size + 1,
        )
        return page_of(records, size, "runs", record_key, lambda record: record)

    async def interrupt_executing(self) -> None:
        """End every run this machine executes as a crash would, but at once (see
        `Machine.interrupt_runs`); returns once every one has ended and been stored."""
        self.queue.closing = True  # what is queued waits for the next start
        running = [run for run in self._runs.values() if not run.done]
        async with anyio.create_task_group() as group:
            for run in running:
                group.start_soon(self._stop, run, INTERRUPTED_REASON)

    def cancel_executing(self) -> None:
        """Cancel every run this machine executes, without waiting for their end (the
        machine closes: it does not wait for a model that may never answer)."""
        self.queue.closing = True
        for run in list(self._runs.values()):
            run.cancel()
        self._runs.clear()

    async def serve_cancel_requests(self) -> None:
        """Stop the runs this machine executes when another process sharing the store
        asks (the asker checked the member's rights); runs until cancelled."""
        group = self._context.task_group()
        notifications = self._context.runtime.notifications
        with await notifications.subscribe(_CANCEL_TOPIC) as requests:
            while True:
                await requests.wait(3600.0)
                _, run_ids = requests.take()
                for run_id in run_ids:
                    run = self._runs.get(run_id)
                    if run is not None and not run.done and run_id not in self._stopping:
                        self._stopping.add(run_id)
                        group.start_soon(self._stop_for_another, run)

    def _went_on(self, run: Run) -> None:
        """A run goes on here after a person's decision: kept with this machine's runs,
        and what is queued behind it starts once it ends."""
        kept = self._runs.get(run.id)
        if kept is run:
            return  # this machine started it: its `drain_after` waits for it already
        self._keep(run)
        self._context.task_group().start_soon(self.queue.drain_after, run)

    def _keep(self, run: Run) -> None:
        if len(self._runs) >= _KEPT_RUNS:
            for run_id in [key for key, kept in self._runs.items() if kept.done]:
                del self._runs[run_id]
        self._runs[run.id] = run

    def _access_state(self, conversation_id: str) -> tuple[int, int]:
        """What changes when this process changes who may read the conversation's runs."""
        return (
            self._context.changes.access_version(conversation_id),
            self._access.members.changes,
        )

    async def _run_record(self, member: Member, conversation_id: str, run_id: str) -> None:
        _, _, _, meta = await self._access.visible(member, conversation_id)
        # A run this machine started (kept a while past its end): its session is known
        # without a read.
        live = self._runs.get(run_id) if isinstance(run_id, str) else None
        if live is not None:
            if live.session_id != conversation_id or run_id in meta.dropped:
                raise RunNotFoundError(f"conversation {conversation_id!r} has no run {run_id!r}")
            return
        await self._check_run(conversation_id, meta, run_id)

    async def _check_run(
        self, conversation_id: str, meta: ConversationMeta, run_id: str
    ) -> RunRecord:
        """The run, when it is one of the conversation's and not dropped."""
        store = self._context.store
        record = await store.get_run(run_id) if isinstance(run_id, str) else None
        if record is None or record.session_id != conversation_id or run_id in meta.dropped:
            raise RunNotFoundError(f"conversation {conversation_id!r} has no run {run_id!r}")
        return record

    async def _drop_from(
        self,
        conversation_id: str,
        meta: ConversationMeta,
        runs: builtins.list[RunRecord],
        replace_turn: str,
    ) -> int:
        """Drop the user turn `replace_turn` and every turn after it; returns the length
        the transcript is cut to."""
        index = next(
            (i for i, run in enumerate(runs) if user_turn_id(run.id) == replace_turn), None
        )
        entry = meta.runs.get(runs[index].id) if index is not None else None
        if index is None or entry is None:
            raise TurnNotFoundError(
                f"conversation {conversation_id!r} has no user turn {replace_turn!r}"
            )
        await self._context.store.truncate_transcript(conversation_id, entry.transcript_start)
        for run in runs[index:]:
            meta.dropped.append(run.id)
            meta.runs.pop(run.id, None)
            meta.partials.pop(run.id, None)
        return entry.transcript_start

    async def _repair(
        self,
        conversation_id: str,
        meta: ConversationMeta,
        runs: builtins.list[RunRecord],
        length: int,
        last_message: Message | None,
    ) -> int:
        """Make the transcript show what the last run's turns show when it did not
        complete (the engine saves a step only once it has finished): its prompt, and
        what it had streamed. Returns how many messages were appended."""
        if not runs or runs[-1].status == "completed":
            return 0
        last = runs[-1]
        entry = meta.runs.get(last.id)
        if entry is None:
            return 0
        store = self._context.store
        partial = meta.partials.get(last.id, "")
        added: builtins.list[Message] = []
        if length == entry.transcript_start:
            events = await store.read_events(last.id, -1)
            prompt = ""
            if events and isinstance(events[0].event, TurnStart):
                prompt = events[0].event.user_prompt
            if entry.attachments:
                shown = json.dumps({"attachments": list(entry.attachments)}, ensure_ascii=False)
                prompt = f"<thread_context>\n{shown}\n</thread_context>\n\n{prompt}"
            if last.status == "interrupted":
                why = "the run was cancelled"
            elif last.error == INTERRUPTED_REASON:
                why = "the run was interrupted"
            else:
                why = f"the run failed: {last.error or 'unknown error'}"
            added = [
                UserMessage(content=prompt),
                AssistantMessage(text=partial or f"(no answer: {why})"),
            ]
        elif partial and not isinstance(last_message, AssistantMessage):
            added = [AssistantMessage(text=partial)]
        if added:
            await store.append_transcript(conversation_id, added)
        return len(added)

    async def _cancel_elsewhere(self, run_id: str) -> bool:
        """Ask the process executing a run to stop it, and wait for its end.

        The request goes through the store's notifications, again every poll interval
        until the run has ended (a notification may be lost); a process that died no
        longer answers, and its run ends when its lease expires, which bounds the wait.
        Without shared notifications (SQLite) no other process can be reached: `False`.
        """
        context = self._context
        runtime = context.runtime
        notifications = runtime.notifications
        if not notifications.shared:
            return False
        bound = runtime.lease_duration + 2 * runtime.heartbeat_interval
        ended_seen = False
        stopped = f"stopped:{run_id}"
        with await notifications.subscribe(f"run:{run_id}", stopped) as changes:
            with anyio.move_on_after(bound):
                while stopped not in changes.notified:
                    changes.take()
                    await notifications.publish([f"{_CANCEL_TOPIC}\n{run_id}"])
                    record = await context.store.get_run(run_id)
                    if record is None or record.status not in GOING:
                        # Ended: the owner says so once it has kept what the run
                        # streamed; a run ended otherwise (its process died) gets one
                        # more look.
                        if ended_seen:
                            break
                        ended_seen = True
                    await changes.wait(context.poll_interval)
        record = await context.store.get_run(run_id)
        if record is not None:
            context.changes.changed(record.session_id)
        return record is None or record.status not in GOING

    async def _stop_for_another(self, run: Run) -> None:
        try:
            await self._stop(run)
            await self._context.runtime.notifications.publish([f"stopped:{run.id}"])
        finally:
            self._stopping.discard(run.id)

    async def fingerprint(self, run: RunRecord) -> str | None:
        """The v2 fingerprint of the definition file `run`'s agent was bound from (a
        conversation's run, or one of `agentkit run` on the same store), if it was."""
        session = await self._context.store.get_session(run.session_id)
        if session is None:
            return None
        entry = ConversationMeta.from_metadata(session.metadata).runs.get(run.id)
        if entry is not None:
            return entry.fingerprint
        record = session.metadata.get("definition")
        value = record.get("fingerprint") if isinstance(record, dict) else None
        return value if isinstance(value, str) else None

    async def _stop(self, run: Run, reason: str | None = None) -> None:
        """Stop a run this machine executes and wait for its end; the text it had
        streamed since its last complete part is kept with the conversation."""
        context = self._context
        run.cancel(reason=reason)
        outcome = await run.wait()
        partial = await _streamed(run)
        stopped = outcome.status == "interrupted" or outcome.error == INTERRUPTED_REASON
        if partial and stopped:
            async with context.changes.lock(run.session_id):
                session = await context.store.get_session(run.session_id)
                if session is not None and await context.store.get_conversation(run.session_id):
                    meta = ConversationMeta.from_metadata(session.metadata)
                    meta.partials[run.id] = partial
                    await save_meta(context.store, session, meta)
        context.changes.changed(run.session_id)


def _busy(conversation_id: str) -> ConversationBusyError:
    return ConversationBusyError(
        f"conversation {conversation_id!r} has a run going: wait for it to end or cancel it"
    )


async def _streamed(run: Run) -> str:
    """The text a run had streamed since its last complete part (its log is in memory)."""
    buffer = OutputBuffer()
    async for entry in run.entries():
        part = part_of(entry.event)
        if part is not None:
            buffer.add(part)
    return buffer.streamed


def _accepted(conversation_id: str, run: Run) -> PromptAccepted:
    return PromptAccepted(
        conversation_id=conversation_id, run_id=run.id, turn_id=user_turn_id(run.id)
    )
