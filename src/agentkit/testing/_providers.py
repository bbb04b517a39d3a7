"""Offline providers: scripted, function-driven and schema-driven."""

from __future__ import annotations

import inspect
import json
import random
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterable,
    Mapping,
    Sequence,
)
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentkit.errors import ScriptError
from agentkit.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from agentkit.providers import (
    DEFAULT_CATALOGS,
    Chunk,
    ModelCatalog,
    ModelRequest,
    ProviderError,
    Stop,
    TextChunk,
    ThinkingChunk,
    ToolCallChunk,
    Usage,
)
from agentkit.testing._schemagen import generate

__all__ = [
    "FunctionProvider",
    "SchemaTestProvider",
    "ScriptError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedToolCall",
]


class ScriptedToolCall(BaseModel):
    """One tool call of a scripted response. `arguments` (raw text) replaces `input` to
    simulate a model sending malformed arguments."""

    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    arguments: str | None = None
    id: str | None = None


class ScriptedResponse(BaseModel):
    """One model response of a script.

    `text` is streamed in `deltas` pieces; `thinking` comes first; `tool_calls` after the
    text. `error` makes the call fail instead (`retryable`, `retry_after` as for
    `ProviderError`), after streaming any text when `error_after_text` is set.
    """

    model_config = ConfigDict(extra="forbid")

    text: str = ""
    thinking: str | None = None
    thinking_signature: str | None = None
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    deltas: int = Field(default=1, ge=1)
    error: str | None = None
    retryable: bool = False
    retry_after: float | None = None
    error_after_text: bool = False
    input_tokens: int = 0
    output_tokens: int = 0


ResponseLike = ScriptedResponse | Mapping[str, Any] | str


def _response(value: ResponseLike, where: str) -> ScriptedResponse:
    if isinstance(value, ScriptedResponse):
        return value
    if isinstance(value, str):
        return ScriptedResponse(text=value)
    try:
        return ScriptedResponse.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(entry)'}: {e['msg']}" for e in exc.errors()
        )
        raise ScriptError(f"{where}: {problems}") from None


