"""Actions: named operations an app offers, callable by code and, when allowlisted, by agents.

An action has a canonical `<app-id>:<name>` id, a JSON Schema for its input and an async
`execute(args, ctx)` returning an [`ActionResult`][agentkit.actions.ActionResult]. Inputs are
validated before `execute` runs; an exception inside `execute` becomes an error result.

```python
from agentkit.actions import ActionRegistry, ActionResult

registry = ActionRegistry()

@registry.action("notes:create", {"type": "object", "properties": {"title": {"type": "string"}},
                                  "required": ["title"]})
async def create_note(args, ctx):
    return ActionResult.ok({"created": args["title"]})
```
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from agentkit._internal.schema import check_schema, schema_violations
from agentkit.errors import ActionError
from agentkit.spec import Effect

if TYPE_CHECKING:
    from agentkit.events import AgentMessage
    from agentkit.spec import AgentSpec

__all__ = [
    "Action",
    "ActionContext",
    "ActionError",
    "ActionExecutor",
    "ActionRegistry",
    "ActionResult",
    "RunHost",
    "ToolContext",
    "action_tool_name",
]

_ACTION_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*:[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class ActionResult(BaseModel):
    """The outcome of an action: `status` is `ok` (read `data`) or `error` (read `error`)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    status: Literal["ok", "error"]
    data: Any = None
    error: str | None = None

    @classmethod
    def ok(cls, data: Any = None) -> ActionResult:
        """A successful result."""
        return cls(status="ok", data=data)

    @classmethod
    def fail(cls, error: str, data: Any = None) -> ActionResult:
        """A failed result."""
        return cls(status="error", error=error, data=data)


