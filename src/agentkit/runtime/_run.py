"""A run: one user turn of one agent, as an append-only event log, and its lifecycle.

[`Run`][agentkit.runtime.Run] and [`RunOutcome`][agentkit.runtime.RunOutcome] are public
through `agentkit.runtime`. A run's lifecycle is here, beside it: `begin` writes its first
events, `execute` drives its turn with what the runtime lends it (a `RunExecutor`) and ends
it. The ending is written in two steps: `write_ending` emits the final block (`result` or
`error`, then `turn_end`) and sets the outcome, and `record_ending` stores that block with
the run's status in one transaction.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, cast

import anyio
from typing_extensions import TypeVar

from agentkit._internal import aio as _aio
from agentkit._internal import observe
from agentkit.engine import (
    Driver,
    Resumption,
    Suspension,
    TurnOutcome,
    TurnRequest,
    TurnResources,
    TurnTracer,
    result_event,
    session_init_event,
    text_safe,
    turn_end_event,
    turn_start_event,
)
from agentkit.events import Accounting, AgentMessage, ErrorEvent, TextDelta, TurnStatus
from agentkit.messages import Message
from agentkit.runtime._log import RunLog
from agentkit.runtime._requests import PendingRequest, pending_of, remembered_rules
from agentkit.spec import AgentSpec
from agentkit.stores import EventEntry, Store

if TYPE_CHECKING:
    import asyncio

__all__ = [
    "Run",
    "RunExecutor",
    "RunOutcome",
    "RunTrace",
    "attach_relay",
    "begin",
    "elapsed_ms",
    "execute",
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
    return TurnOutcome(status="error", error=text_safe(error), accounting=used)


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
        self._outcome: RunOutcome | None = None
        self._unsaved: list[int] = []  # offsets of events not yet in the store
        # Where the engine's events also go when they are relayed to other processes.
        self._relay: Callable[[str, int, AgentMessage | str], None] | None = None
        # While the run waits for a person: its request; and the runtime that decides.
        self._pending: PendingRequest | None = None
        self._decider: RunDecider | None = None

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

    @property
    def waiting(self) -> bool:
        """Whether the run is waiting for a person (status `waiting`): see
        [`pending_requests`][agentkit.runtime.Run.pending_requests]."""
        return self._pending is not None

    def pending_requests(self) -> list[PendingRequest]:
        """The requests the run waits on a person for (at most one at a time); empty
        while it runs or once it has ended. Another process's view of the run:
        `Runtime.pending_requests(run_id)`."""
        return [] if self._pending is None else [self._pending]

    async def decide(
        self,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
    ) -> None:
        """Decide a `permission_request` of this run: the decision is recorded as a
        `permission_decision` event and the run goes on, in the runtime that started it
        (see [`Runtime.decide`][agentkit.runtime.Runtime.decide], which this calls)."""
        await self._runtime().decide(
            self.id,
            request_id,
            allow=allow,
            message=message,
            updated_input=updated_input,
            remember=remember,
            agent=self.spec,
        )

    async def answer(self, request_id: str, answers: Any) -> None:
        """Answer a `question` of this run: the answers are recorded as an `answer` event
        and become the questionnaire tool's result (see
        [`Runtime.answer`][agentkit.runtime.Runtime.answer])."""
        await self._runtime().answer(self.id, request_id, answers, agent=self.spec)

    def _runtime(self) -> RunDecider:
        if self._decider is None:
            raise RuntimeError("this run was not started by a Runtime")
        return self._decider

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
        elif self._pending is not None and self._decider is not None:
            # Waiting for a person: its request is withdrawn and the run ends here.
            self._decider.withdraw(self)

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


class RunDecider(Protocol):
    """What a run's `decide` and `answer` call (the runtime that started it)."""

    async def decide(
        self,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
        agent: AgentSpec | None = None,
    ) -> Run: ...

    async def answer(
        self, run_id: str, request_id: str, answers: Any, *, agent: AgentSpec | None = None
    ) -> Run: ...

    def withdraw(self, run: Run) -> None:
        """End a run that waits for a person (it was cancelled), in the background."""
        ...


class RunTrace(TurnTracer, Protocol):
    """A run's telemetry, as its lifecycle uses it (the runtime's `RunTelemetry`)."""

    def enter(self) -> None:
        """The run's task starts: its span becomes the current one."""
        ...

    def end(self, outcome: RunOutcome | None) -> None:
        """The run has ended (`None`: it was not accepted)."""
        ...

    def waiting(self) -> None:
        """The run waits for a person: its task ends without an outcome."""
        ...


