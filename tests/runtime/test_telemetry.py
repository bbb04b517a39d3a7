"""OpenTelemetry: the span tree and metrics of runs, by the GenAI semantic conventions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.paths import SRC

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from agentkit import AgentSpec, Runtime
from agentkit.messages import UserMessage
from agentkit.providers import ModelRequest
from agentkit.stores import MemoryStore
from agentkit.testing import FunctionProvider, ScriptedProvider
from agentkit.tools import Tool, ToolContext, ToolRegistry

pytestmark = pytest.mark.anyio


ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}


async def _add(args: dict[str, Any], ctx: ToolContext) -> int:
    return int(args["a"]) + int(args["b"])


async def _hang(args: dict[str, Any], ctx: ToolContext) -> str:
    await anyio.sleep_forever()
    return "never"


TOOLS = ToolRegistry(
    [
        Tool("add", "Add two integers.", ADD, _add),
        Tool("hang", "Never returns.", {"type": "object"}, _hang, timeout=None),
    ]
)
CALC = AgentSpec(id="demo:calc", tools=("add", "hang"), permission_mode="bypassPermissions")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments, "id": f"call-{name}"}]}


class Otel:
    """A tracer provider with an in-memory exporter and a meter provider with an in-memory
    reader, given to the runtime (no global state)."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def options(self, **more: Any) -> dict[str, Any]:
        return {
            "tracer_provider": self.tracer_provider,
            "meter_provider": self.meter_provider,
            **more,
        }

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name.startswith(prefix)]

    def metrics(self) -> dict[str, list[Any]]:
        found: dict[str, list[Any]] = {}
        data = self.reader.get_metrics_data()
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    found.setdefault(metric.name, []).extend(metric.data.data_points)
        return found


@pytest.fixture
def otel() -> Otel:
    return Otel()


