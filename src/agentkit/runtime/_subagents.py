"""Actions and sub-agents run from inside runs: `Runtime.run_action` and
`Runtime.run_subagent`, which `system:summon` and the engine's action calls go through."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from agentkit.actions import ActionContext, ActionRegistry, ActionResult, RunHost
from agentkit.engine import Emit, call_action
from agentkit.errors import AgentkitError
from agentkit.runtime._run import Run
from agentkit.spec import AgentSpec

__all__ = ["DEFAULT_SUBAGENT_TIMEOUT", "SUMMON_ACTION", "run_action", "run_subagent"]

DEFAULT_SUBAGENT_TIMEOUT = 600.0
"""Seconds a sub-agent's run may take by default (`Runtime(subagent_timeout=...)`)."""

_ENDING_GRACE = 10.0
"""Seconds a timed-out sub-agent's run gets to end (its tools stopped, its ending stored)
before its caller goes on without waiting for it."""

if TYPE_CHECKING:
    # For the type checker only: a protocol class would cost its import time for nothing.
    class SubagentHost(RunHost, Protocol):
        """What running actions and sub-agents needs of the runtime (a `Runtime` is one)."""

        @property
        def actions(self) -> ActionRegistry: ...

        @property
        def services(self) -> Mapping[str, Any]: ...

        @property
        def max_subagent_depth(self) -> int: ...

        @property
        def subagent_timeout(self) -> float | None: ...

        async def start(
            self,
            agent: AgentSpec | str,
            prompt: str,
            *,
            session_id: str | None = None,
            working_dir: str | Path | None = None,
            _depth: int = 0,
        ) -> Run: ...


SUMMON_ACTION = "system:summon"
"""The action that runs any registered agent (its arguments: `agentName`, `prompt`,
optionally `sessionId`)."""


async def run_action(
    runtime: SubagentHost,
    action_id: str,
    args: dict[str, Any],
    *,
    caller: str | None = None,
    depth: int = 0,
) -> ActionResult:
    """Run an action by canonical id; `system:summon` runs any registered agent.

    `depth` is the calling agent's nesting depth (0 for code outside any run), so a
    summon made from inside a run's action still counts towards the depth limit.
    """
    if action_id == SUMMON_ACTION:
        agent = args.get("agentName")
        prompt = args.get("prompt")
        session_id = args.get("sessionId")
        if not isinstance(agent, str) or not isinstance(prompt, str) or not prompt:
            return ActionResult.fail(
                "system:summon needs 'agentName' (a canonical agent id) and 'prompt'"
            )
        if session_id is not None and not isinstance(session_id, str):
            return ActionResult.fail("system:summon: 'sessionId' must be a string")
        return await run_subagent(runtime, agent, prompt, session_id=session_id, depth=depth + 1)
    action = runtime.actions.get(action_id)
    if action is None:
        return ActionResult.fail(f"no action {action_id!r} is registered")
    return await call_action(
        action,
        args,
        ActionContext(
            app_id=action.app_id,
            caller=caller,
            runtime=runtime,
            services=dict(runtime.services),
            depth=depth,
        ),
    )


async def run_subagent(
    runtime: SubagentHost,
    agent_id: str,
    prompt: str,
    *,
    session_id: str | None = None,
    forward: Emit | None = None,
    depth: int = 1,
    working_dir: Path | None = None,
) -> ActionResult:
    """Run an agent to the end and return its answer as an `ActionResult`.

    With `forward`, the sub-agent's `session_init` and content events are passed on,
    tagged with its id in `agent`; its `turn_start`/`turn_end` and deltas never are.

    A run still going after `runtime.subagent_timeout` seconds is cancelled (it ends as an
    `error` saying it timed out, its tool processes stopped) and the result is the error
    "sub-agent '<id>' timed out after N seconds".
    """
    if depth > runtime.max_subagent_depth:
        return ActionResult.fail(f"sub-agents nest deeper than {runtime.max_subagent_depth}")
    spec = runtime.agents.get(agent_id)
    if spec is None:
        return ActionResult.fail(f"no agent {agent_id!r} is registered")
    try:
        child = await runtime.start(
            spec, prompt, session_id=session_id, working_dir=working_dir, _depth=depth
        )
    except (AgentkitError, LookupError, ValueError) as exc:
        return ActionResult.fail(str(exc))
    timeout = runtime.subagent_timeout
    try:
        with anyio.move_on_after(float("inf") if timeout is None else timeout):
            if forward is not None:
                async for event in child.events():
                    if event.type in ("turn_start", "turn_end", "text_delta"):
                        continue
                    forward(event if event.agent else event.model_copy(update={"agent": spec.id}))
            await child.wait()
        if not child.done:
            return await _timed_out(child, spec.id, timeout)
        outcome = await child.wait()  # ended: at once
    finally:
        if not child.done:
            child.cancel()
    data: dict[str, Any] = {
        "agentName": spec.id,
        "sessionId": outcome.session_id,
        "content": outcome.text,
    }
    if outcome.payload is not None:
        data["payload"] = outcome.payload
    if outcome.ok:
        return ActionResult.ok(data)
    return ActionResult.fail(outcome.error or "the sub-agent failed", data)


async def _timed_out(child: Run, agent_id: str, seconds: float | None) -> ActionResult:
    """Cancel a sub-agent's run that took too long, give it `_ENDING_GRACE` to end, and
    say so."""
    error = f"sub-agent {agent_id!r} timed out after {seconds:g} seconds"
    child.cancel(reason=error)
    with anyio.move_on_after(_ENDING_GRACE):
        await child.wait()
    return ActionResult.fail(error, {"agentName": agent_id, "sessionId": child.session_id})
