"""Runs that wait for a person: their pending requests, and how a decision resumes them.

A run whose call needs a person stores its step and continuation and goes `waiting`
(`agentkit.runtime._run`); it holds no task. `resume` is the other half, for any runtime
sharing the store: one conditional store transaction (`Store.resume_run`) moves the run
back to `running` under the deciding runtime's lease with the decision event, so of two
deciders exactly one wins; then the run's turn goes on in that runtime, in the same run
id and turn, from the stored continuation. `RequestSweeper` ends the requests whose
deadline passed, as denied, in whichever runtime sweeps first.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from agentkit.actions import ToolContext
from agentkit.engine import Resumption, rule_for, rule_text, with_rule
from agentkit.errors import AgentNotFoundError, RequestDecidedError, UnknownRequestError
from agentkit.events import (
    AgentMessage,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    QuestionAnswerEvent,
    QuestionEvent,
    SessionInit,
    TurnStart,
)
from agentkit.runtime._requests import waiting_request
from agentkit.spec import AgentSpec
from agentkit.stores import EventEntry, Store, StoreError, WaitingRecord

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from agentkit.runtime._run import Run
    from agentkit.tools import ToolRegistry

    class _Group(Protocol):
        @property
        def native(self) -> bool: ...

    class Runtime(Protocol):
        """What resuming a waiting run needs of the runtime (`agentkit.runtime.Runtime`),
        named here so that this module does not import the runtime's."""

        store: Store
        instance_id: str
        lease_duration: float
        working_dir: Path
        _suspended: dict[str, Run]
        agent_resolver: Callable[[WaitingRecord], Awaitable[AgentSpec | None]] | None

        @property
        def _group(self) -> _Group: ...

        @property
        def agents(self) -> Mapping[str, AgentSpec]: ...

        @property
        def tools(self) -> ToolRegistry: ...

        def _continue(
            self, run: Run, system: str, resumption: Resumption, elapsed: int
        ) -> None: ...


__all__ = [
    "MAX_ANSWER_BYTES",
    "MAX_MESSAGE_CHARS",
    "RequestSweeper",
    "check_answers",
    "check_decision",
    "resume",
]

_logger = logging.getLogger("agentkit.runtime")

MAX_MESSAGE_CHARS = 10_000
"""The longest `message` a decision may give the model."""
MAX_ANSWER_BYTES = 1_000_000
"""The most JSON an `updated_input` or the answers to a question may take."""
_SWEEP_BATCH = 100


