"""Wire-format tests: each provider, through its official client, against a loopback
server replaying byte-exact SSE streams of its API (tests/support/data/providers/<api>/)."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentkit.providers import (
    AnthropicProvider,
    AssistantMessage,
    ModelRequest,
    OpenAIProvider,
    Provider,
    ProviderConfigError,
    ProviderError,
    Stop,
    TextChunk,
    ThinkingBlock,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentkit.providers._timeouts import ProviderTimeouts, set_default_timeouts
from agentkit.testing._provider_conformance import (
    CONFORMANCE_SCENARIOS,
    ReplayServer,
    Reply,
    WireScript,
    collect,
    run_conformance_scenario,
    split_inside_utf8,
)
from support.paths import DATA

pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
pytest.importorskip("openai", reason="the 'openai' extra is not installed")

DATA = DATA / "providers"




def _events(data: bytes) -> list[bytes]:
    """One piece per SSE event, the blank line kept with its event."""
    return [part + b"\n\n" for part in data.split(b"\n\n") if part]


def _halves(data: bytes) -> list[bytes]:
    """Every event cut in the middle too, so lines arrive in pieces."""
    pieces: list[bytes] = []
    for event in _events(data):
        mid = len(event) // 2
        pieces.extend([event[:mid], event[mid:]])
    return pieces


def _stream(api: str, name: str, split: Callable[[bytes], list[bytes]] = _events) -> Reply:
    return Reply(200, split((DATA / api / f"{name}.sse").read_bytes()))


def anthropic_script() -> WireScript:
    api = "anthropic"
    return WireScript(
        text=[_stream(api, "text")],
        text_usage=Usage("claude-conformance-1", 20, 9, cache_read_tokens=5, cache_write_tokens=3),
        tool_call=[_stream(api, "tool_call", _halves)],
        utf8=[_stream(api, "utf8", split_inside_utf8)],
        malformed_tool_arguments=[_stream(api, "malformed_tool_arguments")],
        error_mid_stream=[_stream(api, "error_mid_stream")],
        overloaded=[
            Reply.json(
                529,
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                 "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
                {"retry-after": "2", "request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"},
            )
        ],
        rate_limited=[
            Reply.json(
                429,
                {"type": "error", "error": {"type": "rate_limit_error", "message":
                 "This request would exceed the rate limit for your organization of 50 "
                 "input tokens per minute."}},
                {"retry-after": "7", "anthropic-ratelimit-requests-remaining": "0"},
            )
        ],
        model_not_found=[
            Reply.json(
                404,
                {"type": "error", "error": {"type": "not_found_error",
                                            "message": "model: conformance-model"}},
            )
        ],
    )


def _openai_errors() -> dict[str, Any]:
    return {
        "overloaded": [
            Reply.json(
                503,
                {"error": {"message": "The engine is currently overloaded, please try again "
                           "later.", "type": "server_error", "param": None, "code": None}},
                {"retry-after": "2"},
            )
        ],
        "rate_limited": [
            Reply.json(
                429,
                {"error": {"message": "Rate limit reached for gpt-conformance-1 on requests "
                           "per min (RPM): Limit 3, Used 3, Requested 1.",
                           "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
                {"retry-after": "7", "x-ratelimit-remaining-requests": "0"},
            )
        ],
        "model_not_found": [
            Reply.json(
                404,
                {"error": {"message": "The model `conformance-model` does not exist or you do "
                           "not have access to it.", "type": "invalid_request_error",
                           "param": None, "code": "model_not_found"}},
            )
        ],
    }


def openai_script(api: str) -> WireScript:
    return WireScript(
        text=[_stream(api, "text")],
        text_usage=Usage("gpt-conformance-1", 20, 9, cache_read_tokens=5, reasoning_tokens=2),
        tool_call=[_stream(api, "tool_call", _halves)],
        utf8=[_stream(api, "utf8", split_inside_utf8)],
        malformed_tool_arguments=[_stream(api, "malformed_tool_arguments")],
        error_mid_stream=[_stream(api, "error_mid_stream")],
        **_openai_errors(),
    )


FACTORIES: dict[str, tuple[Callable[[str], Provider], Callable[[], WireScript]]] = {
    "anthropic": (
        lambda url: AnthropicProvider(api_key="sk-ant-test", base_url=url),
        anthropic_script,
    ),
    "openai-responses": (
        lambda url: OpenAIProvider(api_key="sk-test", base_url=url + "/v1", api="responses"),
        lambda: openai_script("openai_responses"),
    ),
    "openai-chat": (
        lambda url: OpenAIProvider(api_key="sk-test", base_url=url + "/v1", api="chat"),
        lambda: openai_script("openai_chat"),
    ),
    "openai-compatible": (
        lambda url: OpenAIProvider(name="openai-compatible", base_url=url + "/v1"),
        lambda: openai_script("openai_chat"),
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("scenario", list(CONFORMANCE_SCENARIOS))
@pytest.mark.parametrize("flavour", list(FACTORIES))
async def test_conformance(flavour: str, scenario: str) -> None:
    factory, script = FACTORIES[flavour]
    await run_conformance_scenario(scenario, factory, script())


# --- API-specific behaviour beyond the shared scenarios -----------------------------------


def _request(messages: list[Any] | None = None, **kw: Any) -> ModelRequest:
    return ModelRequest(
        model="conformance-model",
        system="Be brief.",
        messages=tuple(messages or [UserMessage(content="Weather in Zürich?")]),
        max_output_tokens=512,
        **kw,
    )


TOOL_TURN = [
    UserMessage(content="Weather in Zürich and Paris?"),
    AssistantMessage(
        thinking=(ThinkingBlock(content="Two cities.", signature="sig-abc"),),
        text="Checking both.",
        tool_calls=(
            ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Zürich"}),
            ToolCall(id="toolu_2", name="get_weather", arguments='{"city": "Par'),
        ),
    ),
    ToolResultMessage(tool_call_id="toolu_1", name="get_weather", content="21 °C"),
    ToolResultMessage(
        tool_call_id="toolu_2", name="get_weather", content="bad arguments", is_error=True
    ),
    UserMessage(content="Reminder: answer in one line."),
]


@pytest.mark.anyio
async def test_anthropic_thinking_signature_kept_and_sent_back() -> None:
    with ReplayServer() as server:
        provider = AnthropicProvider(api_key="sk-ant-test", base_url=server.base_url)
        server.queue(_stream("anthropic", "tool_call", _halves))
        chunks = await collect(provider.stream(_request()))
        thinking = [c for c in chunks if isinstance(c, ThinkingChunk)]
        assert "".join(c.text for c in thinking) == "The user wants the weather in Zürich."
        assert thinking[-1].signature == (
            "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+LqA2WkJ9Y/BSo8Yy2wzN0GCPd6Fg=="
        )
        # Order within the response: thinking, then the text, then the tool call.
        kinds = [type(c).__name__ for c in chunks]
        assert kinds.index("ThinkingChunk") < kinds.index("TextChunk") < kinds.index(
            "ToolCallChunk"
        )

        server.queue(_stream("anthropic", "text"))
        await collect(provider.stream(_request(TOOL_TURN)))
        body = server.requests[-1].body
        assert server.requests[-1].headers["authorization"] == "Bearer sk-ant-test"
        assert body["system"] == "Be brief."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["messages"][1]["content"] == [
            {"type": "thinking", "thinking": "Two cities.", "signature": "sig-abc"},
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
             "input": {"city": "Zürich"}},
            {"type": "tool_use", "id": "toolu_2", "name": "get_weather",
             "input": {"_raw": '{"city": "Par'}},
        ]
        # Both results and the reminder merge into one user message.
        assert body["messages"][2]["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 °C"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "bad arguments",
             "is_error": True},
            {"type": "text", "text": "Reminder: answer in one line."},
        ]
        await provider.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mode", "effort", "thinking", "extra", "max_tokens"),
    [
        ("adaptive", None, None, None, 512),
        ("adaptive", "off", {"type": "disabled"}, None, 512),
        ("adaptive", "minimal", {"type": "adaptive"}, {"effort": "low"}, 512),
        ("adaptive", "high", {"type": "adaptive"}, {"effort": "high"}, 512),
        ("adaptive", "max", {"type": "adaptive"}, {"effort": "max"}, 512),
        ("budget", "medium", {"type": "enabled", "budget_tokens": 8192}, None, 512 + 8192),
        ("budget", "xhigh", {"type": "enabled", "budget_tokens": 32768}, None, 512 + 32768),
    ],
)
async def test_anthropic_reasoning_effort_on_the_wire(
    mode: str, effort: Any, thinking: Any, extra: Any, max_tokens: int
) -> None:
    with ReplayServer([_stream("anthropic", "text")]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url, thinking=mode)
        await collect(provider.stream(_request(reasoning_effort=effort)))
        body = server.requests[-1].body
        assert body.get("thinking") == thinking
        assert body.get("output_config") == extra
        assert body["max_tokens"] == max_tokens
        await provider.aclose()


@pytest.mark.anyio
async def test_anthropic_bad_key_is_a_clear_non_retryable_error() -> None:
    reply = Reply.json(401, {"type": "error", "error": {
        "type": "authentication_error", "message": "invalid x-api-key"}})
    with ReplayServer([reply]) as server:
        provider = AnthropicProvider(api_key="wrong", base_url=server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert not info.value.retryable
        assert info.value.status == 401
        assert "invalid x-api-key" in info.value.message
        assert "ANTHROPIC_API_KEY" in info.value.message
        await provider.aclose()


@pytest.mark.anyio
async def test_retry_after_as_http_date_and_milliseconds() -> None:
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    replies = [
        Reply.json(529, body, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        Reply.json(429, body, {"retry-after-ms": "1500", "retry-after": "2"}),
    ]
    with ReplayServer(replies) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert info.value.retryable and info.value.retry_after == 0.0  # a date in the past
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert info.value.retryable and info.value.retry_after == 1.5
        await provider.aclose()


@pytest.mark.anyio
async def test_truncated_stream_is_a_retryable_error() -> None:
    data = (DATA / "anthropic" / "text.sse").read_bytes()
    cut = data[: data.index(b"event: message_delta")]
    with ReplayServer([Reply(200, _events(cut))]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert info.value.retryable and info.value.kind == "incomplete_stream"
        await provider.aclose()


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", ["anthropic", "openai-chat", "openai-responses"])
async def test_timeout_is_a_retryable_error(flavour: str) -> None:
    with ReplayServer([Reply(200, (), delay=3.0)]) as server:
        if flavour == "anthropic":
            provider: Any = AnthropicProvider(api_key="k", base_url=server.base_url, timeout=0.3)
        else:
            provider = OpenAIProvider(
                api_key="k", base_url=server.base_url, timeout=0.3, api=flavour[7:]  # type: ignore[arg-type]
            )
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert info.value.retryable and info.value.kind == "timeout", info.value
        await provider.aclose()


@pytest.mark.anyio
async def test_openai_responses_reasoning_round_trip() -> None:
    with ReplayServer([_stream("openai_responses", "tool_call", _halves)]) as server:
        provider = OpenAIProvider(api_key="sk-test", base_url=server.base_url)
        chunks = await collect(provider.stream(_request(reasoning_effort="high")))
        body = server.requests[-1].body
        assert server.requests[-1].path == "/responses"
        assert server.requests[-1].headers["authorization"] == "Bearer sk-test"
        assert body["reasoning"] == {"effort": "high", "summary": "auto"}
        assert body["include"] == ["reasoning.encrypted_content"]
        assert body["instructions"] == "Be brief." and body["store"] is False
        assert body["max_output_tokens"] == 512
        thinking = [c for c in chunks if isinstance(c, ThinkingChunk)]
        assert "".join(c.text for c in thinking) == "The user wants the weather in Zürich."
        signature = thinking[-1].signature
        assert signature is not None and signature.startswith("rs_")
        calls = [c.call for c in chunks if isinstance(c, ToolCallChunk)]

        transcript = [
            UserMessage(content="Weather in Zürich?"),
            AssistantMessage(
                thinking=(ThinkingBlock(content="The user wants the weather in Zürich.",
                                        signature=signature),),
                tool_calls=tuple(calls),
            ),
            ToolResultMessage(tool_call_id=calls[0].id, name="get_weather", content="21 °C",
                              is_error=False),
        ]
        server.queue(_stream("openai_responses", "text"))
        await collect(provider.stream(_request(transcript, reasoning_effort="off")))
        body = server.requests[-1].body
        assert body["reasoning"] == {"effort": "none"} and "include" not in body
        item_id, _, encrypted = signature.partition(":")
        assert body["input"] == [
            {"role": "user", "content": "Weather in Zürich?"},
            {"type": "reasoning", "id": item_id, "encrypted_content": encrypted,
             "summary": [{"type": "summary_text",
                          "text": "The user wants the weather in Zürich."}]},
            {"type": "function_call", "call_id": "call_weather_1", "name": "get_weather",
             "arguments": json.dumps(calls[0].arguments, ensure_ascii=False)},
            {"type": "function_call_output", "call_id": "call_weather_1", "output": "21 °C"},
        ]
        await provider.aclose()


@pytest.mark.anyio
async def test_openai_chat_request_shape() -> None:
    with ReplayServer([_stream("openai_chat", "text")]) as server:
        provider = OpenAIProvider(api_key="sk-test", base_url=server.base_url, api="chat")
        await collect(provider.stream(_request(TOOL_TURN, reasoning_effort="low")))
        request = server.requests[-1]
        assert request.path == "/chat/completions"
        body = request.body
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
        assert body["reasoning_effort"] == "low" and body["max_completion_tokens"] == 512
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["messages"][2]["tool_calls"][1] == {
            "id": "toolu_2", "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Par'},
        }
        assert body["messages"][3:5] == [
            {"role": "tool", "tool_call_id": "toolu_1", "content": "21 °C"},
            {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: bad arguments"},
        ]
        await provider.aclose()


def test_retryable_statuses_without_a_server() -> None:
    from agentkit.providers._errors import map_error

    class Fake(Exception):
        def __init__(self, status: int, body: Any) -> None:
            self.status_code = status
            self.body = body
            self.response = None

    err = map_error(Fake(500, {"error": {"message": "boom"}}), provider="p", model="m",
                    key_env=None)
    assert err.retryable and err.status == 500
    err = map_error(Fake(400, {"error": {"type": "invalid_request_error",
                                         "message": "max_tokens too large"}}),
                    provider="p", model="m", key_env=None)
    assert not err.retryable and "max_tokens too large" in err.message


def _sse(*events: tuple[str, dict[str, Any]]) -> Reply:
    return Reply(200, [f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                       for name, data in events])


def _anthropic_message(stop_reason: str) -> Reply:
    return _sse(
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": 3, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": "Hi"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 4}}),
        ("message_stop", {"type": "message_stop"}),
    )


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("wire", "ours"),
    [("end_turn", "end_turn"), ("stop_sequence", "end_turn"), ("max_tokens", "max_tokens"),
     ("refusal", "refusal"), ("pause_turn", "other")],
)
async def test_anthropic_stop_reasons(wire: str, ours: str) -> None:
    with ReplayServer([_anthropic_message(wire)]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        chunks = await collect(provider.stream(_request()))
        await provider.aclose()
    assert chunks[0] == TextChunk("Hi")  # text given in content_block_start
    assert chunks[-1] == Stop(ours)  # type: ignore[arg-type]
    assert chunks[-2] == Usage("claude-x", input_tokens=3, output_tokens=4)


def _response(status: str, **extra: Any) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": status,
            "model": "gpt-x", "output": [], "error": None, "incomplete_details": None,
            "usage": None, **extra}


@pytest.mark.anyio
async def test_openai_responses_incomplete_and_failed() -> None:
    incomplete = _sse(
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m",
                                        "output_index": 0, "content_index": 0,
                                        "delta": "Partial", "sequence_number": 1}),
        ("response.incomplete", {"type": "response.incomplete", "sequence_number": 2,
                                 "response": _response(
                                     "incomplete",
                                     incomplete_details={"reason": "max_output_tokens"})}),
    )
    failed = _sse(
        ("response.failed", {"type": "response.failed", "sequence_number": 1,
                             "response": _response("failed", error={
                                 "code": "server_error", "message": "The model failed."})}),
    )
    with ReplayServer([incomplete, failed]) as server:
        provider = OpenAIProvider(api_key="k", base_url=server.base_url)
        chunks = await collect(provider.stream(_request()))
        assert chunks == [TextChunk("Partial"), Stop("max_tokens")]
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        assert info.value.retryable and "The model failed." in info.value.message
        await provider.aclose()


REDACTED = (
    "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7"
    "vB5URj2pLmN4Za6Tk0rzwg2eKhC1b9Dr"
)


@pytest.mark.anyio
async def test_anthropic_redacted_thinking_goes_back_unchanged_and_is_never_shown() -> None:
    from agentkit import AgentSpec, Runtime
    from agentkit.stores import MemoryStore
    from agentkit.tools import Tool, ToolRegistry

    async def lookup(arguments: dict[str, Any], context: Any) -> str:
        return "found"

    with ReplayServer() as server:
        provider = AnthropicProvider(api_key="sk-ant-test", base_url=server.base_url)
        server.queue(_stream("anthropic", "redacted_thinking"))
        server.queue(_stream("anthropic", "text"))
        spec = AgentSpec(id="demo:redacted", tools=["lookup"])
        tools = ToolRegistry([Tool("lookup", "Look up.", {"type": "object"}, lookup)])
        store = MemoryStore()
        async with Runtime(provider=provider, tools=tools, store=store) as runtime:
            run = await runtime.start(spec, "find x")
            outcome = await run.wait()
        assert outcome.ok, outcome.error
        thinking = [e async for e in run.events() if e.type == "thinking"]
        assert [t.content for t in thinking] == ["Now the lookup."]  # nothing for the redacted
        # The second request carries both blocks back, in order, the redacted one unchanged.
        sent = server.requests[-1].body["messages"][1]["content"]
        assert sent[:2] == [
            {"type": "redacted_thinking", "data": REDACTED},
            {"type": "thinking", "thinking": "Now the lookup.", "signature": "EqQBCgIYAhIMsig2=="},
        ]
        # And the stored transcript keeps it for the next turn.
        transcript = await store.load_transcript(outcome.session_id)
        assert isinstance(transcript[1], AssistantMessage)
        assert transcript[1].thinking[0] == ThinkingBlock(content="", redacted=REDACTED)
        await provider.aclose()


# --- timeouts: seconds, not minutes ------------------------------------

TIMEOUT_VARS = ("AGENTKIT_PROVIDER_CONNECT_TIMEOUT", "AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT",
                "AGENTKIT_PROVIDER_READ_TIMEOUT", "AGENTKIT_PROVIDER_TOTAL_TIMEOUT")


class RawServer:
    """A loopback server whose `answer(connection)` writes whatever bytes it likes; for
    servers that stall, trickle or send half a response."""

    def __init__(self, answer: Callable[[socket.socket, threading.Event], None]) -> None:
        self._answer = answer
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.base_url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                self._answer(conn, self.stop)
            except OSError:
                return


def _never_answer(conn: socket.socket, stop: threading.Event) -> None:
    stop.wait(60)


def _headers_then_silence(conn: socket.socket, stop: threading.Event) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    stop.wait(60)


def _trickle(conn: socket.socket, stop: threading.Event) -> None:
    """An event stream that never ends: a keep-alive comment every 0.2 s."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n")
    while not stop.wait(0.2):
        piece = b": keep-alive\n\n"
        conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")


