"""The OpenAI provider: the Responses API or Chat Completions through the official client.

The same class serves OpenAI-compatible servers (vLLM, Ollama, llama.cpp): give it a
`base_url`, and the key becomes optional. Reasoning effort is sent as
`reasoning={"effort": ...}` (Responses) or `reasoning_effort` (Chat Completions); `off`
becomes `none`, and `reasoning_effort` is only sent when the spec sets one.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import aclosing
from typing import Any, Literal

from agentkit.providers._args import Arguments, text_field, tool_call_chunk
from agentkit.providers._base import (
    AssistantMessage,
    Chunk,
    Message,
    ModelRequest,
    ProviderError,
    Stop,
    StopReason,
    TextChunk,
    ThinkingChunk,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentkit.providers._catalog import ModelCatalog, coerce_catalog
from agentkit.providers._errors import map_error
from agentkit.providers._registry import ProviderConfigError
from agentkit.providers._sdk import (
    SDKProvider,
    StreamSeen,
    WithinTotal,
    open_stream,
    relay,
    sdk_client,
)
from agentkit.providers._timeouts import ProviderTimeouts
from agentkit.spec import ReasoningEffort

__all__ = ["OpenAIProvider", "openai_compatible"]

Api = Literal["responses", "chat"]

_FINISH_REASONS: Mapping[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _effort(effort: ReasoningEffort | None) -> str | None:
    if effort is None:
        return None
    return "none" if effort == "off" else effort


class OpenAIProvider(SDKProvider):
    """Streams responses from OpenAI or an OpenAI-compatible server.

    Args:
        api: `"responses"` (the Responses API, default for OpenAI) or `"chat"` (Chat
            Completions, default for compatible servers).
        api_key: The API key; defaults to `OPENAI_API_KEY` (or `AGENTKIT_API_KEY` for a
            compatible server, where it is optional).
        base_url: The server; defaults to `OPENAI_BASE_URL` or the public API.
        catalog: A [`ModelCatalog`][agentkit.providers.ModelCatalog], or tier -> model
            overrides of `DEFAULT_CATALOGS[name]`.
        model: One model for every tier (handy for a compatible server that serves one).
        timeout: The older single timeout: when given, the connect, first-byte and read
            timeouts that are not given on their own.
        name: The provider name reported in errors and usage (`openai` or
            `openai-compatible`).
        store: Whether the Responses API keeps responses server-side (default `False`;
            reasoning is carried across turns as encrypted content instead).
        client: A ready `openai.AsyncOpenAI` to use instead of building one (its own
            connect and read timeouts then apply; first-byte and total ones still hold).
        connect_timeout: Seconds to open the connection (default 10).
        first_byte_timeout: Seconds from sending the request to the response's headers
            (default 60).
        read_timeout: The longest silence, in seconds, inside a response (default 120).
        total_timeout: Seconds one request may take in all (default 600).

    Timeouts not given fall back to the environment (`AGENTKIT_PROVIDER_CONNECT_TIMEOUT`,
    `AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT`, `AGENTKIT_PROVIDER_READ_TIMEOUT`,
    `AGENTKIT_PROVIDER_TOTAL_TIMEOUT`; see `ProviderTimeouts`), then to the defaults.
    """

    def __init__(
        self,
        *,
        api: Api | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
        catalog: ModelCatalog | Mapping[str, str] | None = None,
        model: str | None = None,
        timeout: float | None = None,
        name: str = "openai",
        store: bool = False,
        client: Any = None,
        connect_timeout: float | None = None,
        first_byte_timeout: float | None = None,
        read_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> None:
        compatible = name != "openai"
        api = api or ("chat" if compatible else "responses")
        if api not in ("responses", "chat"):
            raise ProviderConfigError(f"{name}: api must be 'responses' or 'chat', not {api!r}")
        self.name = name
        self.api: Api = api
        self.store = store
        self.catalog = coerce_catalog(name, catalog, model)
        self._key_env = "AGENTKIT_API_KEY" if compatible else "OPENAI_API_KEY"
        self.timeouts = ProviderTimeouts.resolve(
            connect=connect_timeout, first_byte=first_byte_timeout, read=read_timeout,
            total=total_timeout, timeout=timeout,
        )
        if client is None:
            if compatible:
                key = api_key or os.environ.get("AGENTKIT_API_KEY") or "not-needed"
                if not base_url:
                    raise ProviderConfigError(
                        f"the {name} provider needs a server URL: set AGENTKIT_BASE_URL "
                        "(for example http://127.0.0.1:8000/v1) or pass base_url=..."
                    )
            else:
                key = api_key or os.environ.get("OPENAI_API_KEY") or ""
                if not key:
                    raise ProviderConfigError(
                        "the openai provider needs an API key: set OPENAI_API_KEY "
                        "(or pass api_key=...)"
                    )
            client = sdk_client(
                "openai",
                "AsyncOpenAI",
                provider=name,
                api_key=key,
                base_url=base_url,
                base_url_env="OPENAI_BASE_URL",
                timeouts=self.timeouts,
            )
        self._client = client

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of the create call for `request` (without `stream`)."""
        if self.api == "chat":
            return _chat_params(request)
        return _responses_params(request, store=self.store)

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream one response as chunks; failures raise `ProviderError`."""
        return WithinTotal(self._stream(request), self.timeouts, self.name)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[Chunk, None]:
        params = self.build_params(request)

        def error(exc: BaseException) -> ProviderError:
            return self._error(exc, request.model)

        state: _ChatState | _ResponsesState
        if self.api == "chat":
            create = self._client.chat.completions.create(**params, stream=True)
            state = _ChatState(request.model)
        else:
            create = self._client.responses.create(**params, stream=True)
            state = _ResponsesState(request.model, self.name)
        events = await open_stream(create, self.timeouts, self.name, error)
        seen = StreamSeen()
        chunks = relay(events, state.feed, error, provider=self.name, seen=seen)
        async with aclosing(chunks):
            async for chunk in chunks:
                yield chunk
        for chunk in state.finish(self.name, seen):
            yield chunk

    def _error(self, exc: BaseException, model: str) -> ProviderError:
        return map_error(exc, provider=self.name, model=model, key_env=self._key_env)


def openai_compatible(**options: Any) -> OpenAIProvider:
    """An [`OpenAIProvider`][agentkit.providers.OpenAIProvider] for an OpenAI-compatible
    server: `base_url` defaults to `AGENTKIT_BASE_URL`, the key to `AGENTKIT_API_KEY`
    (optional), the API to Chat Completions, and `model` (every tier) to `AGENTKIT_MODEL`."""
    options.setdefault("name", "openai-compatible")
    options.setdefault("base_url", os.environ.get("AGENTKIT_BASE_URL"))
    options.setdefault("model", os.environ.get("AGENTKIT_MODEL") or None)
    return OpenAIProvider(**options)


def _arguments_json(call: ToolCall) -> str:
    args = call.arguments
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


# --- Chat Completions --------------------------------------------------------------------


def _chat_params(request: ModelRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "messages": to_chat_messages(request.system, request.messages),
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    if (effort := _effort(request.reasoning_effort)) is not None:
        params["reasoning_effort"] = effort
    if request.max_output_tokens:
        params["max_completion_tokens"] = request.max_output_tokens
    return params


def to_chat_messages(system: str, messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Chat Completions `messages` for a system prompt and a transcript."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, ToolResultMessage):
            content = f"Error: {message.content}" if message.is_error else message.content
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": content})
        elif isinstance(message, AssistantMessage):
            # An empty string, not null, beside tool calls: llama.cpp's server rejects
            # null and its chat templates need the key.
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": _arguments_json(call)},
                    }
                    for call in message.tool_calls
                ]
            out.append(entry)
    return out


class _ChatState:
    """Folds Chat Completions chunks into our chunks."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def feed(self, chunk: Any) -> list[Chunk]:
        out: list[Chunk] = []
        self.model = getattr(chunk, "model", None) or self.model
        if (usage := getattr(chunk, "usage", None)) is not None:
            prompt = usage.prompt_tokens or 0
            cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0)
            details = getattr(usage, "completion_tokens_details", None)
            self.usage = Usage(
                model=self.model,
                input_tokens=prompt - (cached or 0),
                output_tokens=usage.completion_tokens or 0,
                cache_read_tokens=cached or 0,
                reasoning_tokens=getattr(details, "reasoning_tokens", 0) or 0,
            )
        for choice in chunk.choices or ():
            delta = choice.delta
            if delta is not None:
                reasoning = getattr(delta, "reasoning_content", None) or getattr(
                    delta, "reasoning", None
                )
                if isinstance(reasoning, str) and reasoning:
                    out.append(ThinkingChunk(reasoning))
                if delta.content:
                    out.append(TextChunk(text_field(delta.content, "delta.content")))
                for piece in delta.tool_calls or ():
                    call = self.calls.setdefault(
                        piece.index, {"id": "", "name": "", "args": Arguments()}
                    )
                    if piece.id:
                        call["id"] = text_field(piece.id, "tool_calls[].id")
                    if piece.function is not None:
                        if piece.function.name:
                            call["name"] += text_field(piece.function.name, "function.name")
                        if piece.function.arguments:
                            call["args"].add(piece.function.arguments, "function.arguments")
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def finish(self, provider: str, seen: StreamSeen) -> list[Chunk]:
        if self.finish_reason is None:
            raise ProviderError(
                f"{provider}: the response stream ended without a finish reason "
                f"({seen.describe()})",
                retryable=True, status=seen.status, kind="incomplete_stream",
            )
        out: list[Chunk] = []
        for index in sorted(self.calls):
            call = self.calls[index]
            out.append(
                tool_call_chunk(call["id"] or f"call_{index}", call["name"], call["args"].text())
            )
        if self.usage is not None:
            out.append(self.usage)
        reason = _FINISH_REASONS.get(self.finish_reason, "other")
        if self.calls and reason == "end_turn":
            reason = "tool_use"  # some servers say "stop" after tool calls
        out.append(Stop(reason))
        return out


