"""asyncio's own primitives, for the hot paths when the event loop is asyncio's.

agentkit runs on any anyio backend. anyio's portable task groups and events
cost several times what asyncio's primitives cost, and a run uses a handful of them, so on
asyncio the runtime uses these instead; on trio it uses anyio's. Everything here expects to
be called with an asyncio loop running (asyncio is then imported already).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Coroutine
from typing import Any

__all__ = ["cancel_and_wait", "create_task", "current_task", "event_class", "on_asyncio"]


def on_asyncio() -> bool:
    """Whether the running event loop is asyncio's."""
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return bool(asyncio.current_task() is not None)


def event_class() -> Callable[[], Any]:
    """`asyncio.Event`: `set()`, `is_set()` and `await wait()`, like `anyio.Event`."""
    import asyncio

    return asyncio.Event


def create_task(coro: Coroutine[Any, Any, None]) -> Any:
    """Start `coro` as a plain asyncio task; the caller keeps the reference."""
    import asyncio

    return asyncio.get_running_loop().create_task(coro)


def current_task() -> Any:
    """The running asyncio task."""
    import asyncio

    return asyncio.current_task()


async def cancel_and_wait(task: Any) -> None:
    """Cancel an asyncio task and wait until it has ended (without raising its outcome)."""
    import asyncio

    task.cancel()
    await asyncio.wait({task})
