"""LLM room agents: an `AgentSpec` (Python, app YAML or a Markdown definition) answering
room events through the core's runtime and engine. No second agent loop: each selected
event is one run of the core.

The room is the agent's memory, not a growing transcript: each run is given a bounded
window of the room's recent events (readable to the agent) before the event it answers,
optionally preceded by a running summary of the events that left the window. So the
model's request stays the same size on the 40th event as on the 4th."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio

from agentkit.rooms._models import (
    EventInput,
    RoomAgentDescriptor,
    RoomAgentRequest,
    StartPolicy,
)
from agentkit.spec import AgentSpec
from agentkit.stores import RoomEvent, SessionExistsError

if TYPE_CHECKING:
    from agentkit.runtime import Run, RunOutcome, Runtime

__all__ = ["CHARS_PER_TOKEN", "SUMMARY_METADATA_KEY", "Overflow", "SpecRoomAgent", "default_prompt"]

Overflow = Literal["drop", "summarize"]
"""What becomes of the room events that leave an LLM room agent's window: `drop`, they are
no longer shown to the model; `summarize`, they are folded into a running summary that is."""

CHARS_PER_TOKEN = 4
"""How `window_tokens` estimates tokens: 4 characters of text per token (about right for
English with the common tokenizers; no tokenizer is run)."""

SUMMARY_METADATA_KEY = "roomSummary"
"""Where a summarising agent keeps its running summary: this key of its session's
metadata, `{"text": <the summary>, "upTo": <the last position it covers>}`."""

_MAX_WINDOW = 1000  # the most events one read of the room returns
_LOOKBACK = 10_000  # how many positions before an event its window is looked for in
_CANCEL_GRACE = 5.0  # seconds a cancelled run is given to end before the next one starts


def default_prompt(event: RoomEvent) -> str:
    """`<author> (<type>): <text>`; the payload's `text` when it has one, else its JSON."""
    payload = event.payload
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        body = payload["text"]
    else:
        body = json.dumps(payload, ensure_ascii=False)
    return f"{event.author} ({event.type}): {body}"


