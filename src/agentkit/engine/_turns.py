"""The driver API: what a driver of one user turn gets (`TurnRequest`) and gives back
(`TurnOutcome`), with the settings that bound a turn (`RetryPolicy`, `OutputLimits`).

The engine's turn loop is one driver; the `claude` command line (`agentkit.defs`)
is another. `agentkit.runtime` and `agentkit.engine` re-export the public names."""

from __future__ import annotations

import logging
import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from agentkit.actions import ActionRegistry, RunHost
from agentkit.engine._asking import Resumption, RulesLoader, Suspension
from agentkit.engine._budget import RunBudget
from agentkit.events import Accounting, AgentMessage, ModelUsage
from agentkit.messages import AssistantMessage, Message, ToolCall
from agentkit.permissions import PermissionHandler
from agentkit.providers import ModelRequest, Provider
from agentkit.spec import AgentSpec
from agentkit.tools import ToolRegistry

__all__ = [
    "Emit",
    "OfferCache",
    "OutputLimits",
    "RetryPolicy",
    "TurnOutcome",
    "TurnRequest",
    "TurnResources",
    "TurnTracer",
    "TurnView",
]

_logger = logging.getLogger("agentkit.engine")


Emit = Callable[[AgentMessage], None]


@dataclass(frozen=True)
class RetryPolicy:
    """How retryable provider errors (rate limit, overload, timeout) are retried.

    A call is retried only while it has produced nothing yet, so no event is ever repeated.
    Backoff doubles from `initial_delay` up to `max_delay`, with jitter; a provider's
    `retry_after` is honoured up to `max_delay`.
    """

    max_attempts: int = 4
    initial_delay: float = 0.5
    max_delay: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        base: float = min(self.initial_delay * 2.0 ** (attempt - 1), self.max_delay)
        return base * (0.5 + random.random() / 2)


MAX_TOOL_OUTPUT_ENV = "AGENTKIT_MAX_TOOL_OUTPUT_CHARS"


MAX_REPLY_ENV = "AGENTKIT_MAX_REPLY_CHARS"


@dataclass(frozen=True)
class OutputLimits:
    """Caps on what a turn takes in, so a runaway tool or model cannot fill memory, the
    events and the transcript.

    Attributes:
        tool_output_chars: The most characters of one call's result (a tool's, an MCP
            tool's, an action's or a sub-agent's, errors included; structured results count
            as their JSON text) that the model, the events and the transcript get. A longer
            result is cut to its head, followed by a note saying how much was cut. The
            built-in tools keep their own, smaller, limits (`Read` pages at 200,000).
        reply_chars: The most characters one model reply may stream (text, thinking and
            tool-call arguments together). A reply that goes past it ends that model call
            with a `reply_too_large` error; what was streamed until then stays in the events.

    `None` means no cap. The defaults can be changed with the environment variables
    `AGENTKIT_MAX_TOOL_OUTPUT_CHARS` and `AGENTKIT_MAX_REPLY_CHARS` (a positive integer, or
    `none`), read by `from_env`.
    """

    tool_output_chars: int | None = 200_000
    reply_chars: int | None = 1_000_000

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> OutputLimits:
        """The defaults, with what `AGENTKIT_MAX_TOOL_OUTPUT_CHARS` and
        `AGENTKIT_MAX_REPLY_CHARS` set. A value that is not a positive integer or `none` is
        logged and ignored, so a typo never stops a run."""
        env = os.environ if environ is None else environ
        tool_raw, reply_raw = env.get(MAX_TOOL_OUTPUT_ENV), env.get(MAX_REPLY_ENV)
        if tool_raw is None and reply_raw is None:
            return _DEFAULT_LIMITS
        return cls(
            tool_output_chars=_env_cap(MAX_TOOL_OUTPUT_ENV, tool_raw, cls.tool_output_chars),
            reply_chars=_env_cap(MAX_REPLY_ENV, reply_raw, cls.reply_chars),
        )