# --- Responses ---------------------------------------------------------------------------


def _responses_params(request: ModelRequest, *, store: bool) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "input": to_responses_input(request.messages),
        "store": store,
    }
    if request.system:
        params["instructions"] = request.system
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in request.tools
        ]
    if (effort := _effort(request.reasoning_effort)) is not None:
        params["reasoning"] = (
            {"effort": effort} if effort == "none" else {"effort": effort, "summary": "auto"}
        )
        if not store and effort != "none":
            params["include"] = ["reasoning.encrypted_content"]
    if request.max_output_tokens:
        params["max_output_tokens"] = request.max_output_tokens
    return params


def to_responses_input(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """Responses API `input` items for a transcript.

    Reasoning comes back as `reasoning` items when its signature holds the item id and
    encrypted content (`"<id>:<encrypted>"`), which is how this provider reports it.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": message.content})
        elif isinstance(message, ToolResultMessage):
            content = f"Error: {message.content}" if message.is_error else message.content
            out.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": content}
            )
        elif isinstance(message, AssistantMessage):
            for thought in message.thinking:
                item_id, sep, encrypted = (thought.signature or "").partition(":")
                if not sep:
                    continue
                summary = (
                    [{"type": "summary_text", "text": thought.content}] if thought.content else []
                )
                out.append(
                    {
                        "type": "reasoning",
                        "id": item_id,
                        "summary": summary,
                        "encrypted_content": encrypted,
                    }
                )
            if message.text:
                out.append({"role": "assistant", "content": message.text})
            for call in message.tool_calls:
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": _arguments_json(call),
                    }
                )
    return out


class _ResponsesState:
    """Folds Responses API stream events into our chunks."""

    def __init__(self, model: str, provider: str) -> None:
        self.model = model
        self.provider = provider
        self.calls: dict[str, dict[str, Any]] = {}
        self.saw_call = False
        self.done = False
        self.stop: StopReason = "end_turn"
        self.usage: Usage | None = None

    def feed(self, event: Any) -> list[Chunk]:
        kind = event.type
        if kind == "response.output_text.delta":
            return [TextChunk(text_field(event.delta, kind))] if event.delta else []
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return [ThinkingChunk(text_field(event.delta, kind))] if event.delta else []
        if kind == "response.output_item.added" and event.item.type == "function_call":
            item = event.item
            self.calls[item.id or item.call_id] = {
                "call_id": item.call_id, "name": item.name,
                "args": Arguments(item.arguments, "function_call.arguments"),
            }
        elif kind == "response.function_call_arguments.delta":
            self.calls.setdefault(
                event.item_id, {"call_id": "", "name": "", "args": Arguments()}
            )
            self.calls[event.item_id]["args"].add(event.delta, kind)
        elif kind == "response.output_item.done":
            return self._item_done(event.item)
        elif kind in ("response.completed", "response.incomplete"):
            self._completed(event.response)
        elif kind == "response.failed":
            error = event.response.error
            code = getattr(error, "code", None) or "error"
            message = getattr(error, "message", None) or "the response failed"
            raise ProviderError(
                f"{self.provider}: {message} ({code})",
                retryable=code in ("server_error", "rate_limit_exceeded"), kind=code,
            )
        elif kind == "error":
            code = getattr(event, "code", None) or "error"
            raise ProviderError(
                f"{self.provider}: error during the response stream: {event.message} ({code})",
                retryable=code in ("server_error", "rate_limit_exceeded", "overloaded"),
                kind=code,
            )
        return []

    def _item_done(self, item: Any) -> list[Chunk]:
        if item.type == "function_call":
            partial = self.calls.pop(item.id or item.call_id, None)
            raw = (
                item.arguments if item.arguments is not None
                else partial["args"].text() if partial is not None else ""
            )
            self.saw_call = True
            return [tool_call_chunk(item.call_id, item.name, raw)]
        if item.type == "reasoning" and getattr(item, "encrypted_content", None):
            return [ThinkingChunk("", signature=f"{item.id}:{item.encrypted_content}")]
        return []

    def _completed(self, response: Any) -> None:
        self.done = True
        self.model = getattr(response, "model", None) or self.model
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        if reason == "max_output_tokens":
            self.stop = "max_tokens"
        elif reason == "content_filter":
            self.stop = "refusal"
        elif reason:
            self.stop = "other"
        usage = getattr(response, "usage", None)
        if usage is not None:
            cached = getattr(getattr(usage, "input_tokens_details", None), "cached_tokens", 0)
            reasoning = getattr(
                getattr(usage, "output_tokens_details", None), "reasoning_tokens", 0
            )
            self.usage = Usage(
                model=self.model,
                input_tokens=(usage.input_tokens or 0) - (cached or 0),
                output_tokens=usage.output_tokens or 0,
                cache_read_tokens=cached or 0,
                reasoning_tokens=reasoning or 0,
            )

    def finish(self, provider: str, seen: StreamSeen) -> list[Chunk]:
        if not self.done:
            raise ProviderError(
                f"{provider}: the response stream ended before response.completed "
                f"({seen.describe()})",
                retryable=True, status=seen.status, kind="incomplete_stream",
            )
        out: list[Chunk] = []
        if self.usage is not None:
            out.append(self.usage)
        stop = "tool_use" if self.saw_call and self.stop == "end_turn" else self.stop
        out.append(Stop(stop))
        return out
