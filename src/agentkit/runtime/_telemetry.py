"""OpenTelemetry spans and metrics of runs, by the GenAI semantic conventions.

The conventions followed are those of OpenTelemetry semantic conventions 1.37 to 1.41 (the
`gen_ai.provider.name` attribute, which replaced `gen_ai.system`): a run is an
`invoke_agent {agent}` span, each model call a `chat {model}` span under it, each tool,
action or summon call an `execute_tool {tool}` span (a summoned agent's run nests under
its caller's `execute_tool` span), and each model call records the
`gen_ai.client.token.usage` and `gen_ai.client.operation.duration` histograms.

Whether a run is traced is decided once, when it starts (`run_telemetry`): only when a
tracer or meter provider was given to the runtime, or when `opentelemetry` has been
imported and a real (not the API's no-op) provider is set globally. Otherwise the run, its
model calls and its tool calls take their usual path and nothing from `opentelemetry` is
imported. See docs/telemetry.md.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from agentkit._version import __version__

if TYPE_CHECKING:
    from agentkit.engine import TurnView
    from agentkit.messages import AssistantMessage, Message, ToolCall
    from agentkit.providers import ModelRequest
    from agentkit.runtime._run import Run, RunOutcome

__all__ = ["CAPTURE_CONTENT_ENV", "RunTelemetry", "run_telemetry"]

if TYPE_CHECKING:
    # For the type checker only: a protocol class would cost its import time for nothing.
    class TelemetrySettings(Protocol):
        """Where a runtime sends its telemetry (a `Runtime` is one): `None` providers mean the
        global ones, `capture_content` `None` means the environment decides."""

        @property
        def tracer_provider(self) -> Any: ...

        @property
        def meter_provider(self) -> Any: ...

        @property
        def capture_content(self) -> bool | None: ...


CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""Set to `true` to record prompts, completions and tool arguments and results on spans."""

_logger = logging.getLogger("agentkit.telemetry")

_SCOPE = "agentkit"
_SCHEMA_URL = "https://opentelemetry.io/schemas/1.37.0"

# The conventions' advisory bucket boundaries.
_TOKEN_BUCKETS = [4.0**i for i in range(14)]  # 1, 4, 16, ... 67108864
_DURATION_BUCKETS = [0.01 * 2.0**i for i in range(14)]  # 0.01 s ... 81.92 s

_tracers: dict[int, tuple[Any, Any]] = {}  # id(provider) -> (provider, tracer)
_instruments: dict[int, tuple[Any, Any, Any]] = {}  # id(provider) -> (provider, tokens, time)


def run_telemetry(runtime: TelemetrySettings, run: Run) -> RunTelemetry | None:
    """The telemetry of a run that starts now (its `invoke_agent` span begins), or `None`
    when there is nothing to send it to: then the run costs nothing more."""
    tracer_provider = runtime.tracer_provider
    meter_provider = runtime.meter_provider
    modules = sys.modules
    # The API's `get_tracer_provider()` costs microseconds when no provider is set (it
    # looks `OTEL_PYTHON_TRACER_PROVIDER` up in the environment every time), as much as a
    # tenth of a run: its module's global is read instead, and the environment once.
    if tracer_provider is None and "opentelemetry.trace" in modules:
        api = modules["opentelemetry.trace"]
        if getattr(api, "_TRACER_PROVIDER", api) is not None or _TRACER_PROVIDER_ENV:
            tracer_provider = _global_tracer_provider(api)
    if meter_provider is None and "opentelemetry.metrics._internal" in modules:
        api = modules["opentelemetry.metrics._internal"]
        if getattr(api, "_METER_PROVIDER", api) is not None or _METER_PROVIDER_ENV:
            meter_provider = _global_meter_provider(api)
    if tracer_provider is None and meter_provider is None:
        return None
    capture = runtime.capture_content
    if capture is None:
        capture = os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() == "true"
    try:
        return RunTelemetry(run, _tracer(tracer_provider), _histograms(meter_provider), capture)
    except Exception:  # the run is accepted already: it goes on, untraced
        _logger.exception("could not start the span of run %s; it is not traced", run.id)
        return None


# Providers named in the environment, which the API creates on first use.
_TRACER_PROVIDER_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_METER_PROVIDER_ENV = "OTEL_PYTHON_METER_PROVIDER" in os.environ


def _global_tracer_provider(api: Any) -> Any:
    provider = api.get_tracer_provider()
    if isinstance(provider, api.ProxyTracerProvider | api.NoOpTracerProvider):
        return None  # none set: the API's no-op
    return provider


def _global_meter_provider(api: Any) -> Any:
    provider = api.get_meter_provider()
    if isinstance(provider, api.NoOpMeterProvider | api._ProxyMeterProvider):
        return None
    return provider


