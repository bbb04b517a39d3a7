"""A conformance suite every provider passes, and the loopback server it drives them with.

A provider is checked by pointing it at a [`ReplayServer`][agentkit.testing.ReplayServer]
(a real HTTP/1.1 server on 127.0.0.1 in a thread, so it serves asyncio and trio tests
alike) that answers each request with byte-exact recorded replies, chunk by chunk. A
[`WireScript`][agentkit.testing.WireScript] holds one API's replies for every scenario;
the suite knows what each scenario must produce, whichever API carried it:

```python
from agentkit.testing import WireScript, run_provider_conformance

await run_provider_conformance(lambda base_url: MyProvider(base_url=base_url), script)
```

Providers without a wire (an in-process model, a live server) are checked with
[`check_live_provider`][agentkit.testing.check_live_provider], which only asserts the
stream contract.

Why one long module: the replay server and one scenario per point of the wire contract, kept
together so that a provider's author reads the whole contract in one place.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentkit.providers import (
    AssistantMessage,
    Chunk,
    ModelRequest,
    Provider,
    ProviderError,
    Stop,
    TextChunk,
    ThinkingBlock,
    ThinkingChunk,
    ToolCall,
    ToolCallChunk,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
)

__all__ = [
    "CONFORMANCE_MODEL",
    "CONFORMANCE_SCENARIOS",
    "MALFORMED_ARGUMENTS",
    "TEXT_ANSWER",
    "TOOL_ARGUMENTS",
    "TOOL_CALL_ID",
    "UTF8_ANSWER",
    "WEATHER_TOOL",
    "RecordedRequest",
    "ReplayServer",
    "Reply",
    "WireScript",
    "check_live_provider",
    "check_stream_contract",
    "collect",
    "run_conformance_scenario",
    "run_provider_conformance",
    "split_inside_utf8",
]

CONFORMANCE_MODEL = "conformance-model"
"""The model every scenario requests."""
TEXT_ANSWER = "Hello there! How can I help?"
"""The answer of the `text` scenario."""
UTF8_ANSWER = "Grüße aus Zürich – 東京 🌸 ok"
"""The answer of the `utf8` scenario, whose bytes are split inside characters."""
TOOL_CALL_ID = "call_weather_1"
"""The id of the call in the `tool_call` scenario."""
TOOL_ARGUMENTS: Mapping[str, Any] = {"city": "Zürich", "unit": "celsius", "days": 3}
"""The arguments of the `tool_call` scenario, streamed in many pieces."""
MALFORMED_ARGUMENTS = '{"city": "Par'
"""The truncated arguments of the `malformed_tool_arguments` scenario."""
WEATHER_TOOL = ToolDefinition(
    name="get_weather",
    description="Current weather for a city.",
    input_schema={
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
        },
        "required": ["city"],
    },
)
"""The one tool offered in every scenario."""


# --- the loopback server ------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status, headers and the body as separately sent pieces.

    A streaming reply (`content_type` `text/event-stream`) goes out with chunked transfer
    encoding, one chunk per piece, each flushed on its own so the client reads them apart.
    """

    status: int = 200
    pieces: Sequence[bytes] = ()
    headers: Mapping[str, str] = field(default_factory=dict)
    content_type: str = "text/event-stream"
    delay: float = 0.0
    """Seconds to wait before answering (to test timeouts)."""

    @classmethod
    def json(
        cls, status: int, body: Any, headers: Mapping[str, str] | None = None
    ) -> Reply:
        """A plain JSON answer (an HTTP error, say)."""
        data = json.dumps(body).encode()
        return cls(status, (data,), dict(headers or {}), "application/json")


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    method: str
    path: str
    headers: Mapping[str, str]
    body: Any

    def strings(self) -> list[str]:
        """Every string in the JSON body, depth first (to look for content)."""
        found: list[str] = []

        def walk(value: Any) -> None:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, Mapping):
                for item in value.values():
                    walk(item)
            elif isinstance(value, list):
                for item in value:
                    walk(item)

        walk(self.body)
        return found


_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable", 529: "Overloaded"}