def parent_of(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


async def test_a_run_with_a_tool_call_is_a_span_tree(otel: Otel) -> None:
    provider = ScriptedProvider(
        [call("add", a=1, b=2), {"text": "3", "input_tokens": 7, "output_tokens": 2}]
    )
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        run = await runtime.start(CALC, "1+2?")
        outcome = await run.wait()
    assert outcome.ok

    [agent] = otel.named("invoke_agent")
    chats = otel.named("chat")
    [tool] = otel.named("execute_tool")
    assert agent.name == "invoke_agent demo:calc" and agent.kind is SpanKind.INTERNAL
    assert agent.parent is None
    assert attrs(agent) | {} == attrs(agent) and {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "demo:calc",
        "gen_ai.agent.name": "demo:calc",
        "gen_ai.conversation.id": run.session_id,
        "agentkit.run.id": run.id,
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "test-medium",
        "gen_ai.usage.output_tokens": 2 + attrs(chats[0])["gen_ai.usage.output_tokens"],
    }.items() <= attrs(agent).items()
    assert agent.status.status_code is StatusCode.UNSET

    assert [c.name for c in chats] == ["chat test-medium", "chat test-medium"]
    assert all(parent_of(c) == span_id(agent) and c.kind is SpanKind.CLIENT for c in chats)
    first, second = (attrs(c) for c in chats)
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "scripted"
    assert first["gen_ai.request.model"] == first["gen_ai.response.model"] == "test-medium"
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert second["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert (second["gen_ai.usage.input_tokens"], second["gen_ai.usage.output_tokens"]) == (7, 2)

    assert tool.name == "execute_tool add" and parent_of(tool) == span_id(agent)
    assert {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call-add",
    }.items() <= attrs(tool).items()
    assert tool.status.status_code is StatusCode.UNSET
    # In order: chat, tool, chat, all inside the run's span.
    assert chats[0].end_time <= tool.start_time and tool.end_time <= chats[1].start_time  # type: ignore[operator]
    assert agent.start_time <= chats[0].start_time and chats[1].end_time <= agent.end_time  # type: ignore[operator]


async def test_a_sub_agent_nests_under_its_parents_tool_span(otel: Otel) -> None:
    def decide(request: ModelRequest) -> Any:
        if "helper" in request.system:
            return {"text": "helper says hi"}
        if isinstance(request.messages[-1], UserMessage):
            return call("summon", agentName="demo:helper", prompt="say hi")
        return {"text": "done"}

    helper = AgentSpec(id="demo:helper", system_prompt="You are the helper.")
    parent = AgentSpec(id="demo:parent", system_prompt="parent", allowed_subagents=("demo:helper",))
    async with Runtime(
        provider=FunctionProvider(decide), agents=[helper], **otel.options()
    ) as runtime:
        run = await runtime.start(parent, "go")
        assert (await run.wait()).ok

    agents = {s.name: s for s in otel.named("invoke_agent")}
    top, child = agents["invoke_agent demo:parent"], agents["invoke_agent demo:helper"]
    [summon] = otel.named("execute_tool summon")
    assert parent_of(summon) == span_id(top)
    assert parent_of(child) == span_id(summon)
    assert child.context.trace_id == top.context.trace_id  # type: ignore[union-attr]
    [child_chat] = [c for c in otel.named("chat") if parent_of(c) == span_id(child)]
    assert child_chat.name == "chat test-medium"
    assert attrs(child)["gen_ai.conversation.id"] != attrs(top)["gen_ai.conversation.id"]


async def test_a_provider_error_sets_the_status_of_the_chat_and_the_run(otel: Otel) -> None:
    provider = ScriptedProvider([{"error": "the model is down"}])
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        run = await runtime.start(CALC, "1+2?")
        outcome = await run.wait()
    assert outcome.status == "error"
    [agent] = otel.named("invoke_agent")
    [chat] = otel.named("chat")
    assert chat.status.status_code is StatusCode.ERROR
    assert "the model is down" in (chat.status.description or "")
    assert attrs(chat)["error.type"] == "agentkit.errors.ProviderError"
    assert agent.status.status_code is StatusCode.ERROR
    assert attrs(agent)["error.type"] == "agentkit.errors.ProviderError"
    durations = otel.metrics()["gen_ai.client.operation.duration"]
    assert [dict(p.attributes)["error.type"] for p in durations] == [
        "agentkit.errors.ProviderError"
    ]


async def test_a_failing_tool_call_sets_its_span_status(otel: Otel) -> None:
    provider = ScriptedProvider([call("add", a="x", b=2), "sorry"])
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        assert (await (await runtime.start(CALC, "go")).wait()).ok
    [tool] = otel.named("execute_tool")
    assert tool.status.status_code is StatusCode.ERROR
    assert attrs(tool)["error.type"] == "tool_error"
    assert "invalid arguments" in (tool.status.description or "")


async def test_a_cancelled_run_ends_its_spans_with_an_error_status(otel: Otel) -> None:
    provider = ScriptedProvider([call("hang")])
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        run = await runtime.start(CALC, "go")
        async for event in run.events():
            if event.type == "tool_use":
                run.cancel()
        outcome = await run.wait()
    assert outcome.status == "interrupted"
    [agent] = otel.named("invoke_agent")
    [tool] = otel.named("execute_tool hang")
    assert parent_of(tool) == span_id(agent)
    assert tool.status.status_code is StatusCode.ERROR and attrs(tool)["error.type"] == "cancelled"
    assert agent.status.status_code is StatusCode.ERROR
    assert attrs(agent)["error.type"] == "cancelled"


async def test_content_is_not_captured_by_default(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    provider = ScriptedProvider([call("add", a=1, b=2), "the answer is 3"])
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        assert (await (await runtime.start(CALC, "secret prompt")).wait()).ok
    for span in otel.spans():
        for key, value in attrs(span).items():
            assert "messages" not in key and "arguments" not in key and "result" not in key
            assert "secret prompt" not in str(value) and "the answer" not in str(value)


@pytest.mark.parametrize("switch", ["option", "env"])
async def test_content_is_captured_when_asked(
    otel: Otel, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    options = otel.options()
    if switch == "option":
        options["capture_content"] = True
    else:
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    provider = ScriptedProvider([call("add", a=1, b=2), "the answer is 3"])
    spec = CALC.model_copy(update={"system_prompt": "Be exact."})
    async with Runtime(provider=provider, tools=TOOLS, **options) as runtime:
        assert (await (await runtime.start(spec, "secret prompt")).wait()).ok
    [agent] = otel.named("invoke_agent")
    first, second = otel.named("chat")
    [tool] = otel.named("execute_tool")
    assert "secret prompt" in attrs(agent)["gen_ai.input.messages"]
    assert "the answer is 3" in attrs(agent)["gen_ai.output.messages"]
    shown = json.loads(attrs(first)["gen_ai.input.messages"])
    assert shown[-1]["role"] == "user" and "secret prompt" in shown[-1]["parts"][0]["content"]
    assert "Be exact." in attrs(first)["gen_ai.system_instructions"]
    out = json.loads(attrs(first)["gen_ai.output.messages"])
    assert out[0]["parts"][0] == {
        "type": "tool_call",
        "id": "call-add",
        "name": "add",
        "arguments": {"a": 1, "b": 2},
    }
    assert out[0]["finish_reason"] == "tool_use"
    assert json.loads(attrs(tool)["gen_ai.tool.call.arguments"]) == {"a": 1, "b": 2}
    assert attrs(tool)["gen_ai.tool.call.result"] == "3"
    assert json.loads(attrs(second)["gen_ai.input.messages"])[-1]["role"] == "tool"


async def test_a_run_started_inside_an_active_span_is_its_child(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("test")
    async with Runtime(provider=ScriptedProvider(["hi"]), tools=TOOLS, **otel.options()) as rt:
        with tracer.start_as_current_span("POST /v1/conversations/{id}/runs") as request:
            run = await rt.start(CALC, "hello")
        # Awaited outside the request's span: the run still belongs to it.
        await run.wait()
    [agent] = otel.named("invoke_agent")
    assert parent_of(agent) == request.get_span_context().span_id
    assert agent.context.trace_id == request.get_span_context().trace_id  # type: ignore[union-attr]


async def test_a_run_accepted_by_the_conversations_machine_is_the_requests_child(
    otel: Otel, tmp_path: Path
) -> None:
    # The server's route calls the machine's prompt, which calls Runtime.start: a span the
    # request has (an OTel ASGI middleware's) is the run's parent, with no server code.
    from agentkit.conversations import Machine

    tracer = otel.tracer_provider.get_tracer("test")
    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=MemoryStore(), provider=ScriptedProvider(["hi"]), attachment_roots=[root]
    ) as machine:
        machine.runtime.tracer_provider = otel.tracer_provider
        await machine.add_member("olga", "owner")
        client = machine.client(await machine.member("olga"))
        conversation = await client.create_conversation()
        with tracer.start_as_current_span("POST /v1/conversations/{id}/runs") as request:
            accepted = await client.prompt(conversation.id, "hello")
        run = machine.runtime.get_run(accepted.run_id)
        if run is not None:
            await run.wait()
    [agent] = otel.named("invoke_agent")
    assert parent_of(agent) == request.get_span_context().span_id
    assert attrs(agent)["gen_ai.conversation.id"] == conversation.id


async def test_a_server_request_is_the_parent_of_its_run_across_processes(
    otel: Otel, tmp_path: Path
) -> None:
    # What the OpenTelemetry ASGI middleware does: the incoming `traceparent` (a client in
    # another process) is the parent of the request's server span, current in the route.
    pytest.importorskip("starlette")
    httpx = pytest.importorskip("httpx")
    from opentelemetry import context, propagate

    from agentkit.conversations import Machine
    from agentkit.server import create_app

    tracer = otel.tracer_provider.get_tracer("test")

    def traced(app: Any) -> Any:
        async def middleware(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                return await app(scope, receive, send)
            headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
            token = context.attach(propagate.extract(headers))
            try:
                name = f"{scope['method']} {scope['path']}"
                with tracer.start_as_current_span(name, kind=SpanKind.SERVER):
                    await app(scope, receive, send)
            finally:
                context.detach(token)

        return middleware

    root = tmp_path / "space"
    root.mkdir()
    async with Machine(
        store=MemoryStore(), provider=ScriptedProvider(["hi"]), attachment_roots=[root]
    ) as machine:
        machine.runtime.tracer_provider = otel.tracer_provider
        auth = {"Authorization": f"Bearer {await machine.add_member('olga', 'owner')}"}
        transport = httpx.ASGITransport(app=traced(create_app(machine)))
        async with httpx.AsyncClient(transport=transport, base_url="http://agentkit") as http:
            created = await http.post("/v1/conversations", json={}, headers=auth)
            conversation = created.json()["id"]
            with tracer.start_as_current_span("client", kind=SpanKind.CLIENT) as client:
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
                accepted = await http.post(
                    f"/v1/conversations/{conversation}/runs",
                    json={"prompt": "hello"},
                    headers={**auth, **carrier},
                )
            assert accepted.status_code == 202, accepted.text
        run = machine.runtime.get_run(accepted.json()["runId"])
        if run is not None:
            await run.wait()
    [request] = otel.named("POST /v1/conversations/")
    [agent] = otel.named("invoke_agent")
    assert parent_of(request) == client.get_span_context().span_id
    assert parent_of(agent) == span_id(request)
    assert agent.context.trace_id == client.get_span_context().trace_id  # type: ignore[union-attr]


async def test_metrics_are_recorded(otel: Otel) -> None:
    provider = ScriptedProvider(
        [
            {**call("add", a=1, b=2), "input_tokens": 10, "output_tokens": 4},
            {"text": "3", "input_tokens": 20, "output_tokens": 1},
        ]
    )
    async with Runtime(provider=provider, tools=TOOLS, **otel.options()) as runtime:
        assert (await (await runtime.start(CALC, "go")).wait()).ok
    metrics = otel.metrics()
    tokens = {
        dict(p.attributes)["gen_ai.token.type"]: p for p in metrics["gen_ai.client.token.usage"]
    }
    assert (tokens["input"].sum, tokens["input"].count) == (30, 2)
    assert (tokens["output"].sum, tokens["output"].count) == (5, 2)
    assert {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "scripted",
        "gen_ai.request.model": "test-medium",
        "gen_ai.response.model": "test-medium",
    }.items() <= dict(tokens["input"].attributes).items()
    [duration] = metrics["gen_ai.client.operation.duration"]
    assert duration.count == 2 and duration.sum > 0
    assert "error.type" not in dict(duration.attributes)


async def test_without_a_provider_nothing_is_traced() -> None:
    from opentelemetry import trace

    from agentkit.runtime import _telemetry

    if type(trace.get_tracer_provider()).__name__ != "ProxyTracerProvider":
        pytest.skip("a global tracer provider was set by another test of this process")
    # The API is imported (by this module), but no provider is set: the API's no-op.
    async with Runtime(provider=ScriptedProvider(["hi"]), tools=TOOLS) as runtime:
        run = await runtime.start(CALC, "hello")
        assert (await run.wait()).ok
        assert _telemetry.run_telemetry(runtime, run) is None


def test_without_the_extra_in_use_nothing_is_imported() -> None:
    code = (
        "import sys, anyio\n"
        "from agentkit import AgentSpec, Runtime\n"
        "from agentkit.testing import ScriptedProvider\n"
        "async def main():\n"
        "    async with Runtime(provider=ScriptedProvider(['hi'])) as runtime:\n"
        "        run = await runtime.start(AgentSpec(id='demo:a'), 'hello')\n"
        "        assert (await run.wait()).ok\n"
        "anyio.run(main)\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_the_runs_trace_context_as_a_traceparent(otel: Otel) -> None:
    from agentkit.runtime import _telemetry

    async with Runtime(provider=ScriptedProvider(["hi"]), tools=TOOLS, **otel.options()) as rt:
        run = await rt.start(CALC, "hello")
        await run.wait()
        telemetry = _telemetry.run_telemetry(rt, run)
        assert telemetry is not None
        telemetry.end(None)
    [_, second] = otel.named("invoke_agent")
    context = second.context
    assert context is not None and context.trace_flags & 1  # sampled
    assert telemetry.traceparent == (
        f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    )
    assert second.status.status_code is StatusCode.ERROR


async def test_the_trace_context_is_stored_with_the_run(otel: Otel, tmp_path: Path) -> None:
    # In its `turn_start`: any process that reads the run continues the same trace.
    from agentkit.events import TurnStart
    from agentkit.stores import open_store

    store = open_store(str(tmp_path / "traced.db"))
    try:
        async with Runtime(
            provider=ScriptedProvider(["hi"]), tools=TOOLS, store=store, **otel.options()
        ) as rt:
            run = await rt.start(CALC, "hello")
            await run.wait()
        first = (await store.read_events(run.id))[0].event
    finally:
        await store.aclose()
    [span] = otel.named("invoke_agent")
    context = span.context
    assert context is not None and isinstance(first, TurnStart)
    assert first.trace_parent == (
        f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    )
    async with Runtime(provider=ScriptedProvider(["hi"]), tools=TOOLS) as untraced:
        plain = await untraced.start(CALC, "hello")
        await plain.wait()
        events = [event async for event in plain.events()]
    start = events[0]
    assert isinstance(start, TurnStart) and start.trace_parent is None


async def test_the_global_providers_are_used_when_the_runtime_has_none(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As `trace.set_tracer_provider` and `metrics.set_meter_provider` would set them (they
    # can be called once a process, so the globals are patched for this test only).
    import opentelemetry.metrics._internal as metrics_api
    from opentelemetry import trace

    monkeypatch.setattr(trace, "_TRACER_PROVIDER", otel.tracer_provider)
    monkeypatch.setattr(metrics_api, "_METER_PROVIDER", otel.meter_provider)
    async with Runtime(provider=ScriptedProvider(["hi"]), tools=TOOLS) as runtime:
        assert (await (await runtime.start(CALC, "hello")).wait()).ok
    assert [s.name for s in otel.spans()] == ["chat test-medium", "invoke_agent demo:calc"]
    assert "gen_ai.client.operation.duration" in otel.metrics()
