"""Where a runtime's runs live: a task group's rules on every event loop, behind one seam.

On trio (and any non-asyncio anyio backend) runs are tasks of an anyio task group. On
asyncio an anyio task costs several times what a plain task does, and a process may hold
ten thousand runs, so there runs are plain asyncio tasks and `RunGroup` keeps the rules a
task group would:

- leaving waits for the runs (or cancels them first when the body raised, or when the
  wait itself is cancelled; runs started meanwhile are cancelled too);
- a run that crashes (an exception that is not the run's own error) cancels the other runs
  and the body of `async with`, and is raised when the group is left, as a group;
- the group may be left from another task than the one that entered it (pytest-asyncio
  fixtures do that), which a task group could not.

Background services (the lease keeper) run beside the runs and stop once the last run has
ended.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from agentkit._internal import aio as _aio

if TYPE_CHECKING:
    from agentkit.runtime._run import Run

__all__ = ["RunGroup"]


class _Abandon(Exception):
    """Internal: the body raised, so the runs are cancelled rather than awaited."""


class RunGroup:
    """The runs of one runtime (`runs`, kept by the runtime: id -> running `Run`)."""

    def __init__(self, runs: Mapping[str, Run]) -> None:
        self._runs = runs
        self.native = False
        """Whether runs are plain asyncio tasks (else tasks of an anyio task group)."""
        self._group: TaskGroup | None = None
        self._services: TaskGroup | None = None
        self._service_tasks: list[Any] = []
        self._tasks: dict[str, Any] = {}  # the runs' asyncio tasks by run id, while they run
        self._crashes: list[BaseException] = []
        self._host_scope: anyio.CancelScope | None = None
        self._host_task: Any = None

    async def enter(self, services: list[Callable[[], Coroutine[Any, Any, None]]]) -> None:
        """Start holding runs, with `services` running beside them until `exit`."""
        self.native = _aio.on_asyncio()
        if self.native:
            # What a task group gives its body: a scope a crashing run can cancel.
            self._host_scope = anyio.CancelScope()
            self._host_scope.__enter__()
            self._host_task = _aio.current_task()
            self._service_tasks = [_aio.create_task(service()) for service in services]
            return
        if services:
            # Entered before the runs' task group, so it is left after it: services go on
            # until the last run has ended.
            self._services = anyio.create_task_group()
            await self._services.__aenter__()
            for service in services:
                self._services.start_soon(service, name="agentkit service")
        self._group = anyio.create_task_group()
        await self._group.__aenter__()

    def start(
        self, run_id: str, work: Callable[..., Coroutine[Any, Any, None]], *args: Any
    ) -> None:
        """Run `work(*args)` as the task of run `run_id` (until `release(run_id)`)."""
        if self._group is None:
            # asyncio keeps only weak references to its tasks: held here until released.
            self._tasks[run_id] = _aio.create_task(work(*args))
        else:
            # An explicit name spares anyio working one out from the function every time.
            self._group.start_soon(work, *args, name="agentkit run")

    def release(self, run_id: str) -> None:
        """The run has ended: its task is no longer held."""
        self._tasks.pop(run_id, None)

    def passes_on(self, exc: BaseException) -> bool:
        """Whether a run's `BaseException` (not an error of its turn) is raised from the
        run's task as it is, rather than reported to `crashed` once the run has ended: in
        a task group, and always for what must stop the program."""
        return self._group is not None or isinstance(exc, KeyboardInterrupt | SystemExit)

    @property
    def ending_needs_shield(self) -> bool:
        """Whether a run's ending must be shielded from outer cancellation. A plain asyncio
        task sits in no outer cancel scope: nothing can cancel its ending."""
        return self._group is not None

    def crashed(self, exc: BaseException) -> None:
        """A run crashed (and has ended): as a task group does with a crashed child, the
        other runs and the body are cancelled, and `exit` raises the crash."""
        self._crashes.append(exc)
        for other in list(self._runs.values()):
            other.cancel()
        if self._host_scope is not None:
            self._host_scope.cancel()

    async def exit(self, exc: BaseException | None) -> bool | None:
        """Leave: wait for the runs (cancel them first when `exc` is set), then stop the
        services. Returns what `__aexit__` returns."""
        try:
            if self._group is None:
                return await self._exit_native(exc)
            # Kept until the group is left: a run started meanwhile (by a tool inside
            # `start`) joins it, and is cancelled with the others.
            if exc is not None:
                # The host's own exception propagates as it is (not wrapped in a group);
                # the runs are cancelled and still end with `turn_end` (interrupted).
                self._group.cancel_scope.cancel()
                await self._group.__aexit__(None, None, None)
                return None
            return await self._group.__aexit__(None, None, None)
        finally:
            self._group = None
            await self._stop_services()

    async def _stop_services(self) -> None:
        tasks, self._service_tasks = self._service_tasks, []
        with anyio.CancelScope(shield=True):
            for task in tasks:
                await _aio.cancel_and_wait(task)
        if self._services is not None:
            services, self._services = self._services, None
            services.cancel_scope.cancel()
            await services.__aexit__(None, None, None)

    async def _exit_native(self, exc: BaseException | None) -> bool | None:
        """Leave on asyncio as a task group is left: wait for (or cancel) the runs, leave the
        host's scope, and raise what crashed inside runs as a group."""
        scope, self._host_scope = self._host_scope, None
        host, self._host_task = self._host_task, None
        assert scope is not None
        raised = exc
        try:
            await self._close_native_runs(exc is not None)
        except BaseException as error:
            raised = error
        if _aio.current_task() is not host:
            # Left from another task than the one that entered it (a pytest-asyncio
            # fixture's setup and teardown, say): a task group could not be, but a runtime
            # on asyncio always could. The scope belongs to that task and cannot be left
            # from here; it has cancelled nothing in this one.
            pass
        elif raised is None:
            scope.__exit__(None, None, None)
        elif scope.__exit__(type(raised), raised, raised.__traceback__):
            raised = None  # the scope's own cancellation: a crash cancelled the body
        crashes, self._crashes = self._crashes, []
        if crashes:
            raise BaseExceptionGroup("runs failed inside the runtime", crashes)
        if raised is not None and raised is not exc:
            raise raised
        return True if exc is not None and raised is None else None

    async def _close_native_runs(self, cancel: bool) -> None:
        """Wait for the runs still going (cancel them first when the body raised, or when
        the wait itself is cancelled), like a task group."""
        try:
            if cancel:
                raise _Abandon
            while self._runs:
                await next(iter(self._runs.values())).wait()
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                while self._runs:
                    # Again on every round: a run may start while others are being
                    # cancelled (a tool was inside `start`), and a task group would
                    # cancel it too.
                    for run in list(self._runs.values()):
                        run.cancel()
                    await next(iter(self._runs.values())).wait()
            if not isinstance(exc, _Abandon):
                raise
