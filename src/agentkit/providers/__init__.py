"""Model providers: one small async streaming interface.

A [`Provider`][agentkit.providers.Provider] turns a
[`ModelRequest`][agentkit.providers.ModelRequest] into a stream of chunks: text and
thinking pieces, complete tool calls, usage, and a final stop. The engine does the rest.
Providers are created by name with [`create_provider`][agentkit.providers.create_provider]
(`anthropic`, `openai`, `openai-compatible`, `local`, `test`, `scripted`); the offline test
providers live in [`agentkit.testing`][agentkit.testing]. Client libraries are imported only
when a provider is built. A provider of your own turns a model's streamed tool-call
arguments into a call's `arguments` with
[`parse_arguments`][agentkit.providers.parse_arguments], as the built-in ones do.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.providers._anthropic import THINKING_BUDGETS, AnthropicProvider
    from agentkit.providers._args import parse_arguments
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
    from agentkit.providers._timeouts import TIMEOUT_ENV, ProviderTimeouts, set_default_timeouts

_EXPORTS: dict[str, str] = {
    "AnthropicProvider": "agentkit.providers._anthropic",
    "AssistantMessage": "agentkit.providers._base",
    "Chunk": "agentkit.providers._base",
    "DEFAULT_CATALOGS": "agentkit.providers._catalog",
    "LOCAL_MODEL": "agentkit.providers._catalog",
    "LocalProvider": "agentkit.providers._local",
    "Message": "agentkit.providers._base",
    "ModelCatalog": "agentkit.providers._catalog",
    "ModelRequest": "agentkit.providers._base",
    "NO_PROVIDER_HELP": "agentkit.providers._registry",
    "NoProviderError": "agentkit.providers._registry",
    "OpenAIProvider": "agentkit.providers._openai",
    "Provider": "agentkit.providers._base",
    "ProviderConfigError": "agentkit.providers._registry",
    "ProviderError": "agentkit.providers._base",
    "ProviderFactory": "agentkit.providers._registry",
    "ProviderTimeouts": "agentkit.providers._timeouts",
    "Stop": "agentkit.providers._base",
    "StopReason": "agentkit.providers._base",
    "THINKING_BUDGETS": "agentkit.providers._anthropic",
    "TIMEOUT_ENV": "agentkit.providers._timeouts",
    "TextChunk": "agentkit.providers._base",
    "ThinkingBlock": "agentkit.providers._base",
    "ThinkingChunk": "agentkit.providers._base",
    "ToolCall": "agentkit.providers._base",
    "ToolCallChunk": "agentkit.providers._base",
    "ToolDefinition": "agentkit.providers._base",
    "ToolResultMessage": "agentkit.providers._base",
    "UnknownModelError": "agentkit.providers._catalog",
    "Usage": "agentkit.providers._base",
    "UsageCounts": "agentkit.providers._cost",
    "UserMessage": "agentkit.providers._base",
    "available_providers": "agentkit.providers._registry",
    "create_provider": "agentkit.providers._registry",
    "default_provider_name": "agentkit.providers._registry",
    "estimate_cost": "agentkit.providers._cost",
    "local_model_available": "agentkit.providers._registry",
    "openai_compatible": "agentkit.providers._openai",
    "parse_arguments": "agentkit.providers._args",
    "register_provider": "agentkit.providers._registry",
    "set_default_timeouts": "agentkit.providers._timeouts",
}

__all__ = [
    "DEFAULT_CATALOGS",
    "LOCAL_MODEL",
    "NO_PROVIDER_HELP",
    "THINKING_BUDGETS",
    "TIMEOUT_ENV",
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
    "ProviderTimeouts",
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
    "parse_arguments",
    "register_provider",
    "set_default_timeouts",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