def _json_size(value: Any, field: str) -> None:
    try:
        size = len(json.dumps(value, ensure_ascii=False, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{field}: must be JSON (objects, arrays, strings, numbers): {exc}"
        ) from None
    if size > MAX_ANSWER_BYTES:
        raise ValueError(f"{field}: {size:,} characters of JSON; at most {MAX_ANSWER_BYTES:,}")


def check_decision(
    request_id: Any, allow: Any, message: Any, updated_input: Any, remember: Any
) -> None:
    """Raise `ValueError` naming the field for a decision a person cannot give."""
    if not isinstance(request_id, str) or not request_id or len(request_id) > 200:
        raise ValueError("request_id: must be a request's id (a non-empty string)")
    if not isinstance(allow, bool):
        raise ValueError("allow: must be True or False")
    if message is not None:
        if not isinstance(message, str):
            raise ValueError("message: must be a string")
        if len(message) > MAX_MESSAGE_CHARS:
            raise ValueError(f"message: {len(message):,} characters; at most {MAX_MESSAGE_CHARS:,}")
    if updated_input is not None:
        if not isinstance(updated_input, dict):
            raise ValueError("updated_input: must be a JSON object (a dict)")
        _json_size(updated_input, "updated_input")
        if not allow:
            raise ValueError("updated_input: only an allowed call runs with a changed input")
    if not isinstance(remember, bool):
        raise ValueError("remember: must be True or False")


def check_answers(request_id: Any, answers: Any) -> None:
    """Raise `ValueError` naming the field for answers that cannot be given."""
    if not isinstance(request_id, str) or not request_id or len(request_id) > 200:
        raise ValueError("request_id: must be a request's id (a non-empty string)")
    if answers is None:
        raise ValueError("answers: must be given (usually {question id: answer})")
    _json_size(answers, "answers")


async def request_error(store: Store, run_id: str, request_id: str) -> Exception:
    """Why `request_id` of `run_id` cannot be decided now: decided already, or unknown."""
    try:
        entries = await store.read_events(run_id)
    except StoreError:
        entries = []
    for entry in entries:
        event = entry.event
        if isinstance(event, PermissionRequestEvent | QuestionEvent) and (
            event.request_id == request_id
        ):
            return RequestDecidedError(
                f"request {request_id!r} of run {run_id!r} was decided already "
                "(through this or another runtime, or by its deadline)"
            )
    return UnknownRequestError(f"run {run_id!r} has no request {request_id!r}")


_SUSPEND_WAIT = 10.0  # seconds a decision waits for a run that asked to be stored waiting
_UNASKED_WAIT = 2.0  # of which, for a running run whose request is not stored yet


async def _once_suspended(store: Store, run_id: str, request_id: str) -> WaitingRecord | None:
    """The run's waiting record once the run that made request `request_id` is stored
    waiting: a reader of its live events (relayed from the process executing it) sees the
    request before the run is stored as `waiting`, and may decide at once. `None` when the
    run does not wait on it (decided already, never asked, ended)."""
    deadline = time.monotonic() + _SUSPEND_WAIT
    unasked_until = time.monotonic() + _UNASKED_WAIT
    while time.monotonic() < deadline:
        run = await store.get_run(run_id)
        if run is None or run.status != "running":
            break
        entries = await store.read_events(run_id)
        asked = any(
            isinstance(e.event, PermissionRequestEvent | QuestionEvent)
            and e.event.request_id == request_id
            for e in entries
        )
        answered = any(
            isinstance(e.event, PermissionDecisionEvent | QuestionAnswerEvent)
            and e.event.request_id == request_id
            for e in entries
        )
        if answered or (not asked and time.monotonic() > unasked_until):
            break
        # The run is being stored waiting, its request with it (a transaction away).
        await anyio.sleep(0.02)
        record = await store.get_waiting(run_id)
        if record is not None and record.request_id == request_id:
            return record
    record = await store.get_waiting(run_id)
    return record if record is not None and record.request_id == request_id else None


def _decision_event(
    record: WaitingRecord, resumption: Resumption, rule: str | None
) -> AgentMessage:
    if resumption.kind == "question":
        return QuestionAnswerEvent(
            request_id=record.request_id, answers=resumption.answers, error=resumption.error
        )
    return PermissionDecisionEvent(
        request_id=record.request_id,
        decision="allow" if resumption.allow else "deny",
        message=resumption.message,
        updated_input=resumption.updated_input,
        remember=rule is not None,
        rule=rule,
    )


def _rebuilt_run(
    runtime: Runtime, record: WaitingRecord, spec: AgentSpec, entries: list[EventEntry]
) -> Run:
    """The `Run` of a waiting run this runtime does not hold (another process suspended
    it, or this one restarted), its log filled from the store."""
    from agentkit.runtime._run import Run

    start = entries[0].event if entries else None
    init = next((e.event for e in entries if isinstance(e.event, SessionInit)), None)
    turn_id = start.turn_id if isinstance(start, TurnStart) else record.run_id
    prompt = start.user_prompt if isinstance(start, TurnStart) else ""
    where = init.project_path if init is not None and init.project_path else None
    run = Run(
        run_id=record.run_id,
        turn_id=turn_id,
        session_id=record.session_id,
        spec=spec,
        prompt=prompt,
        working_dir=Path(where) if where else runtime.working_dir,
        native=runtime._group.native,
    )
    run._log.restore(entries)
    return run


def _system_prompt(entries: list[EventEntry]) -> str:
    init = next((e.event for e in entries if isinstance(e.event, SessionInit)), None)
    return (init.system_prompt or "") if init is not None else ""


async def resume(
    runtime: Runtime,
    run_id: str,
    request_id: str,
    resumption_of: Any,
    *,
    agent: AgentSpec | None,
    remember: bool = False,
) -> Run:
    """Give a waiting run its decision (or answers) and start its turn again here.

    `resumption_of(record)` makes the `Resumption` from the stored waiting run.

    Raises:
        UnknownRequestError: No such run or request, or a request of the other kind.
        RequestDecidedError: It was decided already (another decider won).
        AgentNotFoundError: The run's agent is not registered here and `agent` is not given.
    """
    store = runtime.store
    record = await store.get_waiting(run_id)
    if record is None or record.request_id != request_id:
        record = await _once_suspended(store, run_id, request_id)
    if record is None:
        raise await request_error(store, run_id, request_id)
    resumption: Resumption = resumption_of(record)
    if resumption.kind != record.state.get("kind"):
        verb = "decide" if record.state.get("kind") == "permission" else "answer"
        raise UnknownRequestError(
            f"request {request_id!r} of run {run_id!r} is a {record.state.get('kind')}: "
            f"{verb} it instead"
        )
    held = runtime._suspended.get(run_id)
    spec = agent or (held.spec if held is not None else runtime.agents.get(record.agent_id))
    if spec is None and runtime.agent_resolver is not None:
        spec = await runtime.agent_resolver(record)
    if spec is None:
        raise AgentNotFoundError(
            f"run {run_id!r} is of agent {record.agent_id!r}, which is not registered here: "
            "register it, or pass its spec as agent="
        )
    rule = None
    if remember and resumption.kind == "permission" and resumption.allow:
        name = str(record.state.get("toolName"))
        request = waiting_request(record)
        where = held.working_dir if held is not None else runtime.working_dir
        context = ToolContext(
            working_dir=where, run_id=run_id, session_id=record.session_id, agent_id=spec.id
        )
        rule = rule_for(runtime.tools.get(name), name, request.input or {}, context)
    event = _decision_event(record, resumption, None if rule is None else rule_text(rule))
    offset = int(record.state["nextOffset"])
    now = time.time()
    resumed = await store.resume_run(
        run_id,
        request_id,
        owner=runtime.instance_id,
        now=now,
        lease_expires_at=now + runtime.lease_duration,
        events=[EventEntry(offset, event)],
    )
    if resumed is None:
        raise await request_error(store, run_id, request_id)
    runtime._suspended.pop(run_id, None)
    if rule is not None:
        try:
            session = await store.get_session(record.session_id)
            if session is not None:
                await store.update_session(session.id, with_rule(session.metadata, rule))
        except StoreError as exc:  # the decision stands; only the rule is lost
            _logger.warning("could not remember the rule %s: %s", rule_text(rule), exc)
    entries = await store.read_events(run_id)
    if held is not None and len(held._log) == offset:
        run = held
        run.spec = spec
        run._log.append(event)
        if run._relay is not None:
            run._relay(run.id, offset, event)
    else:
        run = _rebuilt_run(runtime, record, spec, entries)
    run._pending = None
    runtime._continue(
        run, _system_prompt(entries), resumption, int(record.state.get("elapsedMs", 0))
    )
    return run


@dataclass
class RequestSweeper:
    """Ends the requests whose deadline passed, as denied, every `interval` seconds, in
    whichever runtime sweeps first (the store's conditional resume makes it once)."""

    runtime: Runtime
    interval: float

    async def run(self) -> None:
        """Sweep every `interval` seconds, forever (cancel to stop)."""
        while True:
            await anyio.sleep(self.interval)
            await self.tick()

    async def tick(self) -> list[str]:
        """One sweep; returns the ids of the runs this runtime resumed. Failures are
        logged, never raised."""
        resumed: list[str] = []
        runtime = self.runtime
        try:
            overdue = await runtime.store.overdue_requests(time.time(), _SWEEP_BATCH)
        except Exception as exc:
            _logger.warning("could not read the overdue requests: %s", exc)
            return resumed
        for record in overdue:
            if (
                record.agent_id not in runtime.agents
                and record.run_id not in runtime._suspended
                and runtime.agent_resolver is None
            ):
                continue  # left to a runtime that knows its agent
            timeout = record.state.get("timeout")
            within = f"{timeout:g} seconds" if isinstance(timeout, int | float) else "time"
            message = f"no decision within {within}"
            kind = record.state.get("kind")

            def denied(
                found: WaitingRecord, kind: Any = kind, message: str = message
            ) -> Resumption:
                if kind == "question":
                    return Resumption(found.state, "question", error=f"nobody answered: {message}")
                return Resumption(found.state, "permission", allow=False, message=message)

            try:
                await resume(runtime, record.run_id, record.request_id, denied, agent=None)
            except (RequestDecidedError, UnknownRequestError):
                continue  # decided meanwhile, or another runtime swept it first
            except Exception as exc:
                _logger.warning(
                    "could not end the overdue request of run %s: %s", record.run_id, exc
                )
                continue
            resumed.append(record.run_id)
        return resumed
