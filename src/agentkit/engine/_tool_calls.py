"""Calling a tool (or an action) under its timeout, also while it waits on a worker thread.

A tool's deadline is an anyio cancel scope, so shields inside tools (reaping a process)
still hold; work in a worker thread cannot be cancelled, so a call that does not end by its
deadline plus a grace is abandoned (the thread may finish in the background)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.lowlevel

from agentkit.actions import Action, ActionContext, ActionResult
from agentkit.tools import Tool, ToolContext

__all__ = ["TOOL_ABANDON_GRACE", "call_action", "call_within", "run_within"]

_logger = logging.getLogger("agentkit.engine")


TOOL_ABANDON_GRACE = 1.0
"""Seconds a tool that is past its timeout gets to finish a shielded section, such as
reaping a killed process, before the engine stops waiting for it and reports the timeout.
A tool still busy then (typically waiting on a worker thread, which nothing can interrupt)
is abandoned: the thread goes on alone and whatever it returns is dropped."""


async def call_within(
    tool: Tool, arguments: dict[str, Any], context: ToolContext, seconds: float
) -> Any:
    """`tool.function(arguments, context)`, given `seconds`; raises `TimeoutError`
    (see `run_within`)."""
    return await run_within(tool.name, seconds, tool.function, arguments, context)


async def call_action(
    action: Action, arguments: dict[str, Any], context: ActionContext
) -> ActionResult:
    """`action.run(arguments, context)` under the action's timeout, as a tool's: a call
    still running at its deadline is cancelled and fails with "<id> timed out after N
    seconds". Like `Action.run`, never raises for the action's failure."""
    if action.timeout is None:
        return await action.run(arguments, context)
    try:
        result: ActionResult = await run_within(
            action.id, action.timeout, action.run, arguments, context
        )
    except TimeoutError:
        return ActionResult.fail(f"{action.id} timed out after {action.timeout:g} seconds")
    return result


async def run_within(
    name: str, seconds: float, function: Callable[..., Awaitable[Any]], *args: Any
) -> Any:
    """`function(*args)` (a tool's or an action's, named `name` in the log), given
    `seconds`; raises `TimeoutError`.

    The call runs under a cancel scope whose deadline is `seconds` away, which waits for
    shielded sections as anyio's deadlines do on every backend (a timer cancelling the
    task, `asyncio.timeout`'s way, would cut through a tool's cleanup). But waiting on a
    worker thread is such a section too (`anyio.to_thread.run_sync` cannot be interrupted),
    so `TOOL_ABANDON_GRACE` after the deadline the engine stops waiting: the run gets its
    timeout error in time, whatever the tool is blocked in.

    On asyncio the call runs in the caller's task (no task per call on this hot path), and
    at the end of the grace a native `Task.cancel()` goes through the shields anyio keeps:
    the task stops waiting, a worker thread's result is dropped and the thread runs on. The
    same happens, within a second and a grace, when the run is cancelled during such a
    wait, which anyio would otherwise hold off until the thread ends.
    """
    asyncio: Any = sys.modules.get("asyncio")
    try:
        loop = asyncio.get_running_loop()
    except (AttributeError, RuntimeError):  # asyncio not even imported, or not running
        return await _call_within_detached(name, seconds, function, args)
    scope = anyio.CancelScope()
    watch = _Watch(loop, asyncio.current_task(), scope, loop.time() + seconds)
    try:
        # anyio.fail_after without its two generator-based context managers: the scope
        # swallows only its own cancellation, so falling out of it means the call timed out.
        with scope:
            return await function(*args)
        raise TimeoutError
    except asyncio.CancelledError:
        if not watch.forced:
            raise
        watch.forced = False
        watch.task.uncancel()  # ours alone: the run's own cancellations stay pending
        _abandoned(name, seconds, cancelled=watch.stopping)
        if watch.stopping:
            # The run's cancellation, which anyio starts again now that the task has left
            # the shielded section, ends the call instead of a timeout.
            await anyio.lowlevel.checkpoint()
        raise TimeoutError from None
    finally:
        watch.timer.cancel()
        if watch.forced:  # forced out, but the call went on and ended some other way
            watch.task.uncancel()


