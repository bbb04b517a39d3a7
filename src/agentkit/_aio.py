"""asyncio's own primitives, for the hot paths when the event loop is asyncio's.

agentkit runs on any anyio backend. anyio's portable task groups, events and deadline scopes
cost several times what asyncio's primitives cost, and a run uses a handful of them, so on
asyncio the runtime uses these instead; on trio it uses anyio's. Everything here expects to
be called with an asyncio loop running (asyncio is then imported already).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["call_with_timeout", "create_task", "event_class", "on_asyncio"]

_T = TypeVar("_T")


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


async def call_with_timeout(awaitable: Awaitable[_T], seconds: float) -> _T:
    """Await `awaitable`, raising `TimeoutError` if it takes longer than `seconds`.

    What `asyncio.timeout` does, without its context manager: one timer that cancels this
    task, and the same bookkeeping of the task's cancellation count, so a cancellation
    that is not the timer's (the run being cancelled, an anyio scope) still propagates.
    """
    import asyncio

    task = asyncio.current_task()
    assert task is not None
    fired = False

    def expire() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    cancelling = task.cancelling()
    handle = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        result = await awaitable
    except asyncio.CancelledError:
        if fired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        handle.cancel()
    if fired:  # the awaitable swallowed the timer's cancellation: take it back
        task.uncancel()
    return result
