"""The engine: the model/tool loop of one user turn.

`run_engine_turn` drives a provider for an `AgentSpec`: it offers the allowlisted tools,
actions, `summon` and `submit_output`, checks every call (allowlist, arguments, permission
rules, permission mode), runs tools with timeouts, validates structured output and counts
turns and tokens. It writes content events through `emit` and returns a `TurnOutcome`; the
lifecycle around it (`turn_start`, the final block, `turn_end`) belongs to the run
(`agentkit.runtime`), so every driver (this engine, the `claude` command line) gets the same
invariants.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
from pydantic_core import to_jsonable_python

from agentkit._schema import schema_violations
from agentkit.actions import Action, ActionContext, action_tool_name
from agentkit.events import (
    Accounting,
    AgentMessage,
    ModelUsage,
    StructuredOutput,
    Thinking,
    _build,
    _shared_fields_set,
    _text,
    _text_delta,
    _tool_result,
    _tool_use,
    _trusted,
)
from agentkit.messages import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentkit.permissions import (
    Allow,
    Deny,
    Effect,
    PermissionHandler,
    PermissionRequest,
    needs_permission,
)
from agentkit.providers import (
    ModelRequest,
    Provider,
    ProviderError,
    Stop,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    ToolDefinition,
    Usage,
)
from agentkit.spec import AgentSpec
from agentkit.tools import (
    Tool,
    ToolContext,
    ToolError,
    entry_allows,
    entry_tool_names,
    parse_tool_entry,
)

if TYPE_CHECKING:
    from agentkit.runtime import Runtime

__all__ = [
    "SUBMIT_OUTPUT",
    "SUMMON",
    "Emit",
    "OutputLimits",
    "RetryPolicy",
    "TurnOutcome",
    "TurnRequest",
    "run_engine_turn",
]

SUBMIT_OUTPUT = "submit_output"
SUMMON = "summon"

_logger = logging.getLogger("agentkit.engine")

Emit = Callable[[AgentMessage], None]

STRUCTURED_OUTPUT_CONTRACT = """\

