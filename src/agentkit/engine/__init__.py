"""The engine: the turn loop that runs an `AgentSpec` through a provider, and the driver API.

A driver runs the middle of one user turn: it gets a
[`TurnRequest`][agentkit.engine.TurnRequest] (the spec, the prompt, the transcript, and what
the turn may use) and gives back a [`TurnOutcome`][agentkit.engine.TurnOutcome]. The engine
is the driver of every spec whose `runtime` is `engine`; an adapter that runs turns another
way (the `claude` command line of `agentkit.defs`) registers its own with
[`register_driver`][agentkit.engine.register_driver]. The
[`Runtime`][agentkit.runtime.Runtime] owns runs and calls drivers; most users never import
this package.
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
from agentkit.engine._turns import Emit, OutputLimits, RetryPolicy, TurnOutcome, TurnRequest

__all__ = [
    "Driver",
    "Emit",
    "OutputLimits",
    "RetryPolicy",
    "SessionCheck",
    "TurnOutcome",
    "TurnRequest",
    "register_driver",
    "register_session_check",
    "registered_driver",
    "run_engine_turn",
    "session_checks",
]
