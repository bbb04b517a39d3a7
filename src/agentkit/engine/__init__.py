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
string storable (lone surrogates replaced): both are for drivers and the runtime.
"""

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

__all__ = [
    "Driver",
    "Emit",
    "OfferCache",
    "OutputLimits",
    "RetryPolicy",
    "SessionCheck",
    "TurnOutcome",
    "TurnRequest",
    "TurnResources",
    "TurnTracer",
    "TurnView",
    "check_allowlist",
    "register_driver",
    "register_session_check",
    "registered_driver",
    "resolve_context",
    "result_event",
    "run_engine_turn",
    "session_checks",
    "session_init_event",
    "text_delta_event",
    "text_safe",
    "turn_end_event",
    "turn_start_event",
]