class RunGroupView(Protocol):
    """What a run's lifecycle needs of the group running it (the runtime's `RunGroup`)."""

    @property
    def ending_needs_shield(self) -> bool: ...

    def passes_on(self, exc: BaseException) -> bool: ...

    def crashed(self, exc: BaseException) -> None: ...


@dataclass(frozen=True)
class RunExecutor:
    """What a run borrows from the runtime that executes it, and nothing else of it.

    Attributes:
        store: Where the run's transcript, events and ending are stored.
        owner: The executing runtime's id, recorded with the ending.
        group: The task group of the runtime's runs.
        driver_for: The driver of a spec (raises `NoDriverError` when there is none).
        resources: What the run's turn may use, as the runtime is configured now.
        price: Prices a run's accounting.
        stop_processes: Stops the processes a run started (`None`: it started none).
        release: Called with the run's id once it has ended (the runtime forgets it).
        suspended: Called with a run that now waits for a person (its task has ended).
        request_timeout: Seconds a request to a person waits before it ends as denied.
    """

    store: Store
    owner: str
    group: RunGroupView
    driver_for: Callable[[AgentSpec], Driver]
    resources: Callable[[], TurnResources]
    price: Callable[[Accounting], Accounting]
    stop_processes: Callable[[str], Awaitable[None] | None]
    release: Callable[[str], object]
    suspended: Callable[[Run], object] = lambda run: None
    request_timeout: float | None = None


def begin(run: Run, system: str | None, trace_parent: str | None) -> list[EventEntry]:
    """Write the run's first events (`turn_start`, `session_init`) and return them for the
    store, where they are accepted with the run's record."""
    run._emit(turn_start_event(run.turn_id, run.session_id, run.prompt, trace_parent))
    run._emit(session_init_event(run.session_id, system, str(run.working_dir)))
    return run._take_unsaved()


def attach_relay(run: Run, relay: Callable[[str, int, AgentMessage | str], None]) -> None:
    """Relay the run's events live to other processes' readers, as they are written."""
    run._relay = relay


async def execute(
    run: Run,
    executor: RunExecutor,
    system: str,
    user: str,
    resumed: bool,
    depth: int,
    telemetry: RunTrace | None,
    resumption: Resumption | None = None,
    elapsed: int = 0,
) -> None:
    """The run's task: drive its turn, then end it (or suspend it, when it waits for a
    person), whatever happened. `resumption` goes on with a turn that waited, `elapsed`
    milliseconds into it."""
    started = time.monotonic() - elapsed / 1000
    if telemetry is not None:
        telemetry.enter()
    store = executor.store
    relayed = run._relay is not None
    request = TurnRequest(
        spec=run.spec,
        prompt=user,
        system_prompt=system,
        transcript=[],
        session_id=run.session_id,
        run_id=run.id,
        working_dir=run.working_dir,
        emit=run._emit_relayed if relayed else run._emit,
        emit_delta=run._delta_relayed if relayed else run._log.append_delta,
        resources=executor.resources(),
        save_messages=functools.partial(store.append_transcript, run.session_id),
        flush=functools.partial(_flush, run, store),
        save_step=functools.partial(_save_step, run, store),
        depth=depth,
        telemetry=telemetry,
        resume=resumption,
        remembered=functools.partial(remembered_rules, store, run.session_id),
        request_timeout=executor.request_timeout,
    )
    group = executor.group
    outcome: TurnOutcome | None = None
    interrupted = False
    crash: BaseException | None = None
    try:
        if run._cancel_requested:  # cancelled before its first step
            interrupted = True
        else:
            with anyio.CancelScope() as scope:
                run._scope = scope
                if resumed:
                    # Read once the run holds the session: every run before it has
                    # ended, with all it said saved.
                    request.transcript = await store.load_transcript(run.session_id)
                outcome = await executor.driver_for(run.spec)(request)
            interrupted = scope.cancelled_caught
    except anyio.get_cancelled_exc_class():
        interrupted = True
        raise
    except Exception as exc:
        outcome = failed(request, f"{type(exc).__name__}: {exc}")
    except BaseException as exc:
        # Not an error of the turn: something that must stop the program (or a bug).
        # The run still ends properly; then it goes to whoever owns the run's task.
        outcome = failed(request, f"{type(exc).__name__}: {exc}")
        if group.passes_on(exc):
            raise
        crash = exc
    finally:
        run._scope = None
        if interrupted and run._stop_reason is not None:
            # Stopped by its host (shutting down), not by its user: an error.
            interrupted, outcome = False, failed(request, run._stop_reason)
        waiting = outcome.waiting if outcome is not None and not interrupted else None
        if group.ending_needs_shield:
            with anyio.CancelScope(shield=True):
                await _end_or_wait(
                    run, executor, request, outcome, waiting, interrupted, started, telemetry
                )
        else:
            await _end_or_wait(
                run, executor, request, outcome, waiting, interrupted, started, telemetry
            )
    if crash is not None:
        group.crashed(crash)


