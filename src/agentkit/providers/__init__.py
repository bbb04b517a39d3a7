"""Model providers: one small async streaming interface.

A [`Provider`][agentkit.providers.Provider] turns a
[`ModelRequest`][agentkit.providers.ModelRequest] into a stream of chunks: text and
thinking pieces, complete tool calls, usage, and a final stop. The engine does the rest.
Providers are created by name with [`create_provider`][agentkit.providers.create_provider]
(`anthropic`, `openai`, `openai-compatible`, `local`, `test`, `scripted`); the offline test
providers live in [`agentkit.testing`][agentkit.testing]. Client libraries are imported only
when a provider is built.
"""

from agentkit.providers._anthropic import THINKING_BUDGETS, AnthropicProvider
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
from agentkit.providers._catalog import (
    DEFAULT_CATALOGS,
    LOCAL_MODEL,
    ModelCatalog,
    UnknownModelError,
)
from agentkit.providers._cost import UsageCounts, estimate_cost
from agentkit.providers._local import LocalProvider
from agentkit.providers._openai import OpenAIProvider, openai_compatible
from agentkit.providers._registry import (
    NO_PROVIDER_HELP,
    NoProviderError,
    ProviderConfigError,
    ProviderFactory,
    available_providers,
    create_provider,
    default_provider_name,
    local_model_available,
    register_provider,
)

__all__ = [
    "DEFAULT_CATALOGS",
    "LOCAL_MODEL",
    "NO_PROVIDER_HELP",
    "THINKING_BUDGETS",
    "AnthropicProvider",
    "AssistantMessage",
    "Chunk",
    "LocalProvider",
    "Message",
    "ModelCatalog",
    "ModelRequest",
    "NoProviderError",
    "OpenAIProvider",
    "Provider",
    "ProviderConfigError",
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
    "UsageCounts",
    "UserMessage",
    "available_providers",
    "create_provider",
    "default_provider_name",
    "estimate_cost",
    "local_model_available",
    "openai_compatible",
    "register_provider",
]
