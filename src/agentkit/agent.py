"""The Python agent adapter: an agent written in Python, run in one call.

```python
from pydantic import BaseModel

from agentkit import Agent, tool


class Forecast(BaseModel):
    city: str
    summary: str


@tool
def get_weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return f"Sunny in {city}"


agent = Agent("test", instructions="Forecast briefly.", tools=[get_weather], output_type=Forecast)
forecast = agent.run_sync("Weather in Paris?").output  # a Forecast
```

[`Agent`][agentkit.agent.Agent] is a thin facade like the app and definition adapters: it
builds an [`AgentSpec`][agentkit.spec.AgentSpec], holds the tools and the output type, and
runs through a [`Runtime`][agentkit.runtime.Runtime]: the spec, engine, events and stores
are the core's, unchanged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Never, overload

from typing_extensions import TypeVar

from agentkit.errors import RunFailedError
from agentkit.spec import AgentSpec, ModelSelection, PermissionMode, ReasoningEffort

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from agentkit.runtime import Run, RunBudget, RunOutcome, Runtime
    from agentkit.stores import Store
    from agentkit.tools import Tool

__all__ = ["Agent"]

OutputT = TypeVar("OutputT", default=str)

_RESULT = "result"  # the property a non-object output type is wrapped in


def output_schema(output_type: Any) -> tuple[dict[str, Any], bool]:
    """The JSON Schema the agent's structured output must match for `output_type`, and
    whether it is wrapped (the output tool takes an object: a scalar, a list or a union
    is asked for as `{"result": ...}`)."""
    from pydantic import TypeAdapter

    schema = TypeAdapter(output_type).json_schema()
    if schema.get("type") == "object":
        return schema, False
    definitions = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {_RESULT: schema},
        "required": [_RESULT],
        "additionalProperties": False,
    }
    if definitions:
        wrapped["$defs"] = definitions
    return wrapped, True


class Agent(Generic[OutputT]):
    """An agent written in Python.

    Args:
        model: A model string (`"openai:gpt-4.1"`, `"anthropic:claude-sonnet-4-5"`,
            `"test"`, `"local"`, a tier such as `"large"`; see
            [`ModelSelection.parse`][agentkit.spec.ModelSelection.parse]) or a
            `ModelSelection`; by default the `medium` tier of the runtime's provider.
        instructions: The system prompt.
        name: The agent's id (lowercase letters, digits and hyphens; `agent` by default).
        description: What it does (shown when it is summoned).
        tools: Tools it may call: `Tool`s or plain functions (sync or async; see
            [`tool`][agentkit.tools.tool]). Built-in tools are offered by name with
            `builtin_tools` (for example `["Read", "Grep"]`).
        builtin_tools: Allowlist entries of the runtime's built-in tools.
        output_type: The type of the structured answer: a pydantic model, a dataclass, a
            TypedDict or a scalar; `run()` returns it validated in `outcome.output`.
        runtime: The runtime to run on (opened by you); by default the agent opens its
            own for each call, or once for an `async with agent:` block.
        store: The store of the agent's own runtime (by default one in memory, kept for
            the agent's life so that `session_id=` continues a conversation).
        reasoning_effort: As on [`AgentSpec`][agentkit.spec.AgentSpec].
        permission_mode: As on `AgentSpec`.
        max_turns: As on `AgentSpec`.
        allowed_subagents: As on `AgentSpec`.
        budget: The most model calls and tokens one run may use
            ([`RunBudget`][agentkit.runtime.RunBudget]; by default 100 model calls and
            2,000,000 tokens). It is the runtime's: with `runtime=`, give it to that
            `Runtime(budget=...)` instead.

    A misspelt keyword is an error that names the closest one.
    """

    @overload
    def __init__(
        self: Agent[str],
        model: str | ModelSelection | None = None,
        *,
        instructions: str = "",
        name: str = "agent",
        description: str = "",
        tools: Sequence[Tool | Callable[..., Any]] = (),
        builtin_tools: Sequence[str] = (),
        output_type: None = None,
        runtime: Runtime | None = None,
        store: Store | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        permission_mode: PermissionMode = "default",
        max_turns: int | None = None,
        allowed_subagents: Sequence[str] = (),
        budget: RunBudget | None = None,
        **misspelt: Never,
    ) -> None: ...

    @overload
    def __init__(
        self: Agent[OutputT],
        model: str | ModelSelection | None = None,
        *,
        instructions: str = "",
        name: str = "agent",
        description: str = "",
        tools: Sequence[Tool | Callable[..., Any]] = (),
        builtin_tools: Sequence[str] = (),
        output_type: type[OutputT],
        runtime: Runtime | None = None,
        store: Store | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        permission_mode: PermissionMode = "default",
        max_turns: int | None = None,
        allowed_subagents: Sequence[str] = (),
        budget: RunBudget | None = None,
        **misspelt: Never,
    ) -> None: ...

    def __init__(
        self,
        model: str | ModelSelection | None = None,
        *,
        instructions: str = "",
        name: str = "agent",
        description: str = "",
        tools: Sequence[Tool | Callable[..., Any]] = (),
        builtin_tools: Sequence[str] = (),
        output_type: Any = None,
        runtime: Runtime | None = None,
        store: Store | None = None,
        reasoning_effort: ReasoningEffort | None = None,
        permission_mode: PermissionMode = "default",
        max_turns: int | None = None,
        allowed_subagents: Sequence[str] = (),
        budget: RunBudget | None = None,
        **misspelt: Never,
    ) -> None:
        if misspelt:
            from agentkit.spec import unknown_field_message

            key = next(iter(misspelt))
            known = [*_PARAMETERS, *AgentSpec.model_fields]
            raise TypeError(f"Agent(): {key!r} {unknown_field_message(key, known)}")
        if budget is not None:
            from agentkit.runtime import RunBudget

            if not isinstance(budget, RunBudget):
                raise TypeError(
                    f"Agent(): budget must be a RunBudget(model_calls=..., tokens=...), not "
                    f"{type(budget).__name__}"
                )
        if budget is not None and runtime is not None:
            raise TypeError(
                "Agent(): budget= sets the budget of the agent's own runtime; with runtime= "
                "give it to Runtime(budget=...) instead"
            )
        from agentkit.tools import Tool

        self.tools: list[Tool] = [
            item if isinstance(item, Tool) else Tool.from_function(item) for item in tools
        ]
        """The agent's own tools."""
        self.output_type = output_type
        """The type of the structured answer, or `None` for text."""
        self._adapter: TypeAdapter[Any] | None = None
        schema: dict[str, Any] | None = None
        self._wrapped = False
        if output_type is not None:
            from pydantic import TypeAdapter

            schema, self._wrapped = output_schema(output_type)
            self._adapter = TypeAdapter(output_type)
        fields: dict[str, Any] = {}
        if model is not None:
            fields["model"] = model
        self.spec = AgentSpec(
            id=name,
            description=description,
            system_prompt=instructions,
            tools=(*builtin_tools, *(t.name for t in self.tools)),
            output_schema=schema,
            reasoning_effort=reasoning_effort,
            permission_mode=permission_mode,
            max_turns=max_turns,
            allowed_subagents=tuple(allowed_subagents),
            **fields,
        )
        """The spec the core runs."""
        self._runtime = runtime
        self._own: Runtime | None = None  # opened by `async with agent:`
        self._store = store
        self._budget = budget

    def __repr__(self) -> str:
        kind = getattr(self.output_type, "__name__", "str")
        return f"<Agent {self.spec.id} -> {kind}>"

    # --- running ------------------------------------------------------------------------

    async def run(self, prompt: str, *, session_id: str | None = None) -> RunOutcome[OutputT]:
        """Run the agent on `prompt` and return its outcome once it has ended.

        Args:
            prompt: The user's message.
            session_id: Continue this session (`outcome.session_id` of an earlier run).

        A call that needs a person's consent (or a question) makes the run wait until
        someone decides it (docs/human-in-the-loop.md), and this call with it: give the
        agent a runtime (`runtime=`, or `async with agent:`) and decide from another task
        (`runtime.decide(run_id, ...)`), or `start` the run and decide while reading its
        events (`permission_request`, `question`).

        Raises:
            RunFailedError: The run did not complete (its error, status and accounting
                are on the exception).
        """
        async with self._using() as runtime:
            run = await runtime.start(self.spec, prompt, session_id=session_id)
            outcome = await run.wait()
        if not outcome.ok:
            raise RunFailedError(outcome)
        return self._typed(outcome)

    def run_sync(self, prompt: str, *, session_id: str | None = None) -> RunOutcome[OutputT]:
        """[`run`][agentkit.agent.Agent.run] from synchronous code (it starts an event loop:
        inside one, `await agent.run(...)` instead)."""
        import anyio

        try:
            anyio.get_current_task()
        except Exception:  # no event loop in this thread: the one case run_sync is for
            pass
        else:
            raise RuntimeError(
                "run_sync() was called inside an event loop: use 'await agent.run(...)'"
            )
        return anyio.run(functools.partial(self.run, prompt, session_id=session_id))

    async def start(self, prompt: str, *, session_id: str | None = None) -> Run:
        """Start a run and return it at once, to stream its events (`run.events()`); it
        needs an open runtime: inside `async with agent:` or with `runtime=`."""
        runtime = self._runtime or self._own
        if runtime is None:
            raise RuntimeError(
                "start() streams from an open runtime: use it inside 'async with agent:' "
                "or give the agent runtime=..."
            )
        self._register_tools(runtime)
        return await runtime.start(self.spec, prompt, session_id=session_id)

    def output_of(self, outcome: RunOutcome[Any]) -> OutputT:
        """The validated output of a completed outcome (for runs started with `start`)."""
        return self._typed(outcome).output

    async def __aenter__(self) -> Agent[OutputT]:
        if self._runtime is None and self._own is None:
            self._own = self._new_runtime()
            await self._own.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        own, self._own = self._own, None
        if own is not None:
            await own.__aexit__(exc_type, exc, tb)

    # --- internals ----------------------------------------------------------------------

    def _new_runtime(self) -> Runtime:
        from agentkit.runtime import Runtime
        from agentkit.stores import MemoryStore

        if self._store is None:
            self._store = MemoryStore()  # kept for the agent's life: sessions continue
        runtime = Runtime(store=self._store, budget=self._budget)
        self._register_tools(runtime)
        return runtime

    @contextlib.asynccontextmanager
    async def _using(self) -> AsyncIterator[Runtime]:
        runtime = self._runtime or self._own
        if runtime is not None:
            self._register_tools(runtime)
            yield runtime
            return
        async with self._new_runtime() as fresh:
            yield fresh

    def _register_tools(self, runtime: Runtime) -> None:
        for tool in self.tools:
            if runtime.tools.get(tool.name) is not tool:
                runtime.tools.add(tool)

    def _typed(self, outcome: RunOutcome[Any]) -> RunOutcome[OutputT]:
        if self._adapter is None:
            return outcome
        payload = outcome.payload
        if self._wrapped and isinstance(payload, dict):
            payload = payload.get(_RESULT)
        return dataclasses.replace(outcome, output=self._adapter.validate_python(payload))


_PARAMETERS = (
    "model",
    "instructions",
    "name",
    "description",
    "tools",
    "builtin_tools",
    "output_type",
    "runtime",
    "store",
    "reasoning_effort",
    "permission_mode",
    "max_turns",
    "allowed_subagents",
    "budget",
)