def _split(text: str, pieces: int) -> list[str]:
    if pieces <= 1 or len(text) <= 1:
        return [text] if text else []
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _estimate_tokens(request: ModelRequest) -> int:
    size = len(request.system)
    for message in request.messages:
        if isinstance(message, UserMessage | ToolResultMessage):
            size += len(message.content)
        else:
            size += len(message.text)
    return max(1, size // 4)


async def _stream_response(
    response: ScriptedResponse, request: ModelRequest, call_index: int
) -> AsyncIterator[Chunk]:
    if response.error is not None and not response.error_after_text:
        raise ProviderError(
            response.error, retryable=response.retryable, retry_after=response.retry_after
        )
    if response.thinking is not None:
        yield ThinkingChunk(response.thinking, response.thinking_signature)
    for piece in _split(response.text, response.deltas):
        yield TextChunk(piece)
    if response.error is not None:
        raise ProviderError(
            response.error, retryable=response.retryable, retry_after=response.retry_after
        )
    for index, call in enumerate(response.tool_calls):
        arguments: dict[str, Any] | str = (
            call.arguments if call.arguments is not None else call.input
        )
        call_id = call.id or f"call_{call_index}_{index}"
        yield ToolCallChunk(ToolCall(id=call_id, name=call.name, arguments=arguments))
    yield Usage(
        request.model,
        input_tokens=response.input_tokens or _estimate_tokens(request),
        output_tokens=response.output_tokens or max(1, len(response.text) // 4),
    )
    yield Stop("tool_use" if response.tool_calls else "end_turn")


class _TestProviderBase:
    name = "test"
    catalog: ModelCatalog = DEFAULT_CATALOGS["test"]

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        """Test models are named after the tier (`test-medium`) unless pinned."""
        return self.catalog.resolve(tier, model)


class ScriptedProvider(_TestProviderBase):
    """Answers with a fixed list of responses, in order, one per model call.

    Each response is a [`ScriptedResponse`][agentkit.testing.ScriptedResponse], a dict of
    its fields (`{"text": "..."}` or `{"tool_calls": [{"name": ..., "input": {...}}]}`), or
    a plain string. Running out of responses fails the call. `requests` records every
    request; `unused` lists responses never asked for, and `check_consumed()` raises when
    the script was not used up.
    """

    name = "scripted"

    def __init__(self, responses: Iterable[ResponseLike], *, name: str = "scripted") -> None:
        self.name = name
        self.responses = [_response(r, f"response {i}") for i, r in enumerate(responses)]
        self.requests: list[ModelRequest] = []
        self._next = 0

    @classmethod
    def from_file(cls, script: str | Path, **options: Any) -> ScriptedProvider:
        """Load a JSON list of responses from a file (the CLI's `--script FILE`)."""
        path = Path(script)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ScriptError(f"{path}: cannot read the script: {exc.strerror}") from None
        except ValueError as exc:
            raise ScriptError(f"{path}: not valid JSON: {exc}") from None
        if not isinstance(data, list):
            raise ScriptError(f"{path}: a script is a JSON list of responses")
        return cls([_response(r, f"{path}: response {i}") for i, r in enumerate(data)], **options)

    @property
    def unused(self) -> list[ScriptedResponse]:
        """Responses no model call asked for."""
        return self.responses[self._next :]

    def check_consumed(self) -> None:
        """Raise `AssertionError` when some responses were never used."""
        if self.unused:
            raise AssertionError(
                f"{len(self.unused)} of {len(self.responses)} scripted responses were not used"
            )

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        index = self._next
        if index >= len(self.responses):
            raise ProviderError(
                f"the script has no response left (it had {len(self.responses)})"
            )
        self._next += 1
        return _stream_response(self.responses[index], request, index)


Piece = str | ToolCall | Chunk
"""One item of a streamed function response: text (one delta), a tool call, or a chunk."""

FunctionResponse = ResponseLike | Iterable[Piece] | AsyncIterable[Piece]
"""What a `FunctionProvider`'s function gives for one model call."""

ResponseFunction = Callable[
    [ModelRequest], "FunctionResponse | Awaitable[FunctionResponse] | AsyncIterator[Piece]"
]

_CHUNKS = (TextChunk, ThinkingChunk, ToolCallChunk, Usage, Stop)


class FunctionProvider(_TestProviderBase):
    """Asks a function for each model call's response. `fn(request)` returns (or awaits
    to) one of:

    - a string: the whole answer, as one text delta;
    - a list (any iterable, a generator too) of pieces, streamed exactly as given: a
      string is one text delta, a [`ToolCall`][agentkit.providers.ToolCall] a tool call,
      and any [`Chunk`][agentkit.providers.Chunk] (`ThinkingChunk`, `Usage`, `Stop`, ...)
      goes out as it is;
    - an async iterator of pieces (or `fn` is an async generator function), streamed as
      they come, so a test can hold the model mid-answer;
    - a [`ScriptedResponse`][agentkit.testing.ScriptedResponse] or a dict of its fields.

    A streamed response without `Usage` or `Stop` gets them at its end (`tool_use` when it
    made a call). To fail the call, raise `ProviderError` from `fn`.

    Args:
        function: The function, sync or async.
        record: Keep every request in `requests`, in order. Off by default, so that a
            long-running test or benchmark does not keep every transcript it sent.
        name: The provider's name.

    Attributes:
        calls: How many model calls were made.
        requests: Every request, when `record=True` (else empty).
    """

    name = "function"

    def __init__(
        self, function: ResponseFunction, *, record: bool = False, name: str = "function"
    ) -> None:
        self.name = name
        self.function = function
        self.record = record
        self.calls = 0
        self.requests: list[ModelRequest] = []

    async def _respond(self, request: ModelRequest, index: int) -> AsyncIterator[Chunk]:
        value: Any = self.function(request)
        if inspect.isawaitable(value):
            value = await value
        if type(value) is str:  # the common case: no model built, nothing validated
            if value:
                yield TextChunk(value)
            yield Usage(
                request.model,
                input_tokens=_estimate_tokens(request),
                output_tokens=max(1, len(value) // 4),
            )
            yield Stop("end_turn")
            return
        if isinstance(value, ScriptedResponse | Mapping):
            response = _response(value, "function response")
            async for chunk in _stream_response(response, request, index):
                yield chunk
            return
        stream = _Pieces(request)
        if isinstance(value, AsyncIterable):
            async for piece in value:
                yield stream.chunk(piece)
        elif isinstance(value, Iterable) and not isinstance(value, bytes | BaseModel):
            for piece in value:
                yield stream.chunk(piece)
        else:
            raise ScriptError(
                f"function response: {type(value).__name__} is not a response (give a "
                "string, a list of pieces, an async iterator, a ScriptedResponse or a dict)"
            )
        for chunk in stream.ending():
            yield chunk

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        if self.record:
            self.requests.append(request)
        index = self.calls
        self.calls += 1
        return self._respond(request, index)


class _Pieces:
    """A streamed function response, piece by piece, and what it still lacks at its end."""

    __slots__ = ("called", "request", "stopped", "text", "usage")

    def __init__(self, request: ModelRequest) -> None:
        self.request = request
        self.text = 0
        self.called = self.usage = self.stopped = False

    def chunk(self, piece: Any) -> Chunk:
        if type(piece) is str:
            self.text += len(piece)
            return TextChunk(piece)
        if isinstance(piece, ToolCall):
            self.called = True
            return ToolCallChunk(piece)
        if isinstance(piece, _CHUNKS):
            if isinstance(piece, ToolCallChunk):
                self.called = True
            elif isinstance(piece, Usage):
                self.usage = True
            elif isinstance(piece, Stop):
                self.stopped = True
            elif isinstance(piece, TextChunk):
                self.text += len(piece.text)
            return piece
        raise ScriptError(
            f"function response: a piece is a string, a ToolCall or a Chunk, not "
            f"{type(piece).__name__}"
        )

    def ending(self) -> list[Chunk]:
        out: list[Chunk] = []
        if not self.usage:
            out.append(
                Usage(
                    self.request.model,
                    input_tokens=_estimate_tokens(self.request),
                    output_tokens=max(1, self.text // 4),
                )
            )
        if not self.stopped:
            out.append(Stop("tool_use" if self.called else "end_turn"))
        return out


class SchemaTestProvider(_TestProviderBase):
    """A deterministic stand-in model driven by the JSON Schemas in the request.

    On a user message it calls each offered tool once (or only those in `tools`) with
    arguments generated from the tool's schema; after the tool results it submits output
    generated from the `submit_output` schema when that tool is offered, and otherwise
    answers `text`. Same seed, same request: same response. Stateless, so one instance
    serves any number of concurrent runs. Registered as provider `test`.
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        tools: Sequence[str] | None = None,
        text: str = "Done.",
        catalog: ModelCatalog | None = None,
    ) -> None:
        self.seed = seed
        self.only = None if tools is None else frozenset(tools)
        self.text = text
        if catalog is not None:
            self.catalog = catalog

    def _rng(self, *parts: object) -> random.Random:
        return random.Random(":".join([str(self.seed), *map(str, parts)]))

    def respond(self, request: ModelRequest) -> ScriptedResponse:
        """The response this provider gives to `request`."""
        turn_messages = request.messages
        last_user = max(
            (
                i
                for i, m in enumerate(turn_messages)
                if isinstance(m, UserMessage) and not m.content.startswith("You have not called")
            ),
            default=-1,
        )
        since_user = turn_messages[last_user + 1 :]
        offered = {t.name: t for t in request.tools}
        submit = offered.get("submit_output")
        if not any(isinstance(m, AssistantMessage) for m in since_user):
            calls = [
                {
                    "name": tool.name,
                    "input": generate(tool.input_schema, self._rng(tool.name, len(turn_messages))),
                }
                for tool in request.tools
                if tool.name != "submit_output" and (self.only is None or tool.name in self.only)
            ]
            if calls:
                return ScriptedResponse(
                    text="Let me use the tools.",
                    tool_calls=[ScriptedToolCall.model_validate(c) for c in calls],
                )
        if submit is not None:
            payload = generate(submit.input_schema, self._rng("submit_output", len(turn_messages)))
            return ScriptedResponse(
                tool_calls=[ScriptedToolCall(name="submit_output", input=payload)]
            )
        return ScriptedResponse(text=self.text)

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return _stream_response(self.respond(request), request, len(request.messages))