def _tracer(provider: Any) -> Any:
    if provider is None:
        from opentelemetry.trace import NoOpTracer

        return NoOpTracer()
    cached = _tracers.get(id(provider))
    if cached is None or cached[0] is not provider:
        tracer = provider.get_tracer(_SCOPE, __version__, schema_url=_SCHEMA_URL)
        cached = _tracers[id(provider)] = (provider, tracer)
    return cached[1]


def _histograms(provider: Any) -> tuple[Any, Any] | None:
    if provider is None:
        return None
    cached = _instruments.get(id(provider))
    if cached is None or cached[0] is not provider:
        meter = provider.get_meter(_SCOPE, __version__, schema_url=_SCHEMA_URL)
        tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        cached = _instruments[id(provider)] = (provider, tokens, duration)
    return cached[1], cached[2]


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    kind = getattr(exc, "kind", None)  # a ProviderError's: rate_limit, overloaded, ...
    if isinstance(kind, str) and kind and kind != "error":
        return kind
    cls, name = type(exc), type(exc).__qualname__
    return name if cls.__module__ == "builtins" else f"{cls.__module__}.{name}"


class RunTelemetry:
    """One traced run: its `invoke_agent` span, and the hooks the engine calls around each
    model call (`chat`) and tool call (`tool`)."""

    __slots__ = ("capture", "error_type", "histograms", "parent", "run", "span", "token", "tracer")

    def __init__(
        self, run: Run, tracer: Any, histograms: tuple[Any, Any] | None, capture: bool
    ) -> None:
        from opentelemetry import context
        from opentelemetry.trace import SpanKind

        self.run = run
        self.tracer = tracer
        self.histograms = histograms
        self.capture = capture
        self.error_type: str | None = None  # the last model call failure, for the run's span
        self.token: Any = None
        # The caller's context: a server request's span, or the `execute_tool` span of the
        # call that summoned this agent.
        self.parent = context.get_current()
        agent = run.spec.id
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": agent,
            "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": run.session_id,
            "agentkit.run.id": run.id,
        }
        if run.spec.description:
            attributes["gen_ai.agent.description"] = run.spec.description
        if capture:
            attributes["gen_ai.input.messages"] = _json(
                [{"role": "user", "parts": [{"type": "text", "content": run.prompt}]}]
            )
        self.span = tracer.start_span(
            f"invoke_agent {agent}",
            context=self.parent,
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )

    @property
    def traceparent(self) -> str | None:
        """The run's span as a W3C `traceparent` value (`None` when only metrics are on)."""
        context = self.span.get_span_context()
        if not context.is_valid:
            return None
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"

    # --- the run ----------------------------------------------------------------------

    def enter(self) -> None:
        """Make the run's span current in the run's task (called once, as it begins)."""
        from opentelemetry import context, trace

        try:
            self.token = context.attach(trace.set_span_in_context(self.span, self.parent))
        except Exception:  # never in the way of the run
            _logger.exception("could not enter the span of run %s", self.run.id)

    def end(self, outcome: RunOutcome | None) -> None:
        """End the run's span with how the run ended (called once, in the run's task)."""
        from opentelemetry import context

        span = self.span
        try:
            self._close(span, outcome)
        except Exception:  # telemetry never stops a run from ending
            _logger.exception("could not end the span of run %s", self.run.id)
        finally:
            span.end()
            token, self.token = self.token, None
            if token is not None:
                context.detach(token)

    def waiting(self) -> None:
        """The run waits for a person (its task ends): its span ends, marked waiting, not
        as an error; the resumed turn is not traced (its runtime may be another)."""
        from opentelemetry import context

        span = self.span
        try:
            span.set_attribute("agentkit.run.waiting", True)
        finally:
            span.end()
            token, self.token = self.token, None
            if token is not None:
                context.detach(token)

    def _close(self, span: Any, outcome: RunOutcome | None) -> None:
        from opentelemetry.trace import StatusCode

        if outcome is None:
            span.set_attribute("error.type", self.error_type or "_OTHER")
            span.set_status(StatusCode.ERROR, "the run did not end normally")
        else:
            models = outcome.accounting.models
            if models:
                span.set_attribute(
                    "gen_ai.usage.input_tokens", sum(u.input_tokens for u in models.values())
                )
                span.set_attribute(
                    "gen_ai.usage.output_tokens",
                    sum(u.output_tokens for u in models.values()),
                )
            if outcome.status == "interrupted":
                span.set_attribute("error.type", "cancelled")
                span.set_status(StatusCode.ERROR, "interrupted")
            elif outcome.status == "error":
                span.set_attribute("error.type", self.error_type or "_OTHER")
                span.set_status(StatusCode.ERROR, outcome.error or "error")
            elif self.capture:
                span.set_attribute(
                    "gen_ai.output.messages",
                    _json(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": outcome.text}],
                                "finish_reason": "stop",
                            }
                        ]
                    ),
                )

    # --- model calls ------------------------------------------------------------------

    async def chat(
        self, turn: TurnView, request: ModelRequest, produced: list[bool]
    ) -> AssistantMessage:
        """`turn.stream_reply(request, produced)` inside a `chat` span, with its metrics."""
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind, StatusCode

        provider = turn.provider.name
        model = request.model
        common: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        self.span.set_attribute("gen_ai.provider.name", provider)
        self.span.set_attribute("gen_ai.request.model", model)
        span = self.tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=common)
        if self.capture:
            if request.system:
                span.set_attribute(
                    "gen_ai.system_instructions",
                    _json([{"type": "text", "content": request.system}]),
                )
            span.set_attribute("gen_ai.input.messages", _json(_messages(request.messages)))
        usage = turn.req.usage
        before = dict(usage)
        started = time.perf_counter()
        token = context.attach(trace.set_span_in_context(span))
        reply: AssistantMessage | None = None
        error: str | None = None
        try:
            reply = await turn.stream_reply(request, produced)
            return reply
        except BaseException as exc:
            error = self.error_type = _error_type(exc)  # the run's, if it ends with it
            span.set_attribute("error.type", error)
            span.set_status(StatusCode.ERROR, _describe(exc))
            raise
        finally:
            context.detach(token)
            duration = time.perf_counter() - started
            response_model: str | None = None
            input_tokens = output_tokens = 0
            for name, used in usage.items():
                prior = before.get(name)
                if prior is used:
                    continue
                response_model = name
                input_tokens += used.input_tokens - (prior.input_tokens if prior else 0)
                output_tokens += used.output_tokens - (prior.output_tokens if prior else 0)
            if response_model is not None:
                span.set_attribute("gen_ai.response.model", response_model)
                span.set_attribute("gen_ai.usage.input_tokens", input_tokens)
                span.set_attribute("gen_ai.usage.output_tokens", output_tokens)
                common["gen_ai.response.model"] = response_model
            if turn.stop_reason is not None:
                span.set_attribute("gen_ai.response.finish_reasons", (turn.stop_reason,))
            if reply is not None and self.capture:
                span.set_attribute(
                    "gen_ai.output.messages",
                    _json([_message(reply, turn.stop_reason or "stop")]),
                )
            span.end()
            if self.histograms is not None:
                tokens, operation = self.histograms
                if response_model is not None:
                    tokens.record(input_tokens, {**common, "gen_ai.token.type": "input"})
                    tokens.record(output_tokens, {**common, "gen_ai.token.type": "output"})
                if error is not None:
                    common["error.type"] = error
                operation.record(duration, common)

    # --- tool calls -------------------------------------------------------------------

    async def tool(self, turn: TurnView, call: ToolCall) -> tuple[Any, bool]:
        """`turn.call_tool(call)` inside an `execute_tool` span."""
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind, StatusCode

        span = self.tracer.start_span(
            f"execute_tool {call.name}",
            kind=SpanKind.INTERNAL,
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
                "gen_ai.tool.call.id": call.id,
                "gen_ai.tool.type": "function",
            },
        )
        if self.capture:
            arguments = call.arguments
            span.set_attribute(
                "gen_ai.tool.call.arguments",
                arguments if isinstance(arguments, str) else _json(arguments),
            )
        token = context.attach(trace.set_span_in_context(span))
        try:
            output, is_error = await turn.call_tool(call)
        except BaseException as exc:
            span.set_attribute("error.type", _error_type(exc))
            span.set_status(StatusCode.ERROR, _describe(exc))
            raise
        else:
            if is_error:
                span.set_attribute("error.type", "tool_error")
                span.set_status(StatusCode.ERROR, _short(output))
            if self.capture:
                span.set_attribute(
                    "gen_ai.tool.call.result", output if isinstance(output, str) else _json(output)
                )
            return output, is_error
        finally:
            context.detach(token)
            span.end()


def _describe(exc: BaseException) -> str:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled"
    return _short(f"{type(exc).__name__}: {exc}")


def _short(value: Any, limit: int = 500) -> str:
    text = value if isinstance(value, str) else _json(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _message(message: Message, finish_reason: str | None = None) -> dict[str, Any]:
    """A transcript message in the conventions' message form (`gen_ai.input.messages`)."""
    from agentkit.messages import AssistantMessage, ToolResultMessage, UserMessage

    parts: list[dict[str, Any]] = []
    if isinstance(message, UserMessage):
        parts.append({"type": "text", "content": message.content})
    elif isinstance(message, ToolResultMessage):
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        )
    elif isinstance(message, AssistantMessage):
        for block in message.thinking:
            if block.content:
                parts.append({"type": "reasoning", "content": block.content})
        if message.text:
            parts.append({"type": "text", "content": message.text})
        for call in message.tool_calls:
            parts.append(
                {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
            )
    shown: dict[str, Any] = {"role": message.role, "parts": parts}
    if finish_reason is not None:
        shown["finish_reason"] = finish_reason
    return shown


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    return [_message(message) for message in messages]
