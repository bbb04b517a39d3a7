"""The provider registry's table: each name a provider is registered under, with its factory.

`agentkit.providers` builds providers from it and adds to it (`register_provider`);
`agentkit.spec` reads its names to tell a provider (`openai`) from a model (`gpt-4.1`) in a
model string. It lives here, below both, because the vocabulary may not import the
providers. A factory is a callable, or a `module:attribute` path to one imported on first use
(so naming a provider never imports a client library that is not needed).
"""

from __future__ import annotations

__all__ = ["FACTORIES", "provider_names"]

FACTORIES: dict[str, object] = {
    "test": "agentkit.testing:SchemaTestProvider",
    "scripted": "agentkit.testing:ScriptedProvider.from_file",
    "anthropic": "agentkit.providers._anthropic:AnthropicProvider",
    "openai": "agentkit.providers._openai:OpenAIProvider",
    "openai-compatible": "agentkit.providers._openai:openai_compatible",
    "local": "agentkit.providers._local:LocalProvider",
}


def provider_names() -> list[str]:
    """The registered provider names, sorted."""
    return sorted(FACTORIES)