def _provider(flavour: str, url: str, **options: Any) -> Any:
    if flavour == "anthropic":
        return AnthropicProvider(api_key="k", base_url=url, **options)
    return OpenAIProvider(api_key="k", base_url=url + "/v1", api=flavour[7:], **options)  # type: ignore[arg-type]


FLAVOURS = ["anthropic", "openai-chat", "openai-responses"]


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("answer", "option", "phrase"),
    [
        (_never_answer, "first_byte_timeout", "no response within 1 s of sending the request"),
        (_headers_then_silence, "read_timeout", "the server went silent"),
        (_trickle, "total_timeout", "took longer than 1 s in all"),
    ],
)
async def test_a_stalled_server_times_out_in_seconds(
    flavour: str, answer: Any, option: str, phrase: str
) -> None:
    with RawServer(answer) as server:
        provider = _provider(flavour, server.base_url, **{option: 1})
        started = time.monotonic()
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        elapsed = time.monotonic() - started
        await provider.aclose()
    assert elapsed < 6, elapsed  # not the client library's 600 s per attempt
    assert info.value.retryable and info.value.kind == "timeout"
    assert phrase in info.value.message, info.value.message


@pytest.mark.anyio
async def test_a_server_that_never_answers_fails_the_run_in_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from agentkit import AgentSpec, Runtime
    from agentkit.runtime import RetryPolicy

    monkeypatch.setenv("AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT", "1")
    with RawServer(_never_answer) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url)
        retry = RetryPolicy(max_attempts=2, initial_delay=0.01)
        async with Runtime(provider=provider, retry=retry) as runtime:
            started = time.monotonic()
            run = await runtime.start(AgentSpec(id="demo:t"), "hello?")
            outcome = await run.wait()
            elapsed = time.monotonic() - started
        await provider.aclose()
    assert outcome.status == "error" and outcome.accounting.model_calls == 1
    assert "no response within 1 s" in (outcome.error or "")
    assert "AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT" in (outcome.error or "")
    assert elapsed < 8, elapsed  # two attempts of 1 s, not 4 of 600 s


