"""Model providers: one small async streaming interface.

A [`Provider`][agentkit.providers.Provider] turns a
[`ModelRequest`][agentkit.providers.ModelRequest] into a stream of chunks: text and
thinking pieces, complete tool calls, usage, and a final stop. The engine does the rest.
Providers are created by name with [`create_provider`][agentkit.providers.create_provider];
the offline test providers live in [`agentkit.testing`][agentkit.testing].
"""

from agentkit.providers._base import (
    AssistantMessage,
    Chunk,
    Message,
    ModelRequest,
    Provider,
    ProviderError,
    Stop,
    StopReason,
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
from agentkit.providers._catalog import DEFAULT_CATALOGS, ModelCatalog, UnknownModelError
from agentkit.providers._registry import (
    NO_PROVIDER_HELP,
    NoProviderError,
    ProviderFactory,
    available_providers,
    create_provider,
    default_provider_name,
    register_provider,
)

__all__ = [
    "DEFAULT_CATALOGS",
    "NO_PROVIDER_HELP",
    "AssistantMessage",
    "Chunk",
    "Message",
    "ModelCatalog",
    "ModelRequest",
    "NoProviderError",
    "Provider",
    "ProviderError",
    "ProviderFactory",
    "Stop",
    "StopReason",
    "TextChunk",
    "ThinkingBlock",
    "ThinkingChunk",
    "ToolCall",
    "ToolCallChunk",
    "ToolDefinition",
    "ToolResultMessage",
    "UnknownModelError",
    "Usage",
    "UserMessage",
    "available_providers",
    "create_provider",
    "default_provider_name",
    "register_provider",
]
