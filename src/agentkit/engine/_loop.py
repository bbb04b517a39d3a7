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
import time
from types import AsyncGeneratorType
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel

from agentkit._internal.schema import schema_violations
from agentkit.actions import ActionContext
from agentkit.engine._asking import (
    Resumption,
    Suspension,
    allowed_by,
    new_request_id,
)
from agentkit.engine._budget import budget_spent
from agentkit.engine._offers import Offered, offers_of, submit_schema
from agentkit.engine._prompt import SUBMIT_REMINDER
from agentkit.engine._repeats import Repeats
from agentkit.engine._text_safety import (
    as_text,
    call_safe,
    cut_output,
    json_safe,
    text_safe,
    texts_safe,
)
from agentkit.engine._tool_calls import call_action, call_within
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
    PermissionRequestEvent,
    QuestionEvent,
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
    Ask,
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


class _Asking:
    """What `call_tool` returns for a call that waits for a person (see `_Turn.asking`)."""

    def __repr__(self) -> str:
        return "<waiting for a person>"


_ASKING = _Asking()


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
        # A person's decision for the next call that needs consent (a resumed turn's
        # pending call); and what the last call that returned `_ASKING` asks.
        self.decided: Allow | Deny | None = None
        self.asking: tuple[str, Any] | None = None
        # Whether the last `call_tool` refused the call itself (unknown tool, bad or
        # disallowed arguments, output off its schema, permission denied) rather than ran it.
        self.rejected = False
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
        self.rejected = True  # until the call is run
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
            decided, self.decided = self.decided, None
            by = "the permission decision's" if decided is not None else "the permission handler's"
            decision = (
                decided
                if decided is not None
                else await self._ask_permission(offered, call.name, arguments, effect)
            )
            if isinstance(decision, Ask):
                self.rejected = False
                self.asking = ("permission", (call.name, arguments, effect))
                return _ASKING, False
            if isinstance(decision, Deny):
                self.denials += 1
                return f"permission denied: {decision.message}", True
            if decision.updated_input is not None:
                # A changed input passes the same checks as the model's.
                refusal = self._refusal(offered, decision.updated_input)
                if refusal is not None:
                    return f"{by} changed input: {refusal}", True
                arguments = decision.updated_input

        self.rejected = False
        if offered.kind == "tool":
            assert offered.tool is not None
            return await self._run_tool(offered.tool, arguments)
        if offered.kind == "action":
            assert offered.action is not None
            result = await call_action(
                offered.action,
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
        self, offered: Offered, name: str, arguments: dict[str, Any], effect: Effect
    ) -> Allow | Deny | Ask:
        """Remembered rules first, then the host's handler; `Ask()` puts it to a person."""
        remembered = self.req.remembered
        if remembered is not None:
            try:
                rules = await remembered()
            except Exception as exc:
                _logger.warning("could not read the remembered permission rules: %s", exc)
                rules = ()
            if rules and allowed_by(rules, offered.tool, name, arguments, self.tool_context):
                return Allow()
        handler: PermissionHandler | None = self.resources.permission_handler
        if handler is None:
            return Ask()
        try:
            decision = await handler(
                PermissionRequest(name, dict(arguments), effect, self.tool_context)
            )
        except Exception as exc:
            return Deny(f"the permission handler failed: {type(exc).__name__}: {exc}")
        if not isinstance(decision, Allow | Deny | Ask):
            return Deny("the permission handler returned neither Allow, Deny nor Ask")
        return decision

    def request_event(self, call: ToolCall) -> tuple[str, Any, float | None]:
        """The event of what the last `_ASKING` call asks: its id, the event, the deadline."""
        assert self.asking is not None
        kind, what = self.asking
        self.asking = None
        timeout = self.req.request_timeout
        deadline = None if timeout is None else time.time() + timeout
        request_id = new_request_id()
        if kind == "permission":
            name, arguments, effect = what
            return (
                request_id,
                PermissionRequestEvent(
                    request_id=request_id,
                    tool_name=name,
                    tool_use_id=call.id,
                    input=arguments,
                    effect=effect,
                    deadline=deadline,
                ),
                deadline,
            )
        event = QuestionEvent(
            request_id=request_id, tool_use_id=call.id, questions=what, deadline=deadline
        )
        return request_id, event, deadline

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
                output = await tool.function(arguments, self.tool_context)
            else:
                output = await call_within(tool, arguments, self.tool_context, tool.timeout)
            if type(output) is Ask:  # the tool puts questions to a person
                questions = [dict(question) for question in output.questions or ()]
                if not questions:
                    return f"{tool.name} asked a person nothing (Ask without questions)", True
                self.asking = ("question", json_safe(questions))
                return _ASKING, False
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
        self.rejected = False
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


def _resumed_reply(messages: list[Message], state: dict[str, Any]) -> AssistantMessage | None:
    """The assistant message whose call waited: the transcript's last one, if its call at
    the stored index is the stored call."""
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            index = state.get("callIndex")
            calls = message.tool_calls
            if (
                isinstance(index, int)
                and 0 <= index < len(calls)
                and calls[index].id == state.get("toolUseId")
            ):
                return message
            return None
    return None


async def _decided_call(turn: _Turn, call: ToolCall, resume: Resumption) -> tuple[Any, bool]:
    """The result of the call a person decided or answered."""
    if resume.kind == "question":
        if resume.error is not None:
            return resume.error, True
        return json_safe(resume.answers), False
    if resume.allow:
        turn.decided = Allow(updated_input=resume.updated_input)
    else:
        turn.decided = Deny(resume.message or "a person denied this call")
    try:
        if turn.telemetry is not None:
            return await turn.telemetry.tool(turn, call)
        return await turn.call_tool(call)
    finally:
        turn.decided = None