def test_timeouts_come_from_arguments_then_the_environment_then_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in TIMEOUT_VARS:
        monkeypatch.delenv(name, raising=False)
    assert ProviderTimeouts.resolve() == ProviderTimeouts(10, 60, 120, 600)
    monkeypatch.setenv("AGENTKIT_PROVIDER_CONNECT_TIMEOUT", "3")
    monkeypatch.setenv("AGENTKIT_PROVIDER_TOTAL_TIMEOUT", "90.5")
    assert ProviderTimeouts.resolve() == ProviderTimeouts(3, 60, 120, 90.5)
    assert ProviderTimeouts.resolve(connect=1, read=7) == ProviderTimeouts(1, 60, 7, 90.5)
    # The older single `timeout` stands in for connect, first byte and read.
    assert ProviderTimeouts.resolve(timeout=5) == ProviderTimeouts(5, 5, 5, 90.5)
    provider = AnthropicProvider(api_key="k", first_byte_timeout=2)
    assert provider.timeouts == ProviderTimeouts(3, 2, 120, 90.5)
    from agentkit.providers import create_provider

    made = create_provider("openai", api_key="k", read_timeout=4)
    assert made.timeouts == ProviderTimeouts(3, 60, 4, 90.5)  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan", "inf", "1e99"])
