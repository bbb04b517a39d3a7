"""The provider interface: requests and streamed chunks (the transcript messages it carries
are `agentkit.messages`)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from agentkit.errors import ProviderError
from agentkit.messages import (
    AssistantMessage,
    Message,
    ThinkingBlock,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from agentkit.spec import ReasoningEffort

__all__ = [
    "AssistantMessage",
    "Chunk",
    "Message",
    "ModelRequest",
    "Provider",
    "ProviderError",
    "Stop",
    "StopReason",
    "TextChunk",
    "ThinkingBlock",
    "ThinkingChunk",
    "ToolCall",
    "ToolCallChunk",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserMessage",
]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """Everything a provider needs for one model call."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] = ()
    reasoning_effort: ReasoningEffort | None = None
    max_output_tokens: int | None = None
    auth: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# --- stream chunks ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextChunk:
    """A piece of answer text."""

    text: str


@dataclass(frozen=True, slots=True)
class ThinkingChunk:
    """A piece of reasoning; a `signature` closes a thinking block. A chunk with `redacted`
    set is a whole block of encrypted reasoning on its own (see `ThinkingBlock`)."""

    text: str
    signature: str | None = None
    redacted: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A complete tool call (providers assemble streamed argument pieces first)."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class Usage:
    """Token usage reported for `model`; several chunks add up."""

    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "other"]


@dataclass(frozen=True, slots=True)
class Stop:
    """The response is complete."""

    reason: StopReason = "end_turn"


Chunk: TypeAlias = TextChunk | ThinkingChunk | ToolCallChunk | Usage | Stop
"""One item of a provider's response stream."""


@runtime_checkable
class Provider(Protocol):
    """A model provider: one async streaming call.

    `stream` yields [`Chunk`][agentkit.providers.Chunk]s and raises
    [`ProviderError`][agentkit.providers.ProviderError] on failure. `resolve_model` maps a
    tier or a pinned model name to the concrete model id the provider will call.
    """

    name: str

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        """Stream one model response."""
        ...

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        """The concrete model for a tier (`large|medium|small`) or a pinned model name."""
        ...
