"""`AgentRunner`: run an app's own agents and stream their `AgentMessage` events.

```python
import anyio
from agentkit.apps import AgentRunner, example_app_path, load_app
from agentkit.testing import SchemaTestProvider

async def main() -> None:
    app = load_app(example_app_path())
    async with AgentRunner(app, provider=SchemaTestProvider()) as runner:
        async for message in runner.run(agent_name="research-app:sentinel", prompt="Hi!"):
            print(message.type)

anyio.run(main)
```

`run` starts the turn at once, in the runner's runtime: the turn runs whether or not the
returned stream is read, and leaving the loop early only stops observing it.
"""

from __future__ import annotations

import importlib.util
import sys
import traceback
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from anyio.abc import TaskGroup

from agentkit.actions import ActionContext, ActionResult
from agentkit.diagnostics import Diagnostic
from agentkit.errors import ForeignAgentError
from agentkit.events import AgentMessage
from agentkit.runtime import Run, Runtime
from agentkit.spec import AgentSpec

from ._model import App, AppLoadError

__all__ = [
    "AgentRunner",
    "ForeignAgentError",
    "RunStream",
    "load_app_actions",
    "own_agent",
]

SUMMON = "system:summon"
ACTIONS_MODULES = ("actions.py", "src/actions.py")


class RunStream:
    """The events of one started turn, as an async iterator of `AgentMessage`.

    The turn is already running; iterating only observes it. Iteration raises the error
    that kept the turn from starting (an unknown `session_id`, a session with a turn
    going).
    """

    def __init__(self, agent_id: str) -> None:
        self.agent_id = agent_id
        self._started = anyio.Event()
        self._run: Run | None = None
        self._error: BaseException | None = None
        self._events: AsyncIterator[AgentMessage] | None = None

    async def started(self) -> Run:
        """Wait until the turn has started and return its [`Run`][agentkit.runtime.Run]
        (for `run.session_id`, `run.cancel()` or `await run.wait()`)."""
        await self._started.wait()
        if self._error is not None:
            raise self._error
        assert self._run is not None
        return self._run

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> AgentMessage:
        if self._events is None:
            self._events = (await self.started()).events()
        return await self._events.__anext__()


class AgentRunner:
    """Runs the agents of one [`App`][agentkit.apps.App].

    Use it as an async context manager. Without `runtime`, the runner creates and owns a
    [`Runtime`][agentkit.runtime.Runtime] from `runtime_options` (`provider`, `store`,
    `tools`, `permission_handler`, `services`, `working_dir`, ...) holding the app's agents
    and actions; leaving the block waits for turns still going. With `runtime` (already
    entered by the caller), the app's agents and actions are added to it.

    Args:
        app: The app whose agents this runner runs.
        runtime: A running runtime to use instead of creating one.
        **runtime_options: Keyword arguments for the `Runtime` the runner creates.

    Raises:
        ValueError: when `runtime` already holds a different agent or action under one of
            the app's ids; nothing of the app is added then.
    """

    def __init__(self, app: App, *, runtime: Runtime | None = None, **runtime_options: Any):
        if runtime is not None and runtime_options:
            raise TypeError("pass either a runtime or options to create one, not both")
        self.app = app
        self._owns_runtime = runtime is None
        if runtime is None:
            runtime = app.make_runtime(**runtime_options)
        else:
            _add_to_runtime(app, runtime)
        self.runtime = runtime
        self._task_group: TaskGroup | None = None

    @classmethod
    def from_path(cls, path: str | Path, **runtime_options: Any) -> AgentRunner:
        """Load the app at `path` (folder or `app.yaml`) with its `actions.py`, and make a
        runner for it (what `agentkit run --app DIR` does).

        Raises:
            AppLoadError: when the app or its actions module is invalid.
        """
        from ._loader import load_app

        return cls(load_app_actions(load_app(path)), **runtime_options)

    async def __aenter__(self) -> AgentRunner:
        if self._owns_runtime:
            await self.runtime.__aenter__()
        try:
            self._task_group = anyio.create_task_group()
            await self._task_group.__aenter__()
        except BaseException as exc:
            if self._owns_runtime:
                await self.runtime.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        group, self._task_group = self._task_group, None
        if exc is not None:
            group.cancel_scope.cancel()
        try:
            await group.__aexit__(None, None, None)  # its tasks never raise
        finally:
            if self._owns_runtime:
                try:
                    await self.runtime.__aexit__(exc_type, exc, tb)
                except BaseExceptionGroup as group_error:
                    # the block's own exception propagates as itself, not in a group
                    if exc is None or list(_leaves(group_error)) != [exc]:
                        raise
        return None

    @property
    def app_context(self) -> ActionContext:
        """The app's context for calling actions from code, e.g.
        `await runner.app_context.run_action("system:summon", {...})`."""
        return ActionContext(
            app_id=self.app.id, runtime=self.runtime, services=dict(self.runtime.services)
        )

    async def run_action(self, action_id: str, args: dict[str, Any]) -> ActionResult:
        """Run an action (or `system:summon`) as the app; returns one `ActionResult`."""
        return await self.app_context.run_action(action_id, args)

    def run(
        self,
        *,
        agent_name: str,
        prompt: str,
        channel_thread_key: str | None = None,
        thread_context: str | Mapping[str, Any] | None = None,
        session_id: str | None = None,
        context_suffix: str | None = None,
        shared_context: str | Mapping[str, Any] | None = None,
        working_dir: str | Path | None = None,
    ) -> RunStream:
        """Start a turn of one of the app's own agents and return its event stream.

        Args:
            agent_name: The canonical id `<app-id>:<name>` of an agent of this app.
            prompt: The user message.
            channel_thread_key: The channel thread the turn belongs to (kept with the
                session).
            thread_context: Context of the thread, shown to the agent with the prompt.
            session_id: Resume this session instead of starting a new one.
            context_suffix: Appended to the system prompt for this turn.
            shared_context: Extra context shown to the agent with the prompt.
            working_dir: The turn's working directory.

        Returns:
            The turn's events; the turn runs whether or not they are read.

        Raises:
            ForeignAgentError: when `agent_name` is not an agent of this app (reach other
                agents through the `system:summon` action).
            RuntimeError: outside `async with AgentRunner(...)`.
        """
        spec = self._own_spec(agent_name)
        if self._task_group is None:
            raise RuntimeError("AgentRunner.run works inside 'async with AgentRunner(...)'")
        stream = RunStream(spec.id)
        metadata: dict[str, Any] = {"appId": self.app.id}
        if channel_thread_key is not None:
            metadata["channelThreadKey"] = channel_thread_key
        options: dict[str, Any] = {
            "session_id": session_id,
            "working_dir": working_dir,
            "context_suffix": context_suffix,
            "shared_context": shared_context,
            "thread_context": thread_context,
            "session_metadata": metadata,
        }
        self._task_group.start_soon(self._start, stream, spec.id, prompt, options)
        return stream

    async def _start(
        self, stream: RunStream, agent_id: str, prompt: str, options: dict[str, Any]
    ) -> None:
        try:
            stream._run = await self.runtime.start(agent_id, prompt, **options)
        except Exception as exc:
            stream._error = exc
        finally:
            if stream._run is None and stream._error is None:
                stream._error = RuntimeError("the runner closed before the turn started")
            stream._started.set()

    def _own_spec(self, agent_name: str) -> AgentSpec:
        return own_agent(self.app, agent_name)