class RunHost(Protocol):
    """What a running tool or action may ask of the runtime that runs it: the agents it may
    run, other actions, and sub-agents. [`Runtime`][agentkit.runtime.Runtime] is one."""

    @property
    def agents(self) -> Mapping[str, AgentSpec]:
        """The registered agents by canonical id."""
        ...

    async def run_action(
        self,
        action_id: str,
        args: dict[str, Any],
        *,
        caller: str | None = None,
        depth: int = 0,
    ) -> ActionResult:
        """Run an action by canonical id (`system:summon` runs any registered agent)."""
        ...

    async def run_subagent(
        self,
        agent_id: str,
        prompt: str,
        *,
        session_id: str | None = None,
        forward: Callable[[AgentMessage], None] | None = None,
        depth: int = 1,
        working_dir: Path | None = None,
    ) -> ActionResult:
        """Run an agent to the end and return its answer as an `ActionResult`."""
        ...


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may use.

    Attributes:
        working_dir: The run's working directory; file tools stay inside it.
        run_id: The run this call belongs to.
        session_id: The session of the run.
        agent_id: Canonical id of the calling agent.
        spec: The calling agent.
        services: Host-supplied services by name (for example a `questionnaire` callback or
            a `web_search` backend), so tools need no globals.
        runtime: The runtime running the call (for sub-agents); `None` outside one.
        depth: How deeply the calling agent is nested in sub-agent calls (0 at the top).
    """

    working_dir: Path
    run_id: str
    session_id: str
    agent_id: str
    spec: AgentSpec | None = None
    services: Mapping[str, Any] = field(default_factory=dict)
    runtime: RunHost | None = None
    depth: int = 0


@dataclass(frozen=True)
class ActionContext:
    """What an executing action may use.

    Attributes:
        app_id: The app the action belongs to.
        caller: Canonical id of the agent that called it, or `None` when code called it.
        session_id: The caller's session, when an agent called it.
        runtime: The runtime (for `run_action` and `system:summon`).
        services: Host-supplied services by name.
        depth: How deeply the calling agent is nested in sub-agent calls; summons made
            through `run_action` count from here, so nesting stays bounded.
    """

    app_id: str
    caller: str | None = None
    session_id: str | None = None
    runtime: RunHost | None = None
    services: dict[str, Any] = field(default_factory=dict)
    depth: int = 0

    async def run_action(self, action_id: str, args: dict[str, Any]) -> ActionResult:
        """Run another action through the runtime (for example `system:summon`)."""
        if self.runtime is None:
            return ActionResult.fail("no runtime: this context cannot run actions")
        return await self.runtime.run_action(action_id, args, caller=self.caller, depth=self.depth)


ActionExecutor = Callable[[dict[str, Any], ActionContext], Awaitable[ActionResult | Any]]


@dataclass(frozen=True)
class Action:
    """An operation with a canonical id, an input schema and an async `execute`.

    `execute` may return an `ActionResult`, or any other value, which becomes
    `ActionResult.ok(value)`. `effect` is how permission modes treat agent calls; the
    default `read` means the action allowlist alone decides.

    `timeout` is how many seconds one call may take (ten minutes by default; `None`: no
    limit). A call still running then is cancelled as a tool's is,
    and its result is the error "<id> timed out after N seconds", which the calling model
    sees; the run goes on. It holds wherever the action is called from: an agent's
    allowlisted call and `Runtime.run_action` alike.
    """

    id: str
    input_schema: dict[str, Any]
    execute: ActionExecutor
    description: str = ""
    effect: Effect = "read"
    timeout: float | None = 600.0
    """Seconds one call may take; `None`: no limit."""

    def __post_init__(self) -> None:
        if not _ACTION_ID.match(self.id):
            raise ActionError(f"action id {self.id!r} is not a canonical '<app-id>:<name>' id")
        timeout = self.timeout
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout < float("inf")
        ):
            raise ActionError(
                f"action {self.id}: timeout must be a positive number of seconds, not "
                f"{self.timeout!r}"
            )
        try:
            check_schema(self.input_schema)
        except ValueError as exc:
            raise ActionError(f"action {self.id}: input_schema: {exc}") from None

    @property
    def app_id(self) -> str:
        """The app part of the id."""
        return self.id.partition(":")[0]

    async def run(self, args: dict[str, Any], ctx: ActionContext) -> ActionResult:
        """Validate `args`, then execute. Never raises for bad input or a failing action."""
        violations = schema_violations(args, self.input_schema)
        if violations:
            return ActionResult.fail(f"invalid input for {self.id}: " + "; ".join(violations))
        try:
            outcome = await self.execute(args, ctx)
        except Exception as exc:
            return ActionResult.fail(f"{self.id} failed: {type(exc).__name__}: {exc}")
        if isinstance(outcome, ActionResult):
            return outcome
        return ActionResult.ok(outcome)


def action_tool_name(action_id: str) -> str:
    """The name under which an action is offered to a model (`app:name` -> `app__name`);
    model APIs do not accept `:` in tool names."""
    return action_id.replace(":", "__")


class ActionRegistry:
    """Actions by canonical id."""

    def __init__(self, actions: Iterable[Action] = ()) -> None:
        self._actions: dict[str, Action] = {}
        for item in actions:
            self.add(item)

    def add(self, item: Action) -> Action:
        """Register an action; a second action with the same id is an error."""
        if item.id in self._actions:
            raise ActionError(f"action {item.id!r} is registered twice")
        self._actions[item.id] = item
        return item

    def action(
        self,
        action_id: str,
        input_schema: dict[str, Any] | None = None,
        *,
        description: str = "",
        effect: Effect = "read",
        timeout: float | None = 600.0,
    ) -> Callable[[ActionExecutor], ActionExecutor]:
        """Decorator registering an async function as the action `action_id` (the
        arguments are `Action`'s)."""

        def decorate(fn: ActionExecutor) -> ActionExecutor:
            self.add(
                Action(
                    id=action_id,
                    input_schema=input_schema or {"type": "object"},
                    execute=fn,
                    description=description or (fn.__doc__ or "").strip(),
                    effect=effect,
                    timeout=timeout,
                )
            )
            return fn

        return decorate

    def get(self, action_id: str) -> Action | None:
        """The action with this id, if registered."""
        return self._actions.get(action_id)

    def __iter__(self) -> Any:
        return iter(self._actions.values())

    def __len__(self) -> int:
        return len(self._actions)

    def __contains__(self, action_id: object) -> bool:
        return action_id in self._actions