def _env_cap(name: str, raw: str | None, default: int | None) -> int | None:
    if raw is None or not raw.strip():
        return default
    if raw.strip().lower() == "none":
        return None
    try:
        value = int(raw.strip().replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0 or value > 10**12:
        _logger.warning(
            "ignoring %s=%r: expected a positive number of characters or 'none'", name, raw[:40]
        )
        return default
    return value


_DEFAULT_LIMITS = OutputLimits()


# Frozen, so one instance serves every fresh outcome. Built without validation (the
# defaults are valid): importing the engine builds no pydantic schema (see `agentkit.events`).
_NOTHING_USED = Accounting.model_construct()


@dataclass
class TurnOutcome:
    """How a driver's turn ended: `completed` with `text` (and `payload` for structured
    output), or `error` with `error`. Accounting is filled as the turn goes."""

    status: Literal["completed", "error"] = "completed"
    text: str = ""
    payload: Any = None
    has_payload: bool = False
    error: str | None = None
    accounting: Accounting = field(default_factory=lambda: _NOTHING_USED)
    waiting: Suspension | None = None
    """Set when the turn stopped to ask a person (see docs/human-in-the-loop.md): the run
    stores it and waits, holding no task, instead of ending."""


class OfferCache:
    """What each spec is offered (its tools, actions, `summon`, `submit_output`), worked out
    once per spec and registry version: one per runtime, shared by its turns."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[int, tuple[Any, ...]] = {}

    def __len__(self) -> int:
        """How many specs' offers are kept (at most 512: then it starts over)."""
        return len(self.entries)


@dataclass(eq=False, slots=True)
class TurnResources:
    """What the turns of one runtime may use, and nothing else of it.

    Attributes:
        tools: The tools a spec's allowlist picks from.
        actions: The actions a spec's allowlist picks from.
        host: Runs sub-agents and actions for the turn (the runtime), and knows its agents.
        permission_handler: Decides the calls that need consent first; `None` (or its
            `Ask()`) puts them to a person.
        services: Host services handed to tools and actions by name.
        limits: Caps on tool output and model replies.
        retry: How retryable provider errors are retried.
        default_max_turns: The turn cap of specs that set none.
        offers: Where what each spec is offered is kept between turns.
        budget: The most model calls and tokens of one run.
    """

    tools: ToolRegistry
    actions: ActionRegistry
    host: RunHost
    permission_handler: PermissionHandler | None = None
    services: Mapping[str, Any] = field(default_factory=dict)
    limits: OutputLimits = field(default_factory=OutputLimits)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    default_max_turns: int = 100
    offers: OfferCache = field(default_factory=OfferCache)
    budget: RunBudget = field(default_factory=RunBudget)


class TurnView(Protocol):
    """What a tracer sees of a turn of the engine."""

    @property
    def provider(self) -> Provider: ...

    @property
    def req(self) -> TurnRequest: ...

    @property
    def stop_reason(self) -> str | None:
        """The last model call's stop reason."""
        ...

    async def stream_reply(self, request: ModelRequest, produced: list[bool]) -> AssistantMessage:
        """One model call, streamed into the turn's events; `produced[0]` turns true once
        anything was emitted (so it is not retried)."""
        ...

    async def call_tool(self, call: ToolCall) -> tuple[Any, bool]:
        """One tool call: its output and whether it is an error."""
        ...


class TurnTracer(Protocol):
    """Wraps a turn's model and tool calls in trace spans (the runtime's telemetry)."""

    async def chat(
        self, turn: TurnView, request: ModelRequest, produced: list[bool]
    ) -> AssistantMessage:
        """`turn.stream_reply(request, produced)` inside a span."""
        ...

    async def tool(self, turn: TurnView, call: ToolCall) -> tuple[Any, bool]:
        """`turn.call_tool(call)` inside a span."""
        ...


@dataclass
class TurnRequest:
    """Everything a driver needs for one user turn."""

    spec: AgentSpec
    prompt: str
    system_prompt: str
    transcript: list[Message]
    session_id: str
    run_id: str
    working_dir: Path
    emit: Emit
    resources: TurnResources
    """What the turn may use: tools, actions, sub-agents, consent, limits, retries."""
    save_messages: Callable[[list[Message]], Awaitable[None]]
    """Appends messages to the session's transcript."""
    flush: Callable[[], Awaitable[None]]
    """Stores the events emitted so far (text deltas excepted)."""
    save_step: Callable[[list[Message]], Awaitable[None]]
    """Both in one transaction: a model step's messages and the events emitted so far."""
    usage: dict[str, ModelUsage] = field(default_factory=dict)
    depth: int = 0
    progress: TurnOutcome | None = None
    """The outcome being built, so a run that is interrupted still reports what it used."""
    emit_delta: Callable[[str], None] | None = None
    """Emits a `text_delta` with this content (what `emit` would do, cheaper); optional."""
    telemetry: TurnTracer | None = None
    """The run's OpenTelemetry spans, when it is traced (see the telemetry guide): a
    driver wraps its model and tool calls in them."""
    resume: Resumption | None = None
    """Set when the turn goes on after a person's decision (see docs/human-in-the-loop.md):
    `transcript` then ends with the step that waited, and `prompt` is not sent again."""
    remembered: RulesLoader | None = None
    """Reads the allow rules a person remembered in the session; `None`: there are none."""
    request_timeout: float | None = None
    """Seconds a request to a person waits before it is ended as denied; `None`: forever."""