def _suspend(
    turn: _Turn,
    call: ToolCall,
    index: int,
    unsaved: list[Message],
    counts: tuple[int, int],
) -> Suspension:
    """Emit the request of the call at `index` and describe the turn's continuation."""
    request_id, event, deadline = turn.request_event(call)
    turn.req.emit(event)
    models = {name: usage.model_dump() for name, usage in turn.req.usage.items()}
    state = {
        "kind": "permission" if isinstance(event, PermissionRequestEvent) else "question",
        "requestId": request_id,
        "callIndex": index,
        "toolUseId": call.id,
        "toolName": call.name,
        "modelCalls": counts[0],
        "toolCalls": counts[1],
        "denials": turn.denials,
        "usage": models,
        "timeout": turn.req.request_timeout,
        "request": event.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
    return Suspension(request=event, messages=unsaved, state=state, deadline=deadline)


async def run_engine_turn(req: TurnRequest, provider: Provider, model: str) -> TurnOutcome:
    """Run one user turn of `req.spec` on `provider` with `model`.

    A call that needs a person ends the turn early with `outcome.waiting` set (see
    docs/human-in-the-loop.md); `req.resume` starts such a turn again where it stopped.
    """
    turn = _Turn(req, provider, model)
    outcome = req.progress = turn.outcome
    spec = req.spec
    max_turns = spec.max_turns or req.resources.default_max_turns
    messages: list[Message] = list(req.transcript)
    resume = req.resume
    calls_made = 0
    tool_calls = 0
    reply: AssistantMessage | None = None
    first = 0  # the first call of `reply` still to run
    pending: list[Message] = []
    if resume is None:
        pending.append(user_message(req.prompt))
        messages.extend(pending)
    else:
        state = resume.state
        calls_made, tool_calls = int(state["modelCalls"]), int(state["toolCalls"])
        turn.denials = int(state.get("denials", 0))
        reply = _resumed_reply(messages, state)
        if reply is None:
            outcome.status = "error"
            outcome.error = "the waiting call is not the transcript's last (was it changed?)"
            return outcome
        first = int(state["callIndex"])
    output_cap = turn.limits.tool_output_chars
    telemetry = turn.telemetry
    budget = req.resources.budget
    repeats = Repeats()
    ended: str | None = None  # why the run ends after this step (a repeated rejected call)
    try:
        while True:
            step: list[Message] = []
            if reply is None:
                if calls_made >= max_turns:
                    break
                spent = budget_spent(budget, calls_made, req.usage)
                if spent is not None:
                    outcome.status = "error"
                    outcome.error = spent
                    return outcome
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
                step.append(reply)
                if reply.text:
                    phase: Literal["commentary", "final"] = (
                        "commentary" if reply.tool_calls else "final"
                    )
                    req.emit(text_event(reply.text, phase))
            calls = reply.tool_calls
            for index in range(first, len(calls)):
                call = calls[index]
                if resume is not None:
                    # The call that waited: shown and counted before it waited.
                    output, is_error = await _decided_call(turn, call, resume)
                    resume = None
                else:
                    tool_calls += 1
                    shown_input = (
                        call.arguments
                        if isinstance(call.arguments, dict)
                        else {"_raw": call.arguments}
                    )
                    req.emit(tool_use_event(call.id, call.name, shown_input))
                    if outcome.has_payload:
                        # An accepted submit_output ends the turn: nothing after it runs,
                        # but every call still gets its result (model APIs require one).
                        output, is_error = "not run: the output was already submitted", True
                    elif ended is not None:
                        output, is_error = "not run: the run ended (a repeated rejected call)", True
                    else:
                        if telemetry is not None:  # in an `execute_tool` span
                            output, is_error = await telemetry.tool(turn, call)
                        else:
                            output, is_error = await turn.call_tool(call)
                        if is_error and turn.rejected:
                            ended = repeats.rejected(call, output)
                        else:
                            repeats.accepted()
                if output is _ASKING:
                    outcome.waiting = _suspend(
                        turn, call, index, pending + step, (calls_made, tool_calls)
                    )
                    return outcome
                text = as_text(output)
                if output_cap is not None and len(text) > output_cap:
                    output = text = cut_output(text, output_cap)
                req.emit(tool_result_event(call.id, call.name, output, is_error))
                step.append(tool_result_message(call.id, call.name, text, is_error))
            first = 0
            messages.extend(step)
            pending.extend(step)
            # The step's messages and events are stored together: a transcript never holds
            # a step whose events were lost, nor the other way round.
            await req.save_step(pending)
            pending = []
            if ended is not None:
                outcome.status = "error"
                outcome.error = ended
                return outcome
            if outcome.has_payload:
                outcome.text = json.dumps(outcome.payload, ensure_ascii=False)
                return outcome
            if not calls and turn.stop_reason == "max_tokens":
                # A cut answer is not a finished one: say so instead of passing it off.
                outcome.status = "error"
                outcome.text = reply.text
                outcome.error = (
                    "the model's answer was cut off: it reached its output token limit (max_tokens)"
                )
                return outcome
            if not calls:
                if spec.output_schema is None:
                    outcome.text = reply.text
                    return outcome
                reminder = UserMessage(content=SUBMIT_REMINDER)
                messages.append(reminder)
                pending.append(reminder)
            reply = None
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