def test_a_bad_timeout_is_a_config_error_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("AGENTKIT_PROVIDER_READ_TIMEOUT", value)
    with pytest.raises(ProviderConfigError, match="AGENTKIT_PROVIDER_READ_TIMEOUT must be a"):
        AnthropicProvider(api_key="k")
    monkeypatch.delenv("AGENTKIT_PROVIDER_READ_TIMEOUT")
    with pytest.raises(ProviderConfigError, match="total_timeout must be a positive"):
        OpenAIProvider(api_key="k", total_timeout=float(value) if value != "soon" else value)  # type: ignore[arg-type]


def test_set_default_timeouts_is_what_a_command_line_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in TIMEOUT_VARS:
        monkeypatch.delenv(name, raising=False)
    set_default_timeouts(connect="2", first_byte=20, total=None)
    assert os.environ["AGENTKIT_PROVIDER_CONNECT_TIMEOUT"] == "2.0"
    assert "AGENTKIT_PROVIDER_TOTAL_TIMEOUT" not in os.environ
    assert AnthropicProvider(api_key="k").timeouts == ProviderTimeouts(2, 20, 120, 600)
    with pytest.raises(ProviderConfigError):
        set_default_timeouts(read="x", connect=5)
    assert os.environ["AGENTKIT_PROVIDER_CONNECT_TIMEOUT"] == "2.0"  # nothing changed