class _Watch:
    """The one timer of a timed tool call on asyncio, in place of its scope's own deadline
    timer. It looks every `TOOL_ABANDON_GRACE` whether the run is being cancelled (anyio
    holds that off while the call is in a shielded section) and at the deadline cancels
    the call's scope; either way it then forces the task out at the end of the grace."""

    __slots__ = ("deadline", "forced", "loop", "scope", "stopping", "task", "timer")

    def __init__(self, loop: Any, task: Any, scope: Any, deadline: float) -> None:
        self.loop, self.task, self.scope, self.deadline = loop, task, scope, deadline
        self.forced = self.stopping = False
        self.timer = loop.call_at(min(deadline, loop.time() + TOOL_ABANDON_GRACE), self.check)

    def check(self) -> None:
        now = self.loop.time()
        if now >= self.deadline or _outer_cancelled(self.scope):
            self.stopping = now < self.deadline
            self.scope.cancel()
            self.timer = self.loop.call_at(now + TOOL_ABANDON_GRACE, self.force)
        else:
            self.timer = self.loop.call_at(min(self.deadline, now + TOOL_ABANDON_GRACE), self.check)

    def force(self) -> None:
        self.forced = True
        self.task.cancel()  # not an anyio cancellation: no anyio scope swallows it


def _outer_cancelled(scope: Any) -> bool:
    """Whether a cancel scope around `scope` (entered) has been cancelled, with no shield in
    between: the run is being cancelled. Read from anyio's scopes on asyncio, where their
    parent link is `_parent_scope`; `False` if that ever changes."""
    outer = getattr(scope, "_parent_scope", None)
    while outer is not None:
        if outer.cancel_called:
            return True
        if outer.shield:
            return False
        outer = getattr(outer, "_parent_scope", None)
    return False


async def _call_within_detached(
    name: str, seconds: float, function: Callable[..., Awaitable[Any]], args: tuple[Any, ...]
) -> Any:
    """`run_within` on other backends (trio: no way through a shield there): the call runs
    in a system task, outside every nursery, so it can be left running; the caller waits on
    it until the grace ends."""
    import contextvars

    import trio

    scope = anyio.CancelScope(deadline=anyio.current_time() + seconds)
    outcome: list[Any] = []  # [value] or [exception, None], once the call has ended
    done = anyio.Event()

    async def call() -> None:
        try:
            with scope:
                outcome.append(await function(*args))
        except trio.Cancelled:
            raise  # the trio run itself is ending
        except BaseException as exc:  # a tool's KeyboardInterrupt too: re-raised below
            outcome.extend((exc, None))
        finally:
            done.set()

    async def ended(deadline: float) -> bool:
        with anyio.CancelScope(deadline=deadline):
            await done.wait()
        return done.is_set()

    # A system task must not raise (`call` keeps the call's exceptions) and does not inherit
    # the caller's context variables unless given them.
    trio.lowlevel.spawn_system_task(call, context=contextvars.copy_context())
    try:
        finished = await ended(scope.deadline + TOOL_ABANDON_GRACE)
    except trio.Cancelled:
        # The run is being cancelled: so is the call, with the same grace to clean up.
        scope.cancel()
        with anyio.CancelScope(shield=True):
            await ended(anyio.current_time() + TOOL_ABANDON_GRACE)
        raise
    if not finished:
        scope.cancel()
        _abandoned(name, seconds)
        raise TimeoutError
    if len(outcome) == 1:
        return outcome[0]
    if outcome:
        error: BaseException = outcome[0]
        raise error
    raise TimeoutError  # the scope's deadline ended the call


def _abandoned(name: str, seconds: float, *, cancelled: bool = False) -> None:
    _logger.warning(
        "%s did not stop within %gs of %s; it was abandoned and may still be running "
        "(in a worker thread, say)",
        name,
        TOOL_ABANDON_GRACE,
        "its run being cancelled" if cancelled else f"its {seconds:g}s timeout",
    )
