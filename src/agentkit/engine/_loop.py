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
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

from agentkit._internal.schema import schema_violations
from agentkit.actions import ActionContext
from agentkit.engine._offers import Offered, offers_of, submit_schema
from agentkit.engine._prompt import SUBMIT_REMINDER
from agentkit.engine._text_safety import (
    as_text,
    call_safe,
    cut_output,
    json_safe,
    text_safe,
    texts_safe,
)
from agentkit.engine._tool_calls import call_within
from agentkit.engine._trusted import (
    assistant_message,
    text_delta_event,
    text_event,
    tool_result_event,
    tool_result_message,
    tool_use_event,
    trusted_model,
    user_message,
)
from agentkit.engine._turns import MAX_REPLY_ENV, OutputLimits, TurnOutcome, TurnRequest
from agentkit.events import (
    Accounting,
    ModelUsage,
    StructuredOutput,
    Thinking,
)
from agentkit.messages import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolCall,
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
    Usage,
)
from agentkit.tools import (
    Tool,
    ToolContext,
    ToolError,
    entry_allows,
)

if TYPE_CHECKING:
    pass

__all__ = ["run_engine_turn"]


_logger = logging.getLogger("agentkit.engine")


# Transcript messages the engine builds from values it has checked, built without running
# validation (see `agentkit.engine._trusted`); anything unexpected takes the validating path.


def _checked(instance: Any, schema: dict[str, Any]) -> list[str]:
    """`schema_violations`, where a schema that cannot be applied (a bad regex, a `$ref`
    to nowhere in a host-supplied tool schema) is itself reported, not raised."""
    try:
        return schema_violations(instance, schema)
    except Exception as exc:
        return [f"the schema could not be applied: {type(exc).__name__}: {exc}"]


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
        resources = self.resources = req.resources
        self.outcome = TurnOutcome()
        self.denials = 0
        self.stop_reason: str | None = None  # the last model call's `Stop`
        self.telemetry = req.telemetry  # None unless the run is traced
        self.offered, self.definitions = offers_of(req.spec, resources)
        self.limits: OutputLimits = resources.limits
        self.tool_context = ToolContext(
            working_dir=req.working_dir,
            run_id=req.run_id,
            session_id=req.session_id,
            agent_id=req.spec.id,
            spec=req.spec,
            services=resources.services,
            runtime=resources.host,
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
        policy = self.resources.retry
        telemetry = self.telemetry
        attempt = 0
        while True:
            attempt += 1
            produced = [False]
            try:
                if telemetry is not None:  # a `chat` span per attempt
                    return await telemetry.chat(self, request, produced)
                return await self.stream_reply(request, produced)
            except ProviderError as exc:
                if not exc.retryable or produced[0] or attempt >= policy.max_attempts:
                    raise
                await anyio.sleep(policy.delay(attempt, exc.retry_after))

    async def stream_reply(self, request: ModelRequest, produced: list[bool]) -> AssistantMessage:
        emit = self.req.emit
        text_parts: list[str] = []
        thinking: list[ThinkingBlock] = []
        thinking_parts: list[str] = []
        calls: list[ToolCall] = []
        usage = self.req.usage

        def close_thinking(signature: str | None = None) -> None:
            if thinking_parts or signature:
                content = text_safe("".join(thinking_parts))
                block = ThinkingBlock(content=content, signature=signature)
                thinking.append(block)
                thinking_parts.clear()
                emit(Thinking(content=block.content, signature=signature))

        # Bound locally: the text branch runs once per streamed delta.
        text_chunk, add_text, length = TextChunk, text_parts.append, len
        emit_delta = self.req.emit_delta or (lambda content: emit(text_delta_event(content)))
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
                    room -= length(text)
                    if room < 0:
                        raise _reply_too_large(cap)
                    if not text.isascii():  # a lone surrogate would break every consumer
                        text = text_safe(text)
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
                    calls.append(call_safe(chunk.call))
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
                None
                if finished and type(stream) is AsyncGeneratorType
                else getattr(stream, "aclose", None)
            )
            if aclose is not None:
                with anyio.CancelScope(shield=True):
                    await aclose()
        close_thinking()
        return assistant_message(tuple(thinking), "".join(text_parts), tuple(calls))

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
                arguments = texts_safe(json.loads(call.arguments))  # "\udce9" parses
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
                    runtime=self.resources.host,
                    services=dict(self.resources.services),
                    depth=self.req.depth,
                ),
            )
            payload = texts_safe(result.model_dump(exclude_none=True))
            return payload, result.status == "error"
        return await self.summon(arguments)

    async def _ask_permission(
        self, name: str, arguments: dict[str, Any], effect: Effect
    ) -> Allow | Deny:
        handler: PermissionHandler | None = self.resources.permission_handler
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

    def _refusal(self, offered: Offered, arguments: dict[str, Any]) -> str | None:
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
                entry_allows(entry, tool, arguments, self.tool_context) for entry in offered.entries
            )
        ):
            return f"this call is not permitted by the allowlist rules {', '.join(offered.entries)}"
        return None

    async def _run_tool(self, tool: Tool, arguments: dict[str, Any]) -> tuple[Any, bool]:
        try:
            if tool.timeout is None:
                return json_safe(await tool.function(arguments, self.tool_context)), False
            output = await call_within(tool, arguments, self.tool_context, tool.timeout)
            return json_safe(output), False
        except TimeoutError:
            return f"{tool.name} timed out after {tool.timeout:g} seconds", True
        except ToolError as exc:
            return text_safe(str(exc)), True
        except Exception as exc:
            return text_safe(f"{tool.name} failed: {type(exc).__name__}: {exc}"), True

    def submit(self, arguments: dict[str, Any]) -> tuple[Any, bool]:
        spec = self.req.spec
        assert spec.output_schema is not None
        _, wrapped = submit_schema(spec.output_schema)
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
        result = await self.resources.host.run_subagent(
            agent_id,
            arguments["prompt"],
            session_id=arguments.get("sessionId"),
            forward=self.req.emit,
            depth=self.req.depth + 1,
            working_dir=self.req.working_dir,
        )
        payload = texts_safe(result.model_dump(exclude_none=True))
        return payload, result.status == "error"