async def _end_or_wait(
    run: Run,
    executor: RunExecutor,
    request: TurnRequest,
    outcome: TurnOutcome | None,
    waiting: Suspension | None,
    interrupted: bool,
    started: float,
    telemetry: RunTrace | None,
) -> None:
    """End the run; or, when its turn waits for a person, store it as waiting."""
    if waiting is not None:
        error = await _suspend(run, executor, waiting, started)
        if error is None:
            if telemetry is not None:
                telemetry.waiting()
            return
        outcome = failed(request, error)
    await _finish(run, executor, request, outcome, interrupted, started, telemetry)


async def _suspend(
    run: Run, executor: RunExecutor, waiting: Suspension, started: float
) -> str | None:
    """Store the run as waiting for a person (its step, its request and continuation, in
    one transaction) and let its task end; `None` once done, else why it could not."""
    state = {
        **waiting.state,
        "nextOffset": len(run._log),
        "elapsedMs": elapsed_ms(started),
    }
    entries = run._take_unsaved()
    try:
        stored = await executor.store.suspend_run(
            run.id,
            owner=executor.owner,
            messages=waiting.messages,
            events=entries,
            request_id=str(waiting.state["requestId"]),
            state=state,
            deadline=waiting.deadline,
        )
    except Exception as exc:
        run._unsaved[:0] = [entry.offset for entry in entries]
        _logger.warning("could not store run %s as waiting: %s", run.id, exc)
        return f"could not wait for a person: {type(exc).__name__}: {exc}"
    if not stored:
        run._unsaved[:0] = [entry.offset for entry in entries]
        return "could not wait for a person: the run was no longer this runtime's"
    run._pending = pending_of(run.id, waiting.request)
    executor.release(run.id)
    executor.suspended(run)
    if run._cancel_requested and run._decider is not None:
        # Cancelled while it was being stored waiting (no scope left to cancel, no
        # request yet to withdraw): withdrawn now, as a cancel of a waiting run is.
        run._decider.withdraw(run)
    return None


async def _save_step(run: Run, store: Store, messages: list[Message]) -> None:
    await run._save_unsaved(functools.partial(store.append_step, run.session_id, messages, run.id))


async def _flush(run: Run, store: Store) -> None:
    if run._unsaved:
        await run._save_unsaved(functools.partial(store.append_events, run.id))


async def _finish(
    run: Run,
    executor: RunExecutor,
    request: TurnRequest,
    outcome: TurnOutcome | None,
    interrupted: bool,
    started: float,
    telemetry: RunTrace | None,
) -> None:
    try:
        try:
            write_ending(run, request, outcome, interrupted, started, executor.price)
        except Exception as exc:
            # A driver's malformed outcome (say, `text=None`): the run still ends, as an
            # error, so that nobody waits for it forever.
            _logger.exception("could not write the end of run %s", run.id)
            error = f"the run could not be ended normally: {type(exc).__name__}: {exc}"
            run._emit(ErrorEvent(error=error))
            run._emit(turn_end_event(run.turn_id, "error", elapsed_ms(started)))
            run._outcome = RunOutcome(
                run_id=run.id, session_id=run.session_id, status="error", error=error
            )
        ended = run._outcome.status if run._outcome is not None else "error"
        observe.run_ended(run.spec.id, ended)  # as its last event is emitted, before any wait
        try:
            # Every process a run started dies with it (the `process` tool's jobs).
            stopping = executor.stop_processes(run.id)
            if stopping is not None:
                await stopping
        except Exception:
            _logger.exception("could not stop the processes of run %s", run.id)
        await record_ending(run, executor.store, executor.owner)
    finally:
        executor.release(run.id)
        if telemetry is not None:
            telemetry.end(run.outcome)
        run._end()


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
    error = None if status == "completed" else text_safe(outcome.error or "the run failed")
    if error is None:
        run._emit(result_event(outcome.text, accounting))
    else:
        run._emit(ErrorEvent(error=error, accounting=accounting))
    run._emit(turn_end_event(run.turn_id, status, elapsed_ms(started)))
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