def _add_to_runtime(app: App, runtime: Runtime) -> None:
    """Register the app's agents and actions in `runtime`: all of them, or none when any
    id is taken by a different agent or action."""
    conflicts = [
        f"agent {spec.id!r}"
        for spec in app.specs
        if (existing := runtime.agents.get(spec.id)) is not None and existing != spec
    ]
    if runtime.actions is not app.actions:
        conflicts += [
            f"action {action.id!r}"
            for action in app.actions
            if (taken := runtime.actions.get(action.id)) is not None and taken is not action
        ]
    if conflicts:
        raise ValueError(
            f"cannot add app {app.id!r} to the runtime: it already holds a different "
            f"{', '.join(conflicts)}; nothing of the app was added"
        )
    for spec in app.specs:
        runtime.register_agent(spec)
    if runtime.actions is not app.actions:
        for action in app.actions:
            if runtime.actions.get(action.id) is None:
                runtime.actions.add(action)


def own_agent(app: App, agent_name: str) -> AgentSpec:
    """The spec of `app`'s agent with this canonical id.

    Raises:
        ForeignAgentError: when the id is not canonical or names no agent of this app.
    """
    app_id, colon, local = agent_name.partition(":")
    if not colon:
        if agent_name in app.agents:
            raise ForeignAgentError(
                agent_name,
                f"pass the canonical agent id '{app.id}:{agent_name}', "
                f"not the local name {agent_name!r}",
            )
        raise ForeignAgentError(
            agent_name,
            f"{agent_name!r} is not a canonical '<app-id>:<name>' agent id",
        )
    if app_id != app.id:
        raise ForeignAgentError(
            agent_name,
            f"{agent_name!r} is not an agent of app {app.id!r}: AgentRunner.run "
            f"runs only the app's own agents; reach other agents through the "
            f"{SUMMON!r} action, e.g. "
            f"runner.app_context.run_action({SUMMON!r}, "
            f"{{'agentName': {agent_name!r}, 'prompt': ...}})",
        )
    if local not in app.agents:
        known = ", ".join(f"{app.id}:{n}" for n in app.agents) or "none"
        raise ForeignAgentError(
            agent_name, f"app {app.id!r} has no agent {local!r} (its agents: {known})"
        )
    return app.agents[local].spec


def load_app_actions(app: App) -> App:
    """Import the app's Python actions module and let it register its actions.

    The module is `actions.py` in the app folder, else `src/actions.py`; it defines
    `register(app)`, which registers actions with `@app.action(...)` (see the apps guide).
    An app without such a module is returned unchanged.

    Raises:
        AppLoadError: when the module fails to import, has no `register`, or `register`
            fails or calls `sys.exit()`; the diagnostic names the file and line.
    """
    for relative in ACTIONS_MODULES:
        path = app.root / relative
        if path.is_file():
            break
    else:
        return app
    module_name = f"agentkit_app_actions_{app.id.replace('-', '_')}"
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
        register = getattr(module, "register", None)
        if not callable(register):
            raise AppLoadError(
                [
                    Diagnostic(
                        str(path),
                        1,
                        1,
                        "register",
                        "the actions module defines no register(app) function",
                    )
                ]
            )
        register(app)
    except AppLoadError:
        raise
    except (Exception, SystemExit) as exc:
        # sys.exit() in an app's module must not end the host (or `agentkit run`) silently
        line = _line_in(exc, path)
        what = (
            f"the actions module called sys.exit({exc.code!r}) while loading"
            if isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {exc}"
        )
        raise AppLoadError(
            [Diagnostic(str(path), line, 0 if line == 0 else 1, "(python)", what)]
        ) from exc
    return app


def _line_in(exc: BaseException, path: Path) -> int:
    if isinstance(exc, SyntaxError) and exc.lineno:
        return exc.lineno
    # a relative app path (`--app ./app`) against the absolute file names of the frames
    target = path.resolve()
    frames = [
        f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename).resolve() == target
    ]
    return frames[-1].lineno or 0 if frames else 0


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]