async def run_engine_turn(req: TurnRequest, provider: Provider, model: str) -> TurnOutcome:
    """Run one user turn of `req.spec` on `provider` with `model`."""
    turn = _Turn(req, provider, model)
    outcome = req.progress = turn.outcome
    spec = req.spec
    max_turns = spec.max_turns or req.resources.default_max_turns
    messages: list[Message] = list(req.transcript)
    pending: list[Message] = [user_message(req.prompt)]
    messages.extend(pending)
    calls_made = 0
    tool_calls = 0
    output_cap = turn.limits.tool_output_chars
    telemetry = turn.telemetry
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
                req.emit(text_event(reply.text, phase))
            for call in reply.tool_calls:
                tool_calls += 1
                shown_input = (
                    call.arguments if isinstance(call.arguments, dict) else {"_raw": call.arguments}
                )
                req.emit(tool_use_event(call.id, call.name, shown_input))
                if outcome.has_payload:
                    # An accepted submit_output ends the turn: nothing after it runs, but
                    # every call still gets its result (model APIs require one).
                    output, is_error = "not run: the output was already submitted", True
                elif telemetry is not None:  # in an `execute_tool` span
                    output, is_error = await telemetry.tool(turn, call)
                else:
                    output, is_error = await turn.call_tool(call)
                text = as_text(output)
                if output_cap is not None and len(text) > output_cap:
                    output = text = cut_output(text, output_cap)
                req.emit(tool_result_event(call.id, call.name, output, is_error))
                step.append(tool_result_message(call.id, call.name, text, is_error))
            messages.extend(step)
            pending.extend(step)
            # The step's messages and events are stored together: a transcript never holds
            # a step whose events were lost, nor the other way round.
            await req.save_step(pending)
            pending = []
            if outcome.has_payload:
                outcome.text = json.dumps(outcome.payload, ensure_ascii=False)
                return outcome
            if not reply.tool_calls and turn.stop_reason == "max_tokens":
                # A cut answer is not a finished one: say so instead of passing it off.
                outcome.status = "error"
                outcome.text = reply.text
                outcome.error = (
                    "the model's answer was cut off: it reached its output token limit (max_tokens)"
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
        outcome.accounting = trusted_model(
            Accounting,
            accounting.model_fields_set | counts.keys(),
            {**accounting.__dict__, **counts},
        )