## Structured output
When your work is complete, call the `submit_output` tool exactly once with your final
answer. Its argument must match this JSON Schema:
{schema}
If the tool reports violations, fix them and call `submit_output` again."""

SUBMIT_REMINDER = (
    "You have not called submit_output yet. Call the submit_output tool now with a payload "
    "that matches its schema; that is the only way to finish."
)


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
        _logger.warning("ignoring %s=%r: expected a positive number of characters or 'none'",
                        name, raw[:40])
        return default
    return value


_DEFAULT_LIMITS = OutputLimits()


def _cut_output(text: str, limit: int) -> str:
    """The head of a result that is over `limit` characters, with a note of what was cut
    (for the model, which cannot see the rest)."""
    return (
        f"{text[:limit]}\n\n[output truncated by agentkit: the first {limit:,} of "
        f"{len(text):,} characters are shown]"
    )


_NOTHING_USED = Accounting()  # frozen, so one instance serves every fresh outcome


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
    runtime: Runtime
    save_messages: Callable[[list[Message]], Awaitable[None]]
    flush: Callable[[], Awaitable[None]]
    usage: dict[str, ModelUsage] = field(default_factory=dict)
    depth: int = 0
    progress: TurnOutcome | None = None
    """The outcome being built, so a run that is interrupted still reports what it used."""
    emit_delta: Callable[[str], None] | None = None
    """Emits a `text_delta` with this content (what `emit` would do, cheaper); optional."""


@dataclass
class _Offered:
    """A tool as offered in this turn, with what calling it means."""

    definition: ToolDefinition
    kind: Literal["tool", "action", "summon", "submit"]
    tool: Tool | None = None
    action: Action | None = None
    entries: tuple[str, ...] = ()  # restricting allowlist entries; empty: unrestricted


def _submit_schema(output_schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The `submit_output` input schema, and whether the payload is wrapped in `output`
    (model APIs take object schemas only)."""
    if output_schema.get("type") == "object":
        return output_schema, False
    inner = dict(output_schema)
    wrapper: dict[str, Any] = {}
    # Root-relative `$ref`s (`#/$defs/item`) must still resolve from the wrapper's root.
    for key in ("$defs", "definitions", "$schema"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    wrapper.update(
        type="object",
        properties={"output": inner},
        required=["output"],
        additionalProperties=False,
    )
    return wrapper, True


def offered_tools(spec: AgentSpec, runtime: Runtime) -> dict[str, _Offered]:
    """Everything the model may call in a turn of `spec`, by model-facing name."""
    offered: dict[str, _Offered] = {}
    for entry in spec.tools:
        restricted = parse_tool_entry(entry)[1] is not None
        for name in entry_tool_names(entry, runtime.tools):
            tool = runtime.tools.get(name)
            if tool is None:
                continue
            previous = offered.get(name)
            if previous is None:
                offered[name] = _Offered(
                    ToolDefinition(name, tool.description, tool.input_schema),
                    "tool",
                    tool=tool,
                    entries=(entry,) if restricted else (),
                )
            elif previous.entries:
                # A bare entry lifts every restriction; otherwise any entry may allow.
                previous.entries = (*previous.entries, entry) if restricted else ()
    if spec.actions:
        for action in runtime.actions:
            if spec.allows_action(action.id):
                tool_name = action_tool_name(action.id)
                offered[tool_name] = _Offered(
                    ToolDefinition(
                        tool_name,
                        action.description or f"Run the action {action.id}.",
                        action.input_schema,
                    ),
                    "action",
                    action=action,
                )
    if spec.allowed_subagents:
        offered[SUMMON] = _Offered(
            ToolDefinition(
                SUMMON,
                "Run another agent on a task and get its final answer.",
                {
                    "type": "object",
                    "properties": {
                        "agentName": {"type": "string", "enum": list(spec.allowed_subagents)},
                        "prompt": {"type": "string", "minLength": 1},
                        "sessionId": {"type": "string"},
                    },
                    "required": ["agentName", "prompt"],
                    "additionalProperties": False,
                },
            ),
            "summon",
        )
    if spec.output_schema is not None:
        schema, _ = _submit_schema(spec.output_schema)
        offered[SUBMIT_OUTPUT] = _Offered(
            ToolDefinition(SUBMIT_OUTPUT, "Submit your final structured answer.", schema),
            "submit",
        )
    return offered


_Offers = tuple[dict[str, _Offered], tuple[ToolDefinition, ...]]


def _offers(spec: AgentSpec, runtime: Runtime) -> _Offers:
    """`offered_tools` and their definitions, remembered per spec by the runtime: a spec is
    immutable, so the answer changes only when the spec is another object or a registry
    has changed (registries only grow; a tool registry counts its changes)."""
    tools, actions = runtime.tools, runtime.actions
    cache = runtime._offers
    key = id(spec)
    hit = cache.get(key)
    if hit is not None:
        cached_spec, cached_tools, tools_version, cached_actions, action_count, found = hit
        offers: _Offers = found
        if (
            cached_spec is spec
            and cached_tools is tools
            and tools_version == tools._version
            and cached_actions is actions
            and action_count == len(actions)
        ):
            return offers
    offered = offered_tools(spec, runtime)
    _warn_unresolved(spec, runtime)
    offers = (offered, tuple(o.definition for o in offered.values()))
    if len(cache) >= 512:  # many short-lived specs: start over rather than grow
        cache.clear()
    cache[key] = (spec, tools, tools._version, actions, len(actions), offers)
    return offers


def _warn_unresolved(spec: AgentSpec, runtime: Runtime) -> None:
    """Log the allowlist entries of `spec` that name nothing this runtime has: they are
    not offered, and a typo there would otherwise only show as a model that never calls
    the tool. Once per spec and registry version (see `_offers`)."""
    tools = [entry for entry in spec.tools if not entry_tool_names(entry, runtime.tools)]
    actions = [a for a in spec.actions if a != "*" and runtime.actions.get(a) is None]
    agents = [name for name in spec.allowed_subagents if name not in runtime.agents]
    if tools or actions:
        _logger.warning(
            "agent %s allows what this runtime does not have, so it is not offered: %s",
            spec.id,
            ", ".join([*tools, *actions]),
        )
    if agents:
        _logger.warning(
            "agent %s may summon agents this runtime does not have (yet): %s",
            spec.id,
            ", ".join(agents),
        )


def structured_output_contract(spec: AgentSpec) -> str:
    """The system-prompt contract appended when `spec` has an output schema."""
    if spec.output_schema is None:
        return ""
    schema, _ = _submit_schema(spec.output_schema)
    return STRUCTURED_OUTPUT_CONTRACT.format(schema=json.dumps(schema, indent=2))


# Transcript messages the engine builds from values it has checked, built without running
# validation (see `agentkit.events._trusted`); anything unexpected takes the validating path.


_USER_FIELDS = _shared_fields_set(("content",))
_ASSISTANT_FIELDS = _shared_fields_set(("thinking", "text", "tool_calls"))
_TOOL_RESULT_FIELDS = _shared_fields_set(("tool_call_id", "name", "content", "is_error"))


def _user_message(content: str) -> UserMessage:
    if type(content) is not str:
        return UserMessage(content=content)
    return _build(UserMessage, _USER_FIELDS, {"role": "user", "content": content})


def _all_of(items: tuple[Any, ...], cls: type) -> bool:
    # A plain loop: `all()` over a generator costs more than the check for short tuples.
    for item in items:  # noqa: SIM110
        if type(item) is not cls:
            return False
    return True


def _assistant_message(
    thinking: tuple[ThinkingBlock, ...], text: str, tool_calls: tuple[ToolCall, ...]
) -> AssistantMessage:
    if (
        type(text) is not str
        or (tool_calls and not _all_of(tool_calls, ToolCall))
        or (thinking and not _all_of(thinking, ThinkingBlock))
    ):
        return AssistantMessage(thinking=thinking, text=text, tool_calls=tool_calls)
    return _build(
        AssistantMessage,
        _ASSISTANT_FIELDS,
        {"role": "assistant", "thinking": thinking, "text": text, "tool_calls": tool_calls},
    )


def _tool_result_message(
    tool_call_id: str, name: str, content: str, is_error: bool
) -> ToolResultMessage:
    if (
        type(tool_call_id) is not str
        or type(name) is not str
        or type(content) is not str
        or type(is_error) is not bool
    ):
        return ToolResultMessage(
            tool_call_id=tool_call_id, name=name, content=content, is_error=is_error
        )
    return _build(
        ToolResultMessage,
        _TOOL_RESULT_FIELDS,
        {
            "role": "tool",
            "tool_call_id": tool_call_id,
            "name": name,
            "content": content,
            "is_error": is_error,
        },
    )


def _checked(instance: Any, schema: dict[str, Any]) -> list[str]:
    """`schema_violations`, where a schema that cannot be applied (a bad regex, a `$ref`
    to nowhere in a host-supplied tool schema) is itself reported, not raised."""
    try:
        return schema_violations(instance, schema)
    except Exception as exc:
        return [f"the schema could not be applied: {type(exc).__name__}: {exc}"]


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _text_safe(text: str) -> str:
    """`text` with each lone surrogate (what a file name that is not UTF-8 becomes in
    Python) replaced by U+FFFD: JSON, the stores and the model APIs cannot carry them."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text)
    return text


def _texts_safe(value: Any) -> Any:
    """`_text_safe` through JSON-like data; `value` itself when nothing needed replacing."""
    if type(value) is str:
        return _text_safe(value)
    if type(value) is dict:
        for key, item in value.items():
            if _texts_safe(key) is not key or _texts_safe(item) is not item:
                return {_texts_safe(k): _texts_safe(v) for k, v in value.items()}
        return value
    if type(value) is list:
        for item in value:
            if _texts_safe(item) is not item:
                return [_texts_safe(i) for i in value]
        return value
    return value


def _json_safe(output: Any) -> Any:
    """A tool's output as JSON can hold it (what it cannot encode becomes its `str`, a lone
    surrogate U+FFFD), so every store, and the model, get the event the live readers saw."""
    if type(output) is str:
        return _text_safe(output)
    return _texts_safe(to_jsonable_python(output, fallback=str))


def _call_safe(call: ToolCall) -> ToolCall:
    """`call` with any lone surrogate in its name or arguments replaced by U+FFFD: a model
    copying a file name it was shown as a `repr` (`'caf\\udce9'`) sends one as a JSON
    escape, and the `tool_use` event and the transcript could then not be stored."""
    arguments = call.arguments
    safe = _texts_safe(arguments)
    name = _text_safe(call.name)
    if safe is arguments and name is call.name:
        return call
    return call.model_copy(update={"arguments": safe, "name": name})


def _as_text(output: Any) -> str:
    if isinstance(output, str):
        return output
    return json.dumps(output, ensure_ascii=False, default=str)


TOOL_ABANDON_GRACE = 1.0
"""Seconds a tool that is past its timeout gets to finish a shielded section, such as
reaping a killed process, before the engine stops waiting for it and reports the timeout.
A tool still busy then (typically waiting on a worker thread, which nothing can interrupt)
is abandoned: the thread goes on alone and whatever it returns is dropped."""


async def _call_within(
    tool: Tool, arguments: dict[str, Any], context: ToolContext, seconds: float
) -> Any:
    """`tool.function(arguments, context)`, given `seconds`; raises `TimeoutError`.

    The call runs under a cancel scope whose deadline is `seconds` away, which waits for
    shielded sections as anyio's deadlines do on every backend (a timer cancelling the
    task, `asyncio.timeout`'s way, would cut through a tool's cleanup). But waiting on a
    worker thread is such a section too (`anyio.to_thread.run_sync` cannot be interrupted),
    so `TOOL_ABANDON_GRACE` after the deadline the engine stops waiting: the run gets its
    timeout error in time, whatever the tool is blocked in.

    On asyncio the call runs in the caller's task (no task per call on this hot path), and
    at the end of the grace a native `Task.cancel()` goes through the shields anyio keeps:
    the task stops waiting, a worker thread's result is dropped and the thread runs on. The
    same happens, within a second and a grace, when the run is cancelled during such a
    wait, which anyio would otherwise hold off until the thread ends.
    """
    asyncio: Any = sys.modules.get("asyncio")
    try:
        loop = asyncio.get_running_loop()
    except (AttributeError, RuntimeError):  # asyncio not even imported, or not running
        return await _call_within_detached(tool, arguments, context, seconds)
    scope = anyio.CancelScope()
    watch = _Watch(loop, asyncio.current_task(), scope, loop.time() + seconds)
    try:
        # anyio.fail_after without its two generator-based context managers: the scope
        # swallows only its own cancellation, so falling out of it means the call timed out.
        with scope:
            return await tool.function(arguments, context)
        raise TimeoutError
    except asyncio.CancelledError:
        if not watch.forced:
            raise
        watch.forced = False
        watch.task.uncancel()  # ours alone: the run's own cancellations stay pending
        _abandoned(tool, seconds, cancelled=watch.stopping)
        if watch.stopping:
            # The run's cancellation, which anyio starts again now that the task has left
            # the shielded section, ends the call instead of a timeout.
            await anyio.lowlevel.checkpoint()
        raise TimeoutError from None
    finally:
        watch.timer.cancel()
        if watch.forced:  # forced out, but the call went on and ended some other way
            watch.task.uncancel()


class _Watch:
    """The one timer of a timed tool call on asyncio, in place of its scope's own deadline
    timer. It looks every `TOOL_ABANDON_GRACE` whether the run is being cancelled (anyio
    holds that off while the call is in a shielded section) and at the deadline cancels
    the call's scope; either way it then forces the task out at the end of the grace."""

    __slots__ = ("deadline", "forced", "loop", "scope", "stopping", "task", "timer")

    def __init__(self, loop: Any, task: Any, scope: Any, deadline: float) -> None:
        self.loop, self.task, self.scope, self.deadline = loop, task, scope, deadline
        self.forced = self.stopping = False
        self.timer = loop.call_at(min(deadline, loop.time() + TOOL_ABANDON_GRACE), self.check)

    def check(self) -> None:
        now = self.loop.time()
        if now >= self.deadline or _outer_cancelled(self.scope):
            self.stopping = now < self.deadline
            self.scope.cancel()
            self.timer = self.loop.call_at(now + TOOL_ABANDON_GRACE, self.force)
        else:
            self.timer = self.loop.call_at(
                min(self.deadline, now + TOOL_ABANDON_GRACE), self.check
            )

    def force(self) -> None:
        self.forced = True
        self.task.cancel()  # not an anyio cancellation: no anyio scope swallows it