class SpecRoomAgent:
    """A room agent backed by an `AgentSpec`: for each selected event it runs the spec
    on the host's runtime and publishes the answer as one `publish_type` event
    (`{"text": ..., "reply_to": <position>}`, or the structured output when the spec has
    an output schema). It takes delegations too: the task is the prompt (JSON when it is
    not text) and the result is the answer.

    Each run gets a bounded context: the summary of older events (with
    `overflow="summarize"`), then the last `window` events readable to the agent before
    the triggering event (its own answers included when its read grants cover them), one
    line each, then the event to answer (or the delegated task), marked as such. Runs
    happen in one session per agent and room, `room-agent:<room>:<agent>`, whose
    transcript is emptied before each run: every run's model request holds this one
    prompt, however long the room.

    Args:
        spec: The agent.
        id: Its id in rooms (default: the spec's id made lowercase, other characters `-`).
        selects: Type patterns that trigger it.
        read: Type patterns it may read (default: `selects`).
        publish_type: The type of its answers.
        include_agent_events: Whether other agents' events trigger it.
        start: `current` or `persisted`.
        handler_timeout: Seconds one answer may take (a summarisation run included).
        prompt: Turns an event into its line of the prompt (default: `default_prompt`).
        window: At most this many events before the triggering one are given as context
            (1 to 1000). They are looked for in the 10,000 positions before it.
        window_tokens: When set, the window is also cut, oldest events first, so that its
            lines stay under about this many tokens (estimated as `CHARS_PER_TOKEN`
            characters per token). The summary and the event to answer come on top.
        overflow: What becomes of the events that leave the window: `drop` (the default)
            or `summarize`: a separate run of the same spec (without its output schema)
            folds the events that left since the last summary into it, and the summary is
            given before the window. It is kept in the session's metadata under
            `SUMMARY_METADATA_KEY`. A summarisation run takes at most the 1000 positions
            before the window, cut to `window_tokens` like the window (what is older or cut
            is dropped); a failed one fails the event (it is summarised at the next).

    Raises:
        ValueError: `window`, `window_tokens` or `overflow` is out of range.
    """

    def __init__(
        self,
        spec: AgentSpec,
        *,
        id: str | None = None,
        selects: Sequence[str] = ("chat.message",),
        read: Sequence[str] | None = None,
        publish_type: str = "chat.message",
        include_agent_events: bool = False,
        start: StartPolicy = "current",
        handler_timeout: float = 300.0,
        prompt: Callable[[RoomEvent], str] = default_prompt,
        window: int = 20,
        window_tokens: int | None = None,
        overflow: Overflow = "drop",
    ) -> None:
        if not _is_int(window) or not 1 <= window <= _MAX_WINDOW:
            raise ValueError(f"window must be an integer from 1 to {_MAX_WINDOW}, not {window!r}")
        if window_tokens is not None and (not _is_int(window_tokens) or window_tokens < 1):
            raise ValueError(
                f"window_tokens must be a positive integer or None, not {window_tokens!r}"
            )
        if overflow not in ("drop", "summarize"):
            raise ValueError(f"overflow must be 'drop' or 'summarize', not {overflow!r}")
        self.spec = spec
        self.publish_type = publish_type
        self.prompt = prompt
        self.window = window
        """At most this many events before the triggering one are given as context."""
        self.window_tokens = window_tokens
        """The window's budget in estimated tokens, if any."""
        self.overflow: Overflow = overflow
        """What becomes of the events that leave the window."""
        # Summaries are text: a spec with an output schema would be made to submit its
        # structured output instead. Same id, so it runs in the agent's own session.
        self._summarizer = (
            spec.model_copy(update={"output_schema": None}) if spec.output_schema else spec
        )
        self.descriptor = RoomAgentDescriptor(
            id=id or re.sub(r"[^a-z0-9_.-]+", "-", spec.id.lower()).strip("-.")[:100] or "agent",
            description=spec.description or "",
            read=tuple(read if read is not None else selects),
            publish=(publish_type,),
            selects=tuple(selects),
            include_agent_events=include_agent_events,
            start=start,
            handler_timeout=handler_timeout,
        )

    def __repr__(self) -> str:
        return f"<SpecRoomAgent {self.descriptor.id} ({self.spec.id})>"

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        """Answer the triggering event: one `publish_type` event."""
        event = request.event
        marked = f"The event to answer:\n{self._line(event)}"
        value = await self._answer(request, marked, self.prompt(event))
        payload = (
            value
            if self.spec.output_schema
            else {
                "text": value,
                "reply_to": event.position,
            }
        )
        return [EventInput(type=self.publish_type, payload=payload)]

    async def delegate(self, request: RoomAgentRequest) -> Any:
        """Do a delegated task (`request.task`), with the room's events before the
        delegation's request as context; the answer is the result."""
        task = request.task
        text = task if isinstance(task, str) else json.dumps(task, ensure_ascii=False)
        marked = f"The task {request.event.author} delegated to you:\n{text}"
        return await self._answer(request, marked, text)

    def _line(self, event: RoomEvent) -> str:
        return f"[{event.position}] {self.prompt(event)}"

    async def _answer(self, request: RoomAgentRequest, marked: str, alone: str) -> Any:
        """Run the spec on the context and `marked` (just `alone` when there is no
        context) and return its answer."""
        runtime = request.runtime
        if runtime is None:
            raise RuntimeError("an LLM room agent needs a host with a runtime (Rooms(runtime=...))")
        session_id = f"room-agent:{request.room_id}:{self.descriptor.id}"
        if await runtime.store.get_session(session_id) is None:
            # Another process's worker of this agent may make it first.
            with contextlib.suppress(SessionExistsError):
                await runtime.create_session(self.spec, session_id=session_id)
        window = await self._window(request)
        lines = self._fit([self._line(e) for e in window])
        first = window[len(window) - len(lines)].position if lines else request.event.position
        summary = None
        if self.overflow == "summarize":
            summary = await self._summarize(request, runtime, session_id, first)
        parts = []
        if summary:
            parts.append(f"Summary of the room before position {first}:\n{summary}")
        if lines:
            parts.append("The room's latest events before it, oldest first:\n" + "\n".join(lines))
        prompt = "\n\n".join([*parts, marked]) if parts else alone
        outcome = await self._run(request, runtime, self.spec, session_id, prompt)
        return outcome.payload if self.spec.output_schema else outcome.text

    async def _window(self, request: RoomAgentRequest) -> list[RoomEvent]:
        """The last `window` events readable to the agent before the triggering one,
        oldest first, looked for backwards in blocks of positions growing to 1000."""
        found: list[RoomEvent] = []
        high = request.event.position - 1
        floor = max(0, high - _LOOKBACK)
        span = self.window
        while high > floor and len(found) < self.window:
            low = max(floor, high - span)
            # A block of `high - low` positions holds at most that many events; the read
            # may return some after it, which later blocks do not want.
            page = await request.read(low, None, high - low)
            found[:0] = [e for e in page if e.position <= high]
            high = low
            span = min(span * 2, _MAX_WINDOW)
        return found[-self.window :]

    def _fit(self, lines: list[str]) -> list[str]:
        """The newest of `lines` whose text stays within `window_tokens` (all without)."""
        if self.window_tokens is None:
            return lines
        budget = self.window_tokens * CHARS_PER_TOKEN
        kept = 0
        for line in reversed(lines):
            budget -= len(line) + 1  # and its newline
            if budget < 0:
                break
            kept += 1
        return lines[len(lines) - kept :]

    async def _summarize(
        self, request: RoomAgentRequest, runtime: Runtime, session_id: str, first: int
    ) -> str | None:
        """The running summary, brought up to the events before position `first` (the
        window's first) by one run over the ones that left the window since."""
        session = await runtime.store.get_session(session_id)
        stored = session.metadata.get(SUMMARY_METADATA_KEY) if session is not None else None
        text: str | None = None
        covered = 0
        if isinstance(stored, dict):
            if isinstance(stored.get("text"), str):
                text = stored["text"]
            if _is_int(stored.get("upTo")):
                covered = stored["upTo"]
        last = first - 1  # the newest position that has left the window
        start = max(covered, last - _MAX_WINDOW)
        if last <= start:
            return text  # nothing left the window since the summary was made
        page = await request.read(start, None, last - start)
        lines = self._fit([self._line(e) for e in page if e.position <= last])
        if lines:
            before = (
                f"The summary so far (up to position {covered}):\n{text}"
                if text
                else "There is no summary yet."
            )
            prompt = (
                f"You keep a running summary of the room {request.room_id} for yourself: it "
                "reminds you of the events that no longer fit in what you are shown of the "
                f"room.\n\n{before}\n\nEvents since, oldest first:\n"
                + "\n".join(lines)
                + "\n\nWrite the updated summary: short, keeping who said what, decisions, "
                "open questions and facts you may need later. Answer with the summary only."
            )
            outcome = await self._run(request, runtime, self._summarizer, session_id, prompt)
            text = outcome.text.strip()
        # Read again: the session's metadata holds other keys (a definition's fingerprint),
        # and `update_session` replaces all of it.
        current = await runtime.store.get_session(session_id)
        metadata = dict(current.metadata) if current is not None else {}
        metadata[SUMMARY_METADATA_KEY] = {"text": text or "", "upTo": last}
        await runtime.store.update_session(session_id, metadata)
        return text

    async def _run(
        self,
        request: RoomAgentRequest,
        runtime: Runtime,
        spec: AgentSpec,
        session_id: str,
        prompt: str,
    ) -> RunOutcome:
        """One run of `spec` on `prompt` in the agent's session, recorded on the request.

        The transcript is emptied first rather than a new session made per run: the one
        session `room-agent:<room>:<agent>` keeps the summary in its metadata and lists
        every run the agent made in the room (the server's and the UI's way to find them),
        and no session per event piles up in the store. Nothing is lost with the
        transcript: the context is in the prompt, and each run's events (its
        `turn_start` with this prompt, its answer) are stored under its run id.
        """
        await runtime.store.truncate_transcript(session_id, 0)
        run: Run = await runtime.start(spec, prompt, session_id=session_id)
        request.record_run(run.id)
        try:
            outcome = await run.wait()
        finally:
            if not run.done:
                run.cancel()  # the handler timed out or the worker stopped
                # Let it end (briefly) so that the next run finds the session free and its
                # transcript not written to after it was emptied.
                with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_GRACE):
                    await run.wait()
        if not outcome.ok:
            raise RuntimeError(f"the agent's run {run.id} ended {outcome.status}: {outcome.error}")
        return outcome


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
