"""Runs and the runtime that owns them.

A [`Runtime`][agentkit.runtime.Runtime] is an async context manager holding a provider, a
store, tools, actions and agents. `await runtime.start(spec, prompt)` starts a
[`Run`][agentkit.runtime.Run] in the runtime's task group and returns at once: the run goes
on whether or not anyone reads it. A run appends its events to a log; `run.events(after=k)`
replays everything after offset `k` and then follows live, for any number of readers. A
reader that stops early or is cancelled never affects the run.

```python
import anyio
from agentkit import AgentSpec, Runtime
from agentkit.testing import ScriptedProvider

async def main() -> None:
    spec = AgentSpec(id="demo:greeter", system_prompt="Greet people.")
    async with Runtime(provider=ScriptedProvider([{"text": "Hello!"}])) as runtime:
        run = await runtime.start(spec, "Say hello")
        async for event in run.events():
            print(event.type)
        outcome = await run.wait()
        assert outcome.text == "Hello!"

anyio.run(main)
```

Leaving the `async with` block waits for runs still going (like a task group); an exception
inside it cancels them, and each cancelled run still ends with `turn_end` (`interrupted`).
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.engine import (
        Driver,
        OutputLimits,
        RetryPolicy,
        RunBudget,
        TurnOutcome,
        TurnRequest,
        register_driver,
        register_session_check,
    )
    from agentkit.errors import AgentNotFoundError, SessionBusyError
    from agentkit.runtime._requests import PendingRequest
    from agentkit.runtime._run import Run, RunOutcome
    from agentkit.runtime._runtime import Runtime

_EXPORTS: dict[str, str] = {
    "AgentNotFoundError": "agentkit.errors",
    "Driver": "agentkit.engine",
    "OutputLimits": "agentkit.engine",
    "PendingRequest": "agentkit.runtime._requests",
    "RetryPolicy": "agentkit.engine",
    "RunBudget": "agentkit.engine",
    "Run": "agentkit.runtime._run",
    "RunOutcome": "agentkit.runtime._run",
    "Runtime": "agentkit.runtime._runtime",
    "SessionBusyError": "agentkit.errors",
    "TurnOutcome": "agentkit.engine",
    "TurnRequest": "agentkit.engine",
    "register_driver": "agentkit.engine",
    "register_session_check": "agentkit.engine",
}

__all__ = [
    "AgentNotFoundError",
    "Driver",
    "OutputLimits",
    "PendingRequest",
    "RetryPolicy",
    "Run",
    "RunBudget",
    "RunOutcome",
    "Runtime",
    "SessionBusyError",
    "TurnOutcome",
    "TurnRequest",
    "register_driver",
    "register_session_check",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