def _outer_cancelled(scope: Any) -> bool:
    """Whether a cancel scope around `scope` (entered) has been cancelled, with no shield in
    between: the run is being cancelled. Read from anyio's scopes on asyncio, where their
    parent link is `_parent_scope`; `False` if that ever changes."""
    outer = getattr(scope, "_parent_scope", None)
    while outer is not None:
        if outer.cancel_called:
            return True
        if outer.shield:
            return False
        outer = getattr(outer, "_parent_scope", None)
    return False


async def _call_within_detached(
    tool: Tool, arguments: dict[str, Any], context: ToolContext, seconds: float
) -> Any:
    """`_call_within` on other backends (trio: no way through a shield there): the call runs
    in a system task, outside every nursery, so it can be left running; the caller waits on
    it until the grace ends."""
    import contextvars

    import trio

    scope = anyio.CancelScope(deadline=anyio.current_time() + seconds)
    outcome: list[Any] = []  # [value] or [exception, None], once the call has ended
    done = anyio.Event()

    async def call() -> None:
        try:
            with scope:
                outcome.append(await tool.function(arguments, context))
        except trio.Cancelled:
            raise  # the trio run itself is ending
        except BaseException as exc:  # a tool's KeyboardInterrupt too: re-raised below
            outcome.extend((exc, None))
        finally:
            done.set()

    async def ended(deadline: float) -> bool:
        with anyio.CancelScope(deadline=deadline):
            await done.wait()
        return done.is_set()

    # A system task must not raise (`call` keeps the call's exceptions) and does not inherit
    # the caller's context variables unless given them.
    trio.lowlevel.spawn_system_task(call, context=contextvars.copy_context())
    try:
        finished = await ended(scope.deadline + TOOL_ABANDON_GRACE)
    except trio.Cancelled:
        # The run is being cancelled: so is the call, with the same grace to clean up.
        scope.cancel()
        with anyio.CancelScope(shield=True):
            await ended(anyio.current_time() + TOOL_ABANDON_GRACE)
        raise
    if not finished:
        scope.cancel()
        _abandoned(tool, seconds)
        raise TimeoutError
    if len(outcome) == 1:
        return outcome[0]
    if outcome:
        error: BaseException = outcome[0]
        raise error
    raise TimeoutError  # the scope's deadline ended the call


