"""The engine: the turn loop that runs an `AgentSpec` through a provider, and the driver API.

A driver runs the middle of one user turn: it gets a
[`TurnRequest`][agentkit.engine.TurnRequest] (the spec, the prompt, the transcript, and what
the turn may use) and gives back a [`TurnOutcome`][agentkit.engine.TurnOutcome]. The engine
is the driver of every spec whose `runtime` is `engine`; an adapter that runs turns another
way (the `claude` command line of `agentkit.defs`) registers its own with
[`register_driver`][agentkit.engine.register_driver]. The
[`Runtime`][agentkit.runtime.Runtime] owns runs and calls drivers; most users never import
this package.

A turn gets what it may use as [`TurnResources`][agentkit.engine.TurnResources] (tools,
actions, the host that runs sub-agents, the permission handler, limits, retries), never the
runtime itself. The event builders (`turn_start_event`, `text_delta_event`, ...) make the
events of a turn without validating what the engine made itself, and `text_safe` makes a
string storable (lone surrogates replaced): both are for drivers and the runtime. A turn
that waits for a person ends with a `Suspension` and goes on from a `Resumption`; the
remembered allow rules (`rule_for`, `with_rule`, `remembered`) are kept in a session's
metadata under `RULES_KEY` (see docs/human-in-the-loop.md).
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.engine._asking import (
        RULES_KEY,
        Resumption,
        Suspension,
        remembered,
        rule_for,
        rule_text,
        with_rule,
    )
    from agentkit.engine._budget import RunBudget
    from agentkit.engine._drivers import (
        Driver,
        SessionCheck,
        register_driver,
        register_session_check,
        registered_driver,
        session_checks,
    )
    from agentkit.engine._loop import run_engine_turn
    from agentkit.engine._offers import check_allowlist
    from agentkit.engine._prompt import resolve_context
    from agentkit.engine._text_safety import text_safe
    from agentkit.engine._tool_calls import call_action
    from agentkit.engine._trusted import (
        result_event,
        session_init_event,
        text_delta_event,
        turn_end_event,
        turn_start_event,
    )
    from agentkit.engine._turns import (
        Emit,
        OfferCache,
        OutputLimits,
        RetryPolicy,
        TurnOutcome,
        TurnRequest,
        TurnResources,
        TurnTracer,
        TurnView,
    )

_EXPORTS: dict[str, str] = {
    "RULES_KEY": "agentkit.engine._asking",
    "Resumption": "agentkit.engine._asking",
    "Suspension": "agentkit.engine._asking",
    "remembered": "agentkit.engine._asking",
    "rule_for": "agentkit.engine._asking",
    "rule_text": "agentkit.engine._asking",
    "with_rule": "agentkit.engine._asking",
    "Driver": "agentkit.engine._drivers",
    "Emit": "agentkit.engine._turns",
    "OfferCache": "agentkit.engine._turns",
    "OutputLimits": "agentkit.engine._turns",
    "RetryPolicy": "agentkit.engine._turns",
    "RunBudget": "agentkit.engine._budget",
    "SessionCheck": "agentkit.engine._drivers",
    "TurnOutcome": "agentkit.engine._turns",
    "TurnRequest": "agentkit.engine._turns",
    "TurnResources": "agentkit.engine._turns",
    "TurnTracer": "agentkit.engine._turns",
    "TurnView": "agentkit.engine._turns",
    "call_action": "agentkit.engine._tool_calls",
    "check_allowlist": "agentkit.engine._offers",
    "register_driver": "agentkit.engine._drivers",
    "register_session_check": "agentkit.engine._drivers",
    "registered_driver": "agentkit.engine._drivers",
    "resolve_context": "agentkit.engine._prompt",
    "result_event": "agentkit.engine._trusted",
    "run_engine_turn": "agentkit.engine._loop",
    "session_checks": "agentkit.engine._drivers",
    "session_init_event": "agentkit.engine._trusted",
    "text_delta_event": "agentkit.engine._trusted",
    "text_safe": "agentkit.engine._text_safety",
    "turn_end_event": "agentkit.engine._trusted",
    "turn_start_event": "agentkit.engine._trusted",
}

__all__ = [
    "RULES_KEY",
    "Driver",
    "Emit",
    "OfferCache",
    "OutputLimits",
    "Resumption",
    "RetryPolicy",
    "RunBudget",
    "SessionCheck",
    "Suspension",
    "TurnOutcome",
    "TurnRequest",
    "TurnResources",
    "TurnTracer",
    "TurnView",
    "call_action",
    "check_allowlist",
    "register_driver",
    "register_session_check",
    "registered_driver",
    "remembered",
    "resolve_context",
    "result_event",
    "rule_for",
    "rule_text",
    "run_engine_turn",
    "session_checks",
    "session_init_event",
    "text_delta_event",
    "text_safe",
    "turn_end_event",
    "turn_start_event",
    "with_rule",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
