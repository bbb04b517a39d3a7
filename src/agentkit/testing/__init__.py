"""Offline test support: providers that need no network, and conformance suites.

- [`ScriptedProvider`][agentkit.testing.ScriptedProvider]: responses in order.
- [`FunctionProvider`][agentkit.testing.FunctionProvider]: a function decides each response.
- [`SchemaTestProvider`][agentkit.testing.SchemaTestProvider] (provider `test`): calls each
  offered tool with schema-generated arguments, then submits schema-valid output.
"""

from agentkit.testing._providers import (
    FunctionProvider,
    SchemaTestProvider,
    ScriptedProvider,
    ScriptedResponse,
    ScriptedToolCall,
    ScriptError,
)

__all__ = [
    "FunctionProvider",
    "SchemaTestProvider",
    "ScriptError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedToolCall",
]