# --- what the server sent ---------------------------------------------

PAGE = (b"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title>"
        b"<style>body { color: red }</style></head>\n<body><center><h1>502 Bad Gateway</h1>"
        b"</center><hr><center>nginx/1.25.3</center>" + b" " * 5000 + b"</body></html>\n")


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_an_html_page_with_200_says_what_the_server_sent(flavour: str) -> None:
    with ReplayServer([Reply(200, (PAGE,), content_type="text/html; charset=utf-8")]) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    message = info.value.message
    assert "HTTP 200, text/html; charset=utf-8 instead of an event stream" in message, message
    assert "page titled '502 Bad Gateway'" in message and "nginx/1.25.3" in message
    assert "<" not in message.partition("stream")[2] and len(message) < 400
    assert not info.value.retryable and info.value.kind == "bad_response"


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_an_html_error_page_says_status_type_and_an_excerpt(flavour: str) -> None:
    with ReplayServer([Reply(502, (PAGE,), content_type="text/html")]) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    message = info.value.message
    assert "(HTTP 502)" in message and "the server sent text/html" in message, message
    assert "page titled '502 Bad Gateway'" in message and len(message) < 400
    assert info.value.retryable and info.value.status == 502


BROKEN = {
    "anthropic": b'event: message_start\ndata: {"type": "message_start", "message": {oops\n\n',
    "openai-chat": b"data: {\"id\": \"c\", \"choices\": [{oops\n\n",
    "openai-responses": b"event: response.created\ndata: {\"type\": \"response.created\", oops\n\n",
}


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_broken_sse_says_what_the_server_sent(flavour: str) -> None:
    with ReplayServer([Reply(200, [BROKEN[flavour]])]) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    message = info.value.message
    assert "a stream event that is not JSON (HTTP 200, text/event-stream" in message, message
    assert "oops" in message
    assert info.value.kind == "bad_response"