def _abandoned(tool: Tool, seconds: float, *, cancelled: bool = False) -> None:
    _logger.warning(
        "tool %s did not stop within %gs of %s; it was abandoned and may still be running "
        "(in a worker thread, say)",
        tool.name, TOOL_ABANDON_GRACE,
        "its run being cancelled" if cancelled else f"its {seconds:g}s timeout",
    )


def _size(value: Any) -> int:
    """About how many characters `value` takes as JSON, found without encoding it:
    `json.dumps` costs more than the rest of a small tool call, `repr` (in C) a tenth of
    that and comes within a few characters per item."""
    try:
        return len(repr(value))
    except RecursionError:  # nested deeper than repr goes: count it the slow way
        size, stack = 0, [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list | tuple):
                stack.extend(item)
            size += len(item) + 2 if isinstance(item, str) else 4
        return size


def _reply_too_large(cap: int | None) -> ProviderError:
    return ProviderError(
        f"the model's reply went over {cap:,} characters (text, thinking and tool-call "
        "arguments), so the call was stopped; raise the limit with "
        f"OutputLimits(reply_chars=...) or {MAX_REPLY_ENV} if that is expected",
        kind="reply_too_large",
    )


class _Turn:
    """State of one engine turn."""

    def __init__(self, req: TurnRequest, provider: Provider, model: str) -> None:
        self.req = req
        self.provider = provider
        self.model = model
        self.runtime = req.runtime
        self.outcome = TurnOutcome()
        self.denials = 0
        self.stop_reason: str | None = None  # the last model call's `Stop`
        self.offered, self.definitions = _offers(req.spec, req.runtime)
        limits = getattr(req.runtime, "limits", None)
        if not isinstance(limits, OutputLimits):
            # The environment's, read once per runtime (`os.environ` lookups that miss cost
            # an exception each): kept on the runtime as its `limits`.
            limits = OutputLimits.from_env()
            setattr(req.runtime, "limits", limits)  # noqa: B010 (not declared by Runtime yet)
        self.limits: OutputLimits = limits
        self.tool_context = ToolContext(
            working_dir=req.working_dir,
            run_id=req.run_id,
            session_id=req.session_id,
            agent_id=req.spec.id,
            spec=req.spec,
            services=req.runtime.services,
            runtime=req.runtime,
            depth=req.depth,
        )

    # --- model calls ------------------------------------------------------------------

    async def call_model(self, messages: list[Message]) -> AssistantMessage:
        """One model call with retries; raises ProviderError when it finally fails."""
        req = self.req
        request = ModelRequest(
            model=self.model,
            system=req.system_prompt,
            messages=tuple(messages),
            tools=self.definitions,
            reasoning_effort=req.spec.reasoning_effort,
            auth=req.spec.model.auth,
        )
        policy = self.runtime.retry
        attempt = 0
        while True:
            attempt += 1
            produced = [False]
            try:
                return await self._stream(request, produced)
            except ProviderError as exc:
                if not exc.retryable or produced[0] or attempt >= policy.max_attempts:
                    raise
                await anyio.sleep(policy.delay(attempt, exc.retry_after))

    async def _stream(self, request: ModelRequest, produced: list[bool]) -> AssistantMessage:
        emit = self.req.emit
        text_parts: list[str] = []
        thinking: list[ThinkingBlock] = []
        thinking_parts: list[str] = []
        calls: list[ToolCall] = []
        usage = self.req.usage

        def close_thinking(signature: str | None = None) -> None:
            if thinking_parts or signature:
                content = _text_safe("".join(thinking_parts))
                block = ThinkingBlock(content=content, signature=signature)
                thinking.append(block)
                thinking_parts.clear()
                emit(Thinking(content=block.content, signature=signature))

        # Bound locally: the text branch runs once per streamed delta.
        text_chunk, add_text = TextChunk, text_parts.append
        emit_delta = self.req.emit_delta or (lambda content: emit(_text_delta(content)))
        stream = self.provider.stream(request)
        finished = False
        self.stop_reason = None
        cap = self.limits.reply_chars
        room = cap if cap is not None else 1 << 62  # characters the reply may still stream
        try:
            async for chunk in stream:
                if type(chunk) is text_chunk:
                    if thinking_parts:
                        close_thinking()
                    text = chunk.text
                    room -= len(text)
                    if room < 0:
                        raise _reply_too_large(cap)
                    if not text.isascii():  # a lone surrogate would break every consumer
                        text = _text_safe(text)
                    add_text(text)
                    emit_delta(text)
                elif type(chunk) is ThinkingChunk:
                    if chunk.redacted is not None:
                        # Kept for the transcript only: there is nothing to show.
                        close_thinking()
                        thinking.append(ThinkingBlock(content="", redacted=chunk.redacted))
                        continue
                    room -= len(chunk.text)
                    if room < 0:
                        raise _reply_too_large(cap)
                    thinking_parts.append(chunk.text)
                    if chunk.signature is not None:
                        close_thinking(chunk.signature)
                elif type(chunk) is ToolCallChunk:
                    if thinking_parts:
                        close_thinking()
                    arguments = chunk.call.arguments
                    room -= len(arguments) if type(arguments) is str else _size(arguments)
                    if room < 0:
                        raise _reply_too_large(cap)
                    calls.append(_call_safe(chunk.call))
                elif type(chunk) is Stop:
                    self.stop_reason = chunk.reason
                elif type(chunk) is Usage:
                    current = usage.get(chunk.model, ModelUsage())
                    usage[chunk.model] = current + ModelUsage(
                        input_tokens=chunk.input_tokens,
                        output_tokens=chunk.output_tokens,
                        cache_read_tokens=chunk.cache_read_tokens,
                        cache_write_tokens=chunk.cache_write_tokens,
                        reasoning_tokens=chunk.reasoning_tokens,
                    )
            finished = True
        except ProviderError:
            # Whether anything came (so was shown) before the failure: worked out here, once,
            # rather than flagged on every streamed piece.
            produced[0] = bool(text_parts or thinking_parts or thinking or calls)
            raise
        finally:
            # An async generator that ran to its end is closed already: skip the shielded
            # aclose (a cancel scope per model call) on that, the common, path.
            aclose = (
                None if finished and type(stream) is AsyncGeneratorType
                else getattr(stream, "aclose", None)
            )
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        close_thinking()
        return _assistant_message(tuple(thinking), "".join(text_parts), tuple(calls))

    # --- tool calls -------------------------------------------------------------------

    async def call_tool(self, call: ToolCall) -> tuple[Any, bool]:
        """Run one call; returns (output, is_error). Never raises for the model's mistakes
        or a tool's failure."""
        offered = self.offered.get(call.name)
        if offered is None:
            names = ", ".join(sorted(self.offered)) or "none"
            return f"tool {call.name!r} is not available to this agent (available: {names})", True
        if isinstance(call.arguments, str):
            try:
                arguments = _texts_safe(json.loads(call.arguments))  # "\udce9" parses
            except ValueError as exc:
                return f"the arguments are not valid JSON: {exc}", True
            if not isinstance(arguments, dict):
                return "the arguments must be a JSON object", True
        else:
            arguments = call.arguments
        refusal = self._refusal(offered, arguments)
        if refusal is not None:
            return refusal, True

        if offered.kind == "submit":
            return self.submit(arguments)
        effect: Effect = "read"
        if offered.kind == "tool":
            assert offered.tool is not None
            effect = offered.tool.effect
        elif offered.kind == "action":
            assert offered.action is not None
            effect = offered.action.effect

        if needs_permission(self.req.spec.permission_mode, effect):
            decision = await self._ask_permission(call.name, arguments, effect)
            if isinstance(decision, Deny):
                self.denials += 1
                return f"permission denied: {decision.message}", True
            if decision.updated_input is not None:
                # A handler's changed input passes the same checks as the model's.
                refusal = self._refusal(offered, decision.updated_input)
                if refusal is not None:
                    return f"the permission handler's changed input: {refusal}", True
                arguments = decision.updated_input

        if offered.kind == "tool":
            assert offered.tool is not None
            return await self._run_tool(offered.tool, arguments)
        if offered.kind == "action":
            assert offered.action is not None
            result = await offered.action.run(
                arguments,
                ActionContext(
                    app_id=offered.action.app_id,
                    caller=self.req.spec.id,
                    session_id=self.req.session_id,
                    runtime=self.runtime,
                    services=dict(self.runtime.services),
                    depth=self.req.depth,
                ),
            )
            payload = _texts_safe(result.model_dump(exclude_none=True))
            return payload, result.status == "error"
        return await self.summon(arguments)

    async def _ask_permission(
        self, name: str, arguments: dict[str, Any], effect: Effect
    ) -> Allow | Deny:
        handler: PermissionHandler | None = self.runtime.permission_handler
        if handler is None:
            return Deny(
                f"{name} needs permission under permissionMode "
                f"{self.req.spec.permission_mode!r} and no permission handler is configured"
            )
        try:
            decision = await handler(
                PermissionRequest(name, dict(arguments), effect, self.tool_context)
            )
        except Exception as exc:
            return Deny(f"the permission handler failed: {type(exc).__name__}: {exc}")
        if not isinstance(decision, Allow | Deny):
            return Deny("the permission handler returned neither Allow nor Deny")
        return decision

    def _refusal(self, offered: _Offered, arguments: dict[str, Any]) -> str | None:
        """Why these arguments may not be used for this call (schema, allowlist rules),
        or `None` when they may."""
        violations = _checked(arguments, offered.definition.input_schema)
        if violations:
            return "invalid arguments: " + "; ".join(violations)
        tool = offered.tool
        if (
            tool is not None
            and offered.entries
            and not any(
                entry_allows(entry, tool, arguments, self.tool_context)
                for entry in offered.entries
            )
        ):
            return f"this call is not permitted by the allowlist rules {', '.join(offered.entries)}"
        return None

    async def _run_tool(self, tool: Tool, arguments: dict[str, Any]) -> tuple[Any, bool]:
        try:
            if tool.timeout is None:
                return _json_safe(await tool.function(arguments, self.tool_context)), False
            output = await _call_within(tool, arguments, self.tool_context, tool.timeout)
            return _json_safe(output), False
        except TimeoutError:
            return f"{tool.name} timed out after {tool.timeout:g} seconds", True
        except ToolError as exc:
            return _text_safe(str(exc)), True
        except Exception as exc:
            return _text_safe(f"{tool.name} failed: {type(exc).__name__}: {exc}"), True

    def submit(self, arguments: dict[str, Any]) -> tuple[Any, bool]:
        spec = self.req.spec
        assert spec.output_schema is not None
        _, wrapped = _submit_schema(spec.output_schema)
        payload = arguments["output"] if wrapped else arguments
        violations = _checked(payload, spec.output_schema)
        if violations:
            return "the output does not match the schema: " + "; ".join(violations), True
        self.outcome.payload = payload
        self.outcome.has_payload = True
        self.req.emit(StructuredOutput(payload=payload))
        return "accepted", False

    async def summon(self, arguments: dict[str, Any]) -> tuple[Any, bool]:
        agent_id = arguments["agentName"]
        if agent_id not in self.req.spec.allowed_subagents:
            return f"{agent_id!r} is not in allowedSubagents", True
        result = await self.runtime.run_subagent(
            agent_id,
            arguments["prompt"],
            session_id=arguments.get("sessionId"),
            forward=self.req.emit,
            depth=self.req.depth + 1,
            working_dir=self.req.working_dir,
        )
        payload = _texts_safe(result.model_dump(exclude_none=True))
        return payload, result.status == "error"


