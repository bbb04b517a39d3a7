"""A run: one user turn of one agent, as an append-only event log, and how it ends.

[`Run`][agentkit.runtime.Run] and [`RunOutcome`][agentkit.runtime.RunOutcome] are public
through `agentkit.runtime`. The ending is written here in two steps: `write_ending` emits
the final block (`result` or `error`, then `turn_end`) and sets the outcome, and
`record_ending` stores that block with the run's status in one transaction.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, cast

import anyio
from typing_extensions import TypeVar

from agentkit._internal import aio as _aio
from agentkit.engine._text_safety import _text_safe
from agentkit.engine._trusted import _result, _turn_end
from agentkit.engine._turns import TurnOutcome, TurnRequest
from agentkit.events import Accounting, AgentMessage, ErrorEvent, TextDelta, TurnStatus
from agentkit.runtime._log import RunLog
from agentkit.spec import AgentSpec
from agentkit.stores import EventEntry, Store

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Run",
    "RunOutcome",
    "elapsed_ms",
    "failed",
    "new_id",
    "new_uuid",
    "record_ending",
    "write_ending",
]

_logger = logging.getLogger("agentkit.runtime")

_UNSET: Any = object()  # `RunOutcome.output` not given: the text, or the payload

_ENDING_ATTEMPTS = 5
_ENDING_RETRY_DELAY = 0.1
"""Recording a run's end is tried 5 times, 0.1, 0.3, 0.9 and 2.7 s apart."""


def new_id() -> str:
    """A random 128-bit id as 32 hex digits (like `uuid4().hex`, at a fraction of the cost)."""
    return os.urandom(16).hex()


def new_uuid() -> str:
    """A random version-4 UUID in its canonical text form, without the `uuid` machinery."""
    h = os.urandom(16).hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:]}"


def elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


def failed(request: TurnRequest, error: str) -> TurnOutcome:
    """An error outcome for a turn that did not end by itself, with what it used so far."""
    progress = request.progress
    used = progress.accounting if progress is not None else Accounting(models=dict(request.usage))
    # An exception's message may hold a lone surrogate (a file name that is not UTF-8).
    return TurnOutcome(status="error", error=_text_safe(error), accounting=used)


OutputT = TypeVar("OutputT", default=Any)


@dataclass(frozen=True)
class RunOutcome(Generic[OutputT]):
    """How a run ended.

    Attributes:
        status: `completed`, `interrupted` or `error`.
        text: The `result` content (for structured output, the payload as JSON text).
        payload: The accepted structured output, when the agent has an output schema.
        error: The `error` block's message, when the run did not complete.
        accounting: Tokens per model, model calls, tool calls, denials, cost.
        output: What the run answered: the structured output when the agent has an
            output schema, else the text; through [`Agent`][agentkit.agent.Agent] with an
            `output_type`, the validated instance of that type (`RunOutcome[Forecast]`).
    """

    run_id: str
    session_id: str
    status: TurnStatus
    text: str = ""
    payload: Any = None
    error: str | None = None
    accounting: Accounting = field(default_factory=Accounting)
    output: OutputT = field(default=cast(Any, _UNSET))

    def __post_init__(self) -> None:
        if self.output is _UNSET:
            object.__setattr__(self, "output", self.text if self.payload is None else self.payload)

    @property
    def ok(self) -> bool:
        """Whether the run completed."""
        return self.status == "completed"


