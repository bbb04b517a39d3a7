"""Offline test support: providers that need no network, and conformance suites.

- [`ScriptedProvider`][agentkit.testing.ScriptedProvider]: responses in order.
- [`FunctionProvider`][agentkit.testing.FunctionProvider]: a function decides each response.
- [`SchemaTestProvider`][agentkit.testing.SchemaTestProvider] (provider `test`): calls each
  offered tool with schema-generated arguments, then submits schema-valid output.
- [`StoreConformance`][agentkit.testing.StoreConformance] and
  [`store_conformance`][agentkit.testing.store_conformance]: the checks every store backend
  passes.
- [`ConversationConformance`][agentkit.testing.ConversationConformance] and
  [`conversation_conformance`][agentkit.testing.conversation_conformance]: the checks every
  conversation client (in-process or remote) passes, with
  [`MachineHost`][agentkit.testing.MachineHost] and
  [`conformance_provider`][agentkit.testing.conformance_provider].
- [`assert_stream_invariants`][agentkit.testing.assert_stream_invariants]: what every
  run's event stream promises (one turn, one final block, tool results that answer calls).
- [`run_provider_conformance`][agentkit.testing.run_provider_conformance] with
  [`ReplayServer`][agentkit.testing.ReplayServer]: the wire-level checks every provider
  passes.
"""

from agentkit.testing._conversation_conformance import (
    ACCESS_OPERATIONS,
    CONVERSATION_CHECKS,
    ConversationCheck,
    ConversationConformance,
    ConversationHost,
    MachineHost,
    check_resumed,
    conformance_provider,
    conversation_conformance,
    expected_access,
)
from agentkit.testing._invariants import assert_stream_invariants
from agentkit.testing._provider_conformance import (
    CONFORMANCE_SCENARIOS,
    RecordedRequest,
    ReplayServer,
    Reply,
    WireScript,
    check_live_provider,
    check_stream_contract,
    run_conformance_scenario,
    run_provider_conformance,
)
from agentkit.testing._providers import (
    FunctionProvider,
    SchemaTestProvider,
    ScriptedProvider,
    ScriptedResponse,
    ScriptedToolCall,
    ScriptError,
)
from agentkit.testing._store_conformance import (
    STORE_CHECKS,
    StoreCheck,
    StoreConformance,
    store_conformance,
)

__all__ = [
    "ACCESS_OPERATIONS",
    "CONFORMANCE_SCENARIOS",
    "CONVERSATION_CHECKS",
    "STORE_CHECKS",
    "ConversationCheck",
    "ConversationConformance",
    "ConversationHost",
    "FunctionProvider",
    "MachineHost",
    "RecordedRequest",
    "ReplayServer",
    "Reply",
    "SchemaTestProvider",
    "ScriptError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedToolCall",
    "StoreCheck",
    "StoreConformance",
    "WireScript",
    "assert_stream_invariants",
    "check_live_provider",
    "check_resumed",
    "check_stream_contract",
    "conformance_provider",
    "conversation_conformance",
    "expected_access",
    "run_conformance_scenario",
    "run_provider_conformance",
    "store_conformance",
]
