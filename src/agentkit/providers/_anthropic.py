"""The Anthropic provider: the Messages API through the official `anthropic` client.

Reasoning effort (`AgentSpec.reasoning_effort`) maps onto the API's thinking settings:

| effort    | `thinking="adaptive"` (default)                        | `thinking="budget"`       |
|-----------|--------------------------------------------------------|---------------------------|
| unset     | nothing sent (the model's default)                     | nothing sent              |
| `off`     | `thinking={"type": "disabled"}`                        | same                      |
| `minimal` | adaptive thinking, `output_config={"effort": "low"}`   | `budget_tokens=1024`      |
| `low`     | adaptive thinking, effort `low`                        | `budget_tokens=2048`      |
| `medium`  | adaptive thinking, effort `medium`                     | `budget_tokens=8192`      |
| `high`    | adaptive thinking, effort `high`                       | `budget_tokens=16384`     |
| `xhigh`   | adaptive thinking, effort `xhigh`                      | `budget_tokens=32768`     |
| `max`     | adaptive thinking, effort `max`                        | `budget_tokens=63999`     |

With budgets, `max_tokens` is the budget plus the output allowance. Thinking blocks come
back with their signatures and are sent back on later turns, as the API requires for tool
use with thinking.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from contextlib import aclosing
from typing import Any

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

__all__ = ["THINKING_BUDGETS", "AnthropicProvider"]

THINKING_BUDGETS: Mapping[str, int] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 32768,
    "max": 63999,
}
"""Thinking budgets in tokens per reasoning effort, used with `thinking="budget"`."""

_STOP_REASONS: Mapping[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}


class AnthropicProvider(SDKProvider):
    """Streams Claude responses from the Messages API.

    Args:
        api_key: The API key; defaults to `ANTHROPIC_API_KEY`.
        base_url: Another endpoint (a proxy, or a test server); defaults to
            `ANTHROPIC_BASE_URL` or the public API.
        catalog: A [`ModelCatalog`][agentkit.providers.ModelCatalog], or tier -> model
            overrides of `DEFAULT_CATALOGS["anthropic"]`.
        timeout: The older single timeout: when given, the connect, first-byte and read
            timeouts that are not given on their own.
        connect_timeout: Seconds to open the connection (default 10).
        first_byte_timeout: Seconds from sending the request to the response's headers
            (default 60).
        read_timeout: The longest silence, in seconds, inside a response (default 120).
        total_timeout: Seconds one request may take in all (default 600).
        max_tokens: The output allowance when the request sets none.
        thinking: `"adaptive"` (thinking plus the `effort` setting) or `"budget"`
            (thinking with a token budget, for models without `effort`).
        client: A ready `anthropic.AsyncAnthropic` to use instead of building one (its own
            connect and read timeouts then apply; first-byte and total ones still hold).

    Timeouts not given fall back to the environment (`AGENTKIT_PROVIDER_CONNECT_TIMEOUT`,
    `AGENTKIT_PROVIDER_FIRST_BYTE_TIMEOUT`, `AGENTKIT_PROVIDER_READ_TIMEOUT`,
    `AGENTKIT_PROVIDER_TOTAL_TIMEOUT`; see `ProviderTimeouts`), then to the defaults.
    """

    name = "anthropic"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        catalog: ModelCatalog | Mapping[str, str] | None = None,
        timeout: float | None = None,
        max_tokens: int = 8192,
        thinking: str = "adaptive",
        client: Any = None,
        connect_timeout: float | None = None,
        first_byte_timeout: float | None = None,
        read_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> None:
        if thinking not in ("adaptive", "budget"):
            raise ProviderConfigError(
                f"anthropic: thinking must be 'adaptive' or 'budget', not {thinking!r}"
            )
        self.catalog = coerce_catalog("anthropic", catalog)
        self.max_tokens = max_tokens
        self.thinking = thinking
        self.timeouts = ProviderTimeouts.resolve(
            connect=connect_timeout, first_byte=first_byte_timeout, read=read_timeout,
            total=total_timeout, timeout=timeout,
        )
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise ProviderConfigError(
                    "the anthropic provider needs an API key: set ANTHROPIC_API_KEY "
                    "(or pass api_key=...)"
                )
            client = sdk_client(
                "anthropic",
                "AsyncAnthropic",
                provider=self.name,
                api_key=key,
                base_url=base_url,
                base_url_env="ANTHROPIC_BASE_URL",
                timeouts=self.timeouts,
            )
        self._client = client

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for `request` (without `stream`)."""
        max_tokens = request.max_output_tokens or self.max_tokens
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_anthropic_messages(request.messages),
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        params.update(self._thinking_params(request.reasoning_effort))
        if "thinking" in params and params["thinking"].get("type") == "enabled":
            max_tokens += params["thinking"]["budget_tokens"]
        params["max_tokens"] = max_tokens
        return params

    def _thinking_params(self, effort: ReasoningEffort | None) -> dict[str, Any]:
        if effort is None:
            return {}
        if effort == "off":
            return {"thinking": {"type": "disabled"}}
        if self.thinking == "budget":
            return {"thinking": {"type": "enabled", "budget_tokens": THINKING_BUDGETS[effort]}}
        level = "low" if effort == "minimal" else effort
        return {"thinking": {"type": "adaptive"}, "output_config": {"effort": level}}

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream one response as chunks; failures raise `ProviderError`."""
        return WithinTotal(self._stream(request), self.timeouts, self.name)

    async def _stream(self, request: ModelRequest) -> AsyncGenerator[Chunk, None]:
        params = self.build_params(request)

        def error(exc: BaseException) -> ProviderError:
            return self._error(exc, request.model)

        events = await open_stream(
            self._client.messages.create(**params, stream=True), self.timeouts, self.name, error
        )
        state = _StreamState(request.model)
        seen = StreamSeen()
        chunks = relay(events, state.feed, error, provider=self.name, seen=seen)
        async with aclosing(chunks):
            async for chunk in chunks:
                yield chunk
        if not state.stopped:
            raise ProviderError(
                "anthropic: the response stream ended before message_stop "
                f"({seen.describe()})",
                retryable=True, status=seen.status, kind="incomplete_stream",
            )

    def _error(self, exc: BaseException, model: str) -> ProviderError:
        return map_error(exc, provider=self.name, model=model, key_env="ANTHROPIC_API_KEY")


class _StreamState:
    """Folds the raw Messages stream events into chunks."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.usage: dict[str, int] = {}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop_reason: StopReason = "end_turn"
        self.stopped = False

    def _take_usage(self, usage: Any) -> None:
        if usage is None:
            return
        for key in (
            "input_tokens",
            "output_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
        ):
            value = getattr(usage, key, None)
            if value is not None:
                self.usage[key] = value  # message_delta counts are cumulative

    def feed(self, event: Any) -> list[Chunk]:
        kind = event.type
        if kind == "message_start":
            self.model = event.message.model or self.model
            self._take_usage(event.message.usage)
        elif kind == "content_block_start":
            return self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            return self._delta(event.index, event.delta)
        elif kind == "content_block_stop":
            return self._stop(event.index)
        elif kind == "message_delta":
            reason = event.delta.stop_reason
            if reason is not None:
                self.stop_reason = _STOP_REASONS.get(reason, "other")
            self._take_usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True
            return [
                Usage(
                    model=self.model,
                    input_tokens=self.usage.get("input_tokens", 0),
                    output_tokens=self.usage.get("output_tokens", 0),
                    cache_read_tokens=self.usage.get("cache_read_input_tokens", 0),
                    cache_write_tokens=self.usage.get("cache_creation_input_tokens", 0),
                ),
                Stop(self.stop_reason),
            ]
        return []

    def _start(self, index: int, block: Any) -> list[Chunk]:
        kind = block.type
        if kind == "tool_use":
            self.blocks[index] = {
                "type": kind, "id": block.id, "name": block.name, "json": Arguments()
            }
        elif kind == "thinking":
            self.blocks[index] = {"type": kind, "signature": block.signature or None}
            if block.thinking:
                return [ThinkingChunk(text_field(block.thinking, "content_block.thinking"))]
        elif kind == "redacted_thinking":
            self.blocks[index] = {"type": kind}
            return [ThinkingChunk("", redacted=block.data)]
        elif kind == "text":
            self.blocks[index] = {"type": kind}
            if block.text:
                return [TextChunk(text_field(block.text, "content_block.text"))]
        else:
            self.blocks[index] = {"type": kind}
        return []

    def _delta(self, index: int, delta: Any) -> list[Chunk]:
        block = self.blocks.setdefault(index, {"type": "unknown"})
        kind = delta.type
        if kind == "text_delta":
            return [TextChunk(text_field(delta.text, kind))] if delta.text else []
        if kind == "thinking_delta":
            return [ThinkingChunk(text_field(delta.thinking, kind))] if delta.thinking else []
        if kind == "signature_delta":
            signature = text_field(delta.signature, kind)
            block["signature"] = (block.get("signature") or "") + signature
        elif kind == "input_json_delta":
            block.setdefault("json", Arguments()).add(delta.partial_json, kind)
        return []

    def _stop(self, index: int) -> list[Chunk]:
        block = self.blocks.pop(index, {"type": "unknown"})
        if block["type"] == "thinking" and block.get("signature"):
            return [ThinkingChunk("", signature=block["signature"])]
        if block["type"] == "tool_use":
            return [tool_call_chunk(block["id"], block["name"], block["json"].text())]
        return []


def to_anthropic_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    """The Messages API `messages` for a transcript.

    Tool results become `tool_result` blocks of a user message; consecutive user-side
    entries (tool results, then a reminder) are merged into one user message.
    """
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        if isinstance(message, UserMessage):
            add("user", [{"type": "text", "text": message.content}])
        elif isinstance(message, ToolResultMessage):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
            }
            if message.is_error:
                block["is_error"] = True
            add("user", [block])
        elif isinstance(message, AssistantMessage):
            add("assistant", _assistant_blocks(message))
    return out


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for thought in message.thinking:
        if thought.redacted is not None:  # passed back exactly as the API sent it
            blocks.append({"type": "redacted_thinking", "data": thought.redacted})
        elif thought.signature:  # the API rejects thinking it cannot verify
            blocks.append(
                {"type": "thinking", "thinking": thought.content, "signature": thought.signature}
            )
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        arguments = call.arguments
        blocks.append(
            {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": arguments if isinstance(arguments, dict) else {"_raw": arguments},
            }
        )
    return blocks