class Run:
    """One user turn of one agent, as an append-only event log.

    Obtain runs from [`Runtime.start`][agentkit.runtime.Runtime.start].
    """

    def __init__(
        self,
        *,
        run_id: str,
        turn_id: str,
        session_id: str,
        spec: AgentSpec,
        prompt: str,
        working_dir: Path,
        native: bool = False,
    ) -> None:
        self.id = run_id
        self.turn_id = turn_id
        self.session_id = session_id
        self.spec = spec
        self.prompt = prompt
        self.working_dir = working_dir
        # On asyncio the run's signals are asyncio's own events (a fraction of the cost of
        # anyio's wrappers); elsewhere anyio's. Both are made only when someone waits.
        self._new_event: Callable[[], Any] = _aio.event_class() if native else anyio.Event
        self._log = RunLog(self._new_event)
        self._ended = False
        self._ended_signal: anyio.Event | asyncio.Event | None = None
        self._cancel_requested = False
        self._stop_reason: str | None = None  # cancel(reason=...): ends as an error
        self._scope: anyio.CancelScope | None = None
        self._task: Any = None  # the asyncio task running it (kept alive), on asyncio
        self._outcome: RunOutcome | None = None
        self._unsaved: list[int] = []  # offsets of events not yet in the store
        # Where the engine's events also go when they are relayed to other processes.
        self._relay: Callable[[str, int, AgentMessage | str], None] | None = None

    def __repr__(self) -> str:
        return f"<Run {self.id} agent={self.spec.id} done={self.done}>"

    @property
    def done(self) -> bool:
        """Whether the run has ended (its last event, `turn_end`, is written)."""
        return self._ended

    @property
    def outcome(self) -> RunOutcome | None:
        """The outcome once the run has ended, else `None`."""
        return self._outcome

    def __len__(self) -> int:
        return len(self._log)

    def events(self, after: int = -1) -> AsyncIterator[AgentMessage]:
        """Every event after offset `after` (all by default): replayed, then followed live
        until the run ends. Offsets count events from 0, `text_delta` included."""
        return self._log.events(after)

    def entries(self, after: int = -1) -> AsyncIterator[EventEntry]:
        """Like [`events`][agentkit.runtime.Run.events], with each event's offset (for
        resumable readers such as an SSE endpoint's `Last-Event-ID`)."""
        return self._log.entries(after)

    def cancel(self, *, reason: str | None = None) -> None:
        """Ask the run to stop; it ends with `turn_end.status == "interrupted"`.

        Args:
            reason: When given, the run ends as an `error` with this message instead: the
                host stopped it rather than its user (a server shutting down ends its runs
                as a crash would, with `INTERRUPTED_REASON`, but at once).
        """
        self._cancel_requested = True
        if reason is not None and self._stop_reason is None:
            self._stop_reason = reason
        if self._scope is not None:
            self._scope.cancel()

    async def wait(self) -> RunOutcome:
        """Wait for the run to end and return its outcome."""
        if not self._ended:
            if self._ended_signal is None:
                self._ended_signal = self._new_event()
            await self._ended_signal.wait()
        assert self._outcome is not None
        return self._outcome

    def _end(self) -> None:
        self._ended = True
        self._task = None  # a finished run keeps its events, not its task
        try:
            self._log.close()
        finally:
            if self._ended_signal is not None:
                self._ended_signal.set()

    def _emit(self, event: AgentMessage) -> None:
        offset = self._log.append(event)
        if type(event) is not TextDelta:
            self._unsaved.append(offset)

    def _emit_relayed(self, event: AgentMessage) -> None:
        """`_emit`, and the event relayed live (see `agentkit.runtime._relay`)."""
        offset = self._log.append(event)
        if type(event) is not TextDelta:
            self._unsaved.append(offset)
        assert self._relay is not None
        self._relay(self.id, offset, event)

    def _delta_relayed(self, content: str) -> None:
        """A text delta appended to the log, and relayed live."""
        self._log.append_delta(content)
        assert self._relay is not None
        self._relay(self.id, len(self._log) - 1, content)

    def _take_unsaved(self) -> list[EventEntry]:
        """Entries for the store of the events not saved yet; each event is encoded once:
        the log keeps the bytes from now on, and the store gets them with the event."""
        batch, self._unsaved = self._unsaved, []
        return self._log.saved(batch)

    async def _save_unsaved(self, write: Callable[[list[EventEntry]], Awaitable[Any]]) -> None:
        """Give the events not saved yet to `write` (a store call); should it fail, they are
        kept, in order, for the next attempt."""
        entries = self._take_unsaved()
        try:
            await write(entries)
        except BaseException:
            self._unsaved[:0] = [entry.offset for entry in entries]
            raise


def write_ending(
    run: Run,
    request: TurnRequest,
    outcome: TurnOutcome | None,
    interrupted: bool,
    started: float,
    price: Callable[[Accounting], Accounting],
) -> None:
    """Emit the run's `result` or `error` and its `turn_end`, and set its outcome."""
    if interrupted or outcome is None:
        outcome = failed(request, "the run was interrupted")
    try:
        accounting = price(outcome.accounting)
    except Exception:
        # A host's estimator that fails leaves the run unpriced, not unfinished.
        _logger.exception("could not price run %s", run.id)
        accounting = outcome.accounting
    status: TurnStatus
    if interrupted:
        status = "interrupted"
    elif outcome.status == "completed":
        status = "completed"
    else:
        status = "error"
    error = None if status == "completed" else _text_safe(outcome.error or "the run failed")
    if error is None:
        run._emit(_result(outcome.text, accounting))
    else:
        run._emit(ErrorEvent(error=error, accounting=accounting))
    run._emit(_turn_end(run.turn_id, status, elapsed_ms(started)))
    run._outcome = RunOutcome(
        run_id=run.id,
        session_id=run.session_id,
        status=status,
        text=outcome.text if status == "completed" else "",
        payload=outcome.payload,
        error=error,
        accounting=accounting,
    )


async def record_ending(run: Run, store: Store, owner: str) -> None:
    """Store the run's last events and its status in one transaction, retrying while
    the store fails. Should it keep failing, the run is left to the lease sweep, which
    ends it as interrupted once its lease (no longer renewed) expires."""
    outcome = run._outcome
    assert outcome is not None
    entries = run._take_unsaved()
    delay = _ENDING_RETRY_DELAY
    for attempt in range(1, _ENDING_ATTEMPTS + 1):
        try:
            recorded = await store.finish_run(
                run.id,
                outcome.status,
                time.time(),
                events=entries,
                error=outcome.error,
                owner=owner,
            )
        except Exception as exc:
            # A failing store must not take the runtime (and every other run) down;
            # it is said in one line, with no traceback for what is not a bug here.
            if attempt == _ENDING_ATTEMPTS:
                _logger.error(
                    "could not record the end of run %s (%s: %s); it will be ended as "
                    "interrupted once its lease expires",
                    run.id,
                    type(exc).__name__,
                    exc,
                    extra={"cause": exc},  # for handlers that act on it (the CLI)
                )
                return
            await anyio.sleep(delay)
            delay *= 3
        else:
            if not recorded:
                _logger.warning(
                    "run %s was no longer running in the store when it ended "
                    "(another runtime ended it after its lease expired)",
                    run.id,
                )
            return
