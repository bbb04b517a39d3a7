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
- [`RoomsConformance`][agentkit.testing.RoomsConformance] and
  [`rooms_conformance`][agentkit.testing.rooms_conformance]: the checks every rooms client
  (in-process or remote) passes, with [`MachineRoomsHost`][agentkit.testing.MachineRoomsHost],
  the test room agents and the served machine's extension that registers them.
- [`assert_stream_invariants`][agentkit.testing.assert_stream_invariants]: what every
  run's event stream promises (one turn, one final block, tool results that answer calls).
- [`run_provider_conformance`][agentkit.testing.run_provider_conformance] with
  [`ReplayServer`][agentkit.testing.ReplayServer]: the wire-level checks every provider
  passes.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
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
    from agentkit.testing._rooms_agents import (
        CONTROL_ROOM,
        TEST_ROOM_AGENTS,
        AdderAgent,
        WordCountAgent,
        make_test_agent,
        register_test_agent,
        rooms_conformance_extension,
    )
    from agentkit.testing._rooms_conformance import (
        ROOMS_CHECKS,
        MachineRoomsHost,
        RoomsCheck,
        RoomsConformance,
        RoomsHost,
        rooms_conformance,
    )
    from agentkit.testing._store_conformance import (
        STORE_CHECKS,
        StoreCheck,
        StoreConformance,
        store_conformance,
    )

_EXPORTS: dict[str, str] = {
    "ACCESS_OPERATIONS": "agentkit.testing._conversation_conformance",
    "AdderAgent": "agentkit.testing._rooms_agents",
    "CONFORMANCE_SCENARIOS": "agentkit.testing._provider_conformance",
    "CONTROL_ROOM": "agentkit.testing._rooms_agents",
    "CONVERSATION_CHECKS": "agentkit.testing._conversation_conformance",
    "ConversationCheck": "agentkit.testing._conversation_conformance",
    "ConversationConformance": "agentkit.testing._conversation_conformance",
    "ConversationHost": "agentkit.testing._conversation_conformance",
    "FunctionProvider": "agentkit.testing._providers",
    "MachineHost": "agentkit.testing._conversation_conformance",
    "MachineRoomsHost": "agentkit.testing._rooms_conformance",
    "ROOMS_CHECKS": "agentkit.testing._rooms_conformance",
    "RecordedRequest": "agentkit.testing._provider_conformance",
    "ReplayServer": "agentkit.testing._provider_conformance",
    "Reply": "agentkit.testing._provider_conformance",
    "RoomsCheck": "agentkit.testing._rooms_conformance",
    "RoomsConformance": "agentkit.testing._rooms_conformance",
    "RoomsHost": "agentkit.testing._rooms_conformance",
    "STORE_CHECKS": "agentkit.testing._store_conformance",
    "SchemaTestProvider": "agentkit.testing._providers",
    "ScriptError": "agentkit.testing._providers",
    "ScriptedProvider": "agentkit.testing._providers",
    "ScriptedResponse": "agentkit.testing._providers",
    "ScriptedToolCall": "agentkit.testing._providers",
    "StoreCheck": "agentkit.testing._store_conformance",
    "StoreConformance": "agentkit.testing._store_conformance",
    "TEST_ROOM_AGENTS": "agentkit.testing._rooms_agents",
    "WireScript": "agentkit.testing._provider_conformance",
    "WordCountAgent": "agentkit.testing._rooms_agents",
    "assert_stream_invariants": "agentkit.testing._invariants",
    "check_live_provider": "agentkit.testing._provider_conformance",
    "check_resumed": "agentkit.testing._conversation_conformance",
    "check_stream_contract": "agentkit.testing._provider_conformance",
    "conformance_provider": "agentkit.testing._conversation_conformance",
    "conversation_conformance": "agentkit.testing._conversation_conformance",
    "expected_access": "agentkit.testing._conversation_conformance",
    "make_test_agent": "agentkit.testing._rooms_agents",
    "register_test_agent": "agentkit.testing._rooms_agents",
    "rooms_conformance": "agentkit.testing._rooms_conformance",
    "rooms_conformance_extension": "agentkit.testing._rooms_agents",
    "run_conformance_scenario": "agentkit.testing._provider_conformance",
    "run_provider_conformance": "agentkit.testing._provider_conformance",
    "store_conformance": "agentkit.testing._store_conformance",
}

__all__ = [
    "ACCESS_OPERATIONS",
    "CONFORMANCE_SCENARIOS",
    "CONTROL_ROOM",
    "CONVERSATION_CHECKS",
    "ROOMS_CHECKS",
    "STORE_CHECKS",
    "TEST_ROOM_AGENTS",
    "AdderAgent",
    "ConversationCheck",
    "ConversationConformance",
    "ConversationHost",
    "FunctionProvider",
    "MachineHost",
    "MachineRoomsHost",
    "RecordedRequest",
    "ReplayServer",
    "Reply",
    "RoomsCheck",
    "RoomsConformance",
    "RoomsHost",
    "SchemaTestProvider",
    "ScriptError",
    "ScriptedProvider",
    "ScriptedResponse",
    "ScriptedToolCall",
    "StoreCheck",
    "StoreConformance",
    "WireScript",
    "WordCountAgent",
    "assert_stream_invariants",
    "check_live_provider",
    "check_resumed",
    "check_stream_contract",
    "conformance_provider",
    "conversation_conformance",
    "expected_access",
    "make_test_agent",
    "register_test_agent",
    "rooms_conformance",
    "rooms_conformance_extension",
    "run_conformance_scenario",
    "run_provider_conformance",
    "store_conformance",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