WRONG_TYPED = {
    "anthropic": [
        ("message_start", {"type": "message_start", "message": {
            "id": "m", "type": "message", "role": "assistant", "model": "claude-x",
            "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": "Hi"}),
    ],
    "openai-chat": [
        ("", {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x",
              "choices": ["Hi"]}),
    ],
    "openai-responses": [
        ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "m",
                                        "output_index": 0, "content_index": 0, "delta": 42,
                                        "sequence_number": 1}),
    ],
}


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_a_wrong_typed_chunk_says_what_the_server_sent(flavour: str) -> None:
    pieces = [(f"event: {name}\n" if name else "").encode() + b"data: "
              + json.dumps(data).encode() + b"\n\n" for name, data in WRONG_TYPED[flavour]]
    with ReplayServer([Reply(200, pieces)]) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    message = info.value.message
    assert "the server sent an event of an unexpected shape" in message, message
    assert "HTTP 200, text/event-stream" in message
    assert ('"Hi"' in message) or ("42" in message), message
    assert "'str' object has no attribute" not in message.partition("):")[2]
    assert info.value.kind == "bad_response" and not info.value.retryable


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_a_stream_without_its_end_says_how_much_came(flavour: str) -> None:
    pieces = [b": just comments\n\n", b": and nothing else\n\n"]
    with ReplayServer([Reply(200, pieces)]) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    assert info.value.kind == "incomplete_stream"
    assert "(HTTP 200, text/event-stream, 0 events)" in info.value.message, info.value.message