class ReplayServer:
    """An HTTP/1.1 server on 127.0.0.1 that answers requests with queued replies.

    Use it as a context manager; `base_url` is `http://127.0.0.1:<port>`. When the queue
    is empty it answers 500, so a test never hangs on a missing reply.
    """

    def __init__(self, replies: Sequence[Reply] = (), *, piece_delay: float = 0.002) -> None:
        self._replies: list[Reply] = list(replies)
        self._lock = threading.Lock()
        self._piece_delay = piece_delay
        self.requests: list[RecordedRequest] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self.port: int = self._sock.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>`."""
        return f"http://127.0.0.1:{self.port}"

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with `replies`, in order."""
        with self._lock:
            self._replies.extend(replies)

    def __enter__(self) -> ReplayServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop accepting connections."""
        self._closed.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(10)
        try:
            with conn, conn.makefile("rb") as rfile:
                request = _read_request(rfile)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                    reply = self._replies.pop(0) if self._replies else Reply.json(
                        500, {"error": {"message": "ReplayServer: no reply queued"}}
                    )
                self._send(conn, reply)
        except OSError:
            return

    def _send(self, conn: socket.socket, reply: Reply) -> None:
        if reply.delay:
            self._closed.wait(reply.delay)
        streaming = reply.content_type == "text/event-stream"
        head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}",
                f"Content-Type: {reply.content_type}", "Connection: close"]
        if streaming:
            head.append("Transfer-Encoding: chunked")
            head.append("Cache-Control: no-cache")
        else:
            head.append(f"Content-Length: {sum(len(p) for p in reply.pieces)}")
        head.extend(f"{k}: {v}" for k, v in reply.headers.items())
        conn.sendall(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        for piece in reply.pieces:
            if streaming:
                conn.sendall(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                time.sleep(self._piece_delay)
            else:
                conn.sendall(piece)
        if streaming:
            conn.sendall(b"0\r\n\r\n")


def _read_request(rfile: Any) -> RecordedRequest | None:
    line = rfile.readline(65536).decode("latin-1").strip()
    if not line:
        return None
    method, path, _ = line.split(" ", 2)
    headers: dict[str, str] = {}
    while True:
        raw = rfile.readline(65536).decode("latin-1").strip()
        if not raw:
            break
        name, _, value = raw.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    data = rfile.read(length) if length else b""
    try:
        body: Any = json.loads(data) if data else None
    except ValueError:
        body = data.decode("utf-8", "replace")
    return RecordedRequest(method, path, headers, body)


def split_inside_utf8(data: bytes) -> list[bytes]:
    """`data` cut in the middle of every multi-byte UTF-8 character (and nowhere else)."""
    pieces: list[bytes] = []
    start = 0
    for i, byte in enumerate(data):
        if byte >= 0xC0 and i + 1 < len(data):  # a lead byte: cut after it
            pieces.append(data[start : i + 1])
            start = i + 1
    pieces.append(data[start:])
    return [p for p in pieces if p]


# --- the scenarios ------------------------------------------------------------------------


@dataclass(frozen=True)
class WireScript:
    """One API's byte-exact replies for each conformance scenario.

    Each field is the replies for one scenario, in request order. `text_usage` is the
    usage the `text` reply reports, as the provider must surface it.
    """

    text: Sequence[Reply]
    text_usage: Usage
    tool_call: Sequence[Reply]
    utf8: Sequence[Reply]
    malformed_tool_arguments: Sequence[Reply]
    error_mid_stream: Sequence[Reply]
    overloaded: Sequence[Reply]
    rate_limited: Sequence[Reply]
    model_not_found: Sequence[Reply]
    overloaded_retry_after: float = 2.0
    rate_limited_retry_after: float = 7.0


def _request(messages: Sequence[Any] | None = None) -> ModelRequest:
    return ModelRequest(
        model=CONFORMANCE_MODEL,
        system="You are a terse weather assistant.",
        messages=tuple(messages or [UserMessage(content="What's the weather in Zürich?")]),
        tools=(WEATHER_TOOL,),
        max_output_tokens=512,
    )


async def collect(stream: AsyncIterator[Chunk]) -> list[Chunk]:
    """All chunks of a stream."""
    return [chunk async for chunk in stream]


def check_stream_contract(chunks: Sequence[Chunk]) -> None:
    """Assert what every provider's stream promises the engine.

    Exactly one `Stop`, last; every other chunk a known type; usage names a model and
    counts no negative tokens; tool calls carry an id and a name.
    """
    assert chunks, "the stream yielded nothing"
    assert isinstance(chunks[-1], Stop), f"the last chunk is {chunks[-1]!r}, not Stop"
    assert sum(isinstance(c, Stop) for c in chunks) == 1, "more than one Stop"
    for chunk in chunks:
        assert isinstance(chunk, TextChunk | ThinkingChunk | ToolCallChunk | Usage | Stop), chunk
        if isinstance(chunk, Usage):
            assert chunk.model, "usage without a model"
            counts = (chunk.input_tokens, chunk.output_tokens, chunk.cache_read_tokens,
                      chunk.cache_write_tokens, chunk.reasoning_tokens)
            assert min(counts) >= 0, chunk
        if isinstance(chunk, ToolCallChunk):
            assert chunk.call.id and chunk.call.name, chunk
    stop = chunks[-1]
    assert isinstance(stop, Stop)
    if any(isinstance(c, ToolCallChunk) for c in chunks):
        assert stop.reason == "tool_use", f"tool calls but stop reason {stop.reason!r}"


def _text(chunks: Sequence[Chunk]) -> str:
    return "".join(c.text for c in chunks if isinstance(c, TextChunk))


def _calls(chunks: Sequence[Chunk]) -> list[ToolCall]:
    return [c.call for c in chunks if isinstance(c, ToolCallChunk)]


def _usage(chunks: Sequence[Chunk]) -> Usage:
    usages = [c for c in chunks if isinstance(c, Usage)]
    assert usages, "no usage reported"
    return Usage(
        model=usages[-1].model,
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        cache_read_tokens=sum(u.cache_read_tokens for u in usages),
        cache_write_tokens=sum(u.cache_write_tokens for u in usages),
        reasoning_tokens=sum(u.reasoning_tokens for u in usages),
    )


async def _expect_error(
    provider: Provider, request: ModelRequest
) -> tuple[ProviderError, list[Chunk]]:
    seen: list[Chunk] = []
    try:
        async for chunk in provider.stream(request):
            seen.append(chunk)
    except ProviderError as exc:
        return exc, seen
    raise AssertionError(f"expected a ProviderError, the stream ended with {seen[-1:]!r}")


Scenario = Callable[[Provider, ReplayServer, WireScript], Awaitable[None]]


async def _text_scenario(provider: Provider, server: ReplayServer, wire: WireScript) -> None:
    server.queue(*wire.text)
    chunks = await collect(provider.stream(_request()))
    check_stream_contract(chunks)
    assert _text(chunks) == TEXT_ANSWER, _text(chunks)
    stop = chunks[-1]
    assert isinstance(stop, Stop) and stop.reason == "end_turn", stop
    usage = _usage(chunks)
    expected = wire.text_usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
            usage.cache_write_tokens, usage.reasoning_tokens) == (
        expected.input_tokens, expected.output_tokens, expected.cache_read_tokens,
        expected.cache_write_tokens, expected.reasoning_tokens), usage
    assert usage.model == expected.model, usage.model
    sent = server.requests[-1]
    assert sent.method == "POST", sent.method
    strings = sent.strings()
    assert CONFORMANCE_MODEL in strings, "the request does not name the model"
    assert "What's the weather in Zürich?" in strings, "the user prompt was not sent"
    assert "You are a terse weather assistant." in strings, "the system prompt was not sent"
    assert WEATHER_TOOL.name in strings, "the tool was not offered"


async def _tool_call_scenario(provider: Provider, server: ReplayServer, wire: WireScript) -> None:
    server.queue(*wire.tool_call)
    chunks = await collect(provider.stream(_request()))
    check_stream_contract(chunks)
    calls = _calls(chunks)
    assert len(calls) == 1, calls
    assert calls[0].id == TOOL_CALL_ID and calls[0].name == WEATHER_TOOL.name, calls[0]
    assert calls[0].arguments == dict(TOOL_ARGUMENTS), calls[0].arguments
    # The next turn carries the call and its result back to the model.
    transcript = [
        UserMessage(content="What's the weather in Zürich?"),
        AssistantMessage(tool_calls=(calls[0],)),
        ToolResultMessage(tool_call_id=calls[0].id, name=calls[0].name, content="21 °C, sunny"),
    ]
    server.queue(*wire.text)
    chunks = await collect(provider.stream(_request(transcript)))
    check_stream_contract(chunks)
    strings = server.requests[-1].strings()
    assert TOOL_CALL_ID in strings, "the tool call id was not sent back"
    assert any("21 °C, sunny" in s for s in strings), "the tool result was not sent back"


async def _utf8_scenario(provider: Provider, server: ReplayServer, wire: WireScript) -> None:
    server.queue(*wire.utf8)
    chunks = await collect(provider.stream(_request()))
    check_stream_contract(chunks)
    assert _text(chunks) == UTF8_ANSWER, _text(chunks)


async def _malformed_scenario(provider: Provider, server: ReplayServer, wire: WireScript) -> None:
    server.queue(*wire.malformed_tool_arguments)
    chunks = await collect(provider.stream(_request()))
    check_stream_contract(chunks)
    calls = _calls(chunks)
    assert len(calls) == 1 and calls[0].arguments == MALFORMED_ARGUMENTS, calls


async def _error_mid_stream_scenario(
    provider: Provider, server: ReplayServer, wire: WireScript
) -> None:
    server.queue(*wire.error_mid_stream)
    error, seen = await _expect_error(provider, _request())
    assert not any(isinstance(c, Stop) for c in seen), "Stop before the error"
    assert error.retryable, f"an overload inside the stream should be retryable: {error}"
    assert error.message, "the error has no message"


async def _overloaded_scenario(provider: Provider, server: ReplayServer, wire: WireScript) -> None:
    server.queue(*wire.overloaded)
    error, seen = await _expect_error(provider, _request())
    assert not seen, seen
    assert error.retryable, error
    assert error.retry_after == wire.overloaded_retry_after, error.retry_after


async def _rate_limited_scenario(
    provider: Provider, server: ReplayServer, wire: WireScript
) -> None:
    server.queue(*wire.rate_limited)
    error, seen = await _expect_error(provider, _request())
    assert not seen, seen
    assert error.retryable and error.status == 429, (error.retryable, error.status)
    assert error.retry_after == wire.rate_limited_retry_after, error.retry_after


async def _model_not_found_scenario(
    provider: Provider, server: ReplayServer, wire: WireScript
) -> None:
    server.queue(*wire.model_not_found)
    error, _ = await _expect_error(provider, _request())
    assert not error.retryable, error
    assert error.kind == "model_not_found", error.kind
    assert CONFORMANCE_MODEL in error.message, error.message


CONFORMANCE_SCENARIOS: Mapping[str, Scenario] = {
    "text": _text_scenario,
    "tool_call": _tool_call_scenario,
    "utf8": _utf8_scenario,
    "malformed_tool_arguments": _malformed_scenario,
    "error_mid_stream": _error_mid_stream_scenario,
    "overloaded": _overloaded_scenario,
    "rate_limited": _rate_limited_scenario,
    "model_not_found": _model_not_found_scenario,
}
"""The scenarios by name (parametrize tests over the keys)."""


async def _close(provider: Provider) -> None:
    aclose = getattr(provider, "aclose", None)
    if aclose is not None:
        await aclose()


async def run_conformance_scenario(
    name: str, factory: Callable[[str], Provider], wire: WireScript
) -> None:
    """Run one scenario: a fresh server, a provider built for its `base_url`."""
    with ReplayServer() as server:
        provider = factory(server.base_url)
        try:
            await CONFORMANCE_SCENARIOS[name](provider, server, wire)
        except AssertionError as exc:
            raise AssertionError(f"conformance scenario {name!r}: {exc}") from exc
        finally:
            await _close(provider)


async def run_provider_conformance(
    factory: Callable[[str], Provider], wire: WireScript
) -> None:
    """Run every scenario against providers built by `factory(base_url)`."""
    for name in CONFORMANCE_SCENARIOS:
        await run_conformance_scenario(name, factory, wire)


async def check_live_provider(
    provider: Provider, model: str, *, tools: bool = True
) -> list[Chunk]:
    """Check a provider that talks to a real model (no scripted wire).

    Asks a short question, checks the stream contract and that some text or a tool call
    came back; then sends a transcript with a tool call, its result and a thinking block
    and checks that the provider accepts it. Returns the first answer's chunks.
    """
    request = ModelRequest(
        model=model,
        system="You are a helpful assistant. Answer in one short sentence.",
        messages=(UserMessage(content="What is the capital of France?"),),
        tools=(WEATHER_TOOL,) if tools else (),
        max_output_tokens=48,
    )
    chunks = await collect(provider.stream(request))
    check_stream_contract(chunks)
    assert _text(chunks).strip() or _calls(chunks), "the model answered nothing"
    follow_up = ModelRequest(
        model=model,
        system=request.system,
        messages=(
            UserMessage(content="What's the weather in Paris?"),
            AssistantMessage(
                thinking=(ThinkingBlock(content="The user wants the weather."),),
                tool_calls=(
                    ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ),
            ),
            ToolResultMessage(tool_call_id="call_1", name="get_weather", content="18 °C, cloudy"),
        ),
        tools=request.tools,
        max_output_tokens=48,
    )
    check_stream_contract(await collect(provider.stream(follow_up)))
    return chunks