async def run_engine_turn(req: TurnRequest, provider: Provider, model: str) -> TurnOutcome:
    """Run one user turn of `req.spec` on `provider` with `model`."""
    turn = _Turn(req, provider, model)
    outcome = req.progress = turn.outcome
    spec = req.spec
    max_turns = spec.max_turns or req.runtime.default_max_turns
    messages: list[Message] = list(req.transcript)
    pending: list[Message] = [_user_message(req.prompt)]
    messages.extend(pending)
    calls_made = 0
    tool_calls = 0
    output_cap = turn.limits.tool_output_chars
    try:
        while calls_made < max_turns:
            calls_made += 1
            try:
                reply = await turn.call_model(messages)
            except ProviderError as exc:
                outcome.status = "error"
                outcome.error = f"model call failed: {exc.message}"
                return outcome
            except Exception as exc:
                outcome.status = "error"
                outcome.error = f"model call failed: {type(exc).__name__}: {exc}"
                return outcome
            step: list[Message] = [reply]
            if reply.text:
                phase: Literal["commentary", "final"] = (
                    "commentary" if reply.tool_calls else "final"
                )
                req.emit(_text(reply.text, phase))
            for call in reply.tool_calls:
                tool_calls += 1
                shown_input = call.arguments if isinstance(call.arguments, dict) else {
                    "_raw": call.arguments
                }
                req.emit(_tool_use(call.id, call.name, shown_input))
                if outcome.has_payload:
                    # An accepted submit_output ends the turn: nothing after it runs, but
                    # every call still gets its result (model APIs require one).
                    output, is_error = "not run: the output was already submitted", True
                else:
                    output, is_error = await turn.call_tool(call)
                text = _as_text(output)
                if output_cap is not None and len(text) > output_cap:
                    output = text = _cut_output(text, output_cap)
                req.emit(_tool_result(call.id, call.name, output, is_error))
                step.append(_tool_result_message(call.id, call.name, text, is_error))
            messages.extend(step)
            pending.extend(step)
            await req.save_messages(pending)
            pending = []
            await req.flush()
            if outcome.has_payload:
                outcome.text = json.dumps(outcome.payload, ensure_ascii=False)
                return outcome
            if not reply.tool_calls and turn.stop_reason == "max_tokens":
                # A cut answer is not a finished one: say so instead of passing it off.
                outcome.status = "error"
                outcome.text = reply.text
                outcome.error = (
                    "the model's answer was cut off: it reached its output token limit "
                    "(max_tokens)"
                )
                return outcome
            if not reply.tool_calls:
                if spec.output_schema is None:
                    outcome.text = reply.text
                    return outcome
                reminder = UserMessage(content=SUBMIT_REMINDER)
                messages.append(reminder)
                pending.append(reminder)
        outcome.status = "error"
        outcome.error = (
            f"reached maxTurns ({max_turns}) without submitting output"
            if spec.output_schema is not None
            else f"reached maxTurns ({max_turns}) before finishing"
        )
        return outcome
    finally:
        # `model_copy(update=...)` without its generic machinery (no validation either way)
        counts = {
            "models": dict(req.usage),
            "model_calls": calls_made,
            "tool_calls": tool_calls,
            "permission_denials": turn.denials,
        }
        accounting = outcome.accounting
        outcome.accounting = _trusted(
            Accounting,
            accounting.model_fields_set | counts.keys(),
            {**accounting.__dict__, **counts},
        )


def resolve_context(
    spec: AgentSpec,
    prompt: str,
    *,
    context_suffix: str | None,
    shared_context: str | Mapping[str, Any] | None,
    thread_context: str | Mapping[str, Any] | None,
) -> tuple[str, str]:
    """The system prompt (base + contracts of used features + context suffix) and the user
    message (with shared and thread context shown to the agent)."""
    system = (spec.system_prompt + structured_output_contract(spec)).strip("\n")
    if context_suffix:
        system = f"{system}\n\n{context_suffix}" if system else context_suffix
    parts = []
    for tag, value in (("shared_context", shared_context), ("thread_context", thread_context)):
        if value:
            body = (
                value
                if isinstance(value, str)
                else json.dumps(value, ensure_ascii=False, default=str)
            )
            parts.append(f"<{tag}>\n{body}\n</{tag}>")
    user = "\n\n".join([*parts, prompt]) if parts else prompt
    for what, text in (("the prompt and its context", user), ("the system prompt", system)):
        found = None if text.isascii() else _LONE_SURROGATE.search(text)
        if found is not None:
            raise ValueError(
                f"{what} is not valid Unicode text: a lone surrogate at position {found.start()}"
            )
    return system, user