def _endless_arguments(flavour: str) -> list[bytes]:
    """A tool call whose arguments stream 100,000 characters at a time, 10 M in all."""
    piece = "x" * 100_000
    if flavour == "anthropic":
        events: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": {
                "id": "m", "type": "message", "role": "assistant", "model": "claude-x",
                "content": [], "usage": {"input_tokens": 1, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}}),
        ]
        events += [("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {
            "type": "input_json_delta", "partial_json": piece}})] * 100
    elif flavour == "openai-chat":
        events = [("", {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
                        "choices": [{"index": 0, "finish_reason": None, "delta": {
                            "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                            "function": {"name": "f", "arguments": piece}}]}}]})
                  ] * 100
    else:
        events = [("response.function_call_arguments.delta", {
            "type": "response.function_call_arguments.delta", "item_id": "fc_1",
            "output_index": 0, "delta": piece, "sequence_number": 1})] * 100
    return [(f"event: {name}\n" if name else "").encode() + b"data: "
            + json.dumps(data).encode() + b"\n\n" for name, data in events]


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_endlessly_streamed_tool_arguments_are_bounded(flavour: str) -> None:
    from agentkit.providers._args import MAX_ARGUMENT_CHARS

    with ReplayServer([Reply(200, _endless_arguments(flavour))], piece_delay=0) as server:
        provider = _provider(flavour, server.base_url)
        with pytest.raises(ProviderError) as info:
            await collect(provider.stream(_request()))
        await provider.aclose()
    assert info.value.kind == "reply_too_large" and not info.value.retryable
    assert f"over {MAX_ARGUMENT_CHARS:,} characters" in info.value.message


@pytest.mark.anyio
@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_a_refused_connection_says_where_and_why(flavour: str) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there once closed
    provider = _provider(flavour, f"http://user:secret@127.0.0.1:{port}")
    with pytest.raises(ProviderError) as info:
        await collect(provider.stream(_request()))
    await provider.aclose()
    message = info.value.message
    assert f"connection failed to http://127.0.0.1:{port}/" in message, message
    assert "ConnectionRefusedError" in message or "refused" in message.lower(), message
    assert "secret" not in message
    assert info.value.retryable and info.value.kind == "connection"
