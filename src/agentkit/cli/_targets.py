"""What `agentkit run TARGET` names: an agent of a registered format (a definition, an
app's agent), or an `Agent` or `AgentSpec` in Python (`module:attribute`,
`file.py:attribute`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._exit import UsageError

if TYPE_CHECKING:
    from agentkit.agent import Agent
    from agentkit.formats import RunnableAgent
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.spec import AgentSpec
    from agentkit.stores import Store
    from agentkit.tools import Tool

__all__ = ["TARGET_FORMS", "PythonSpec", "load_python_agent", "load_run_target"]

TARGET_FORMS = (
    "TARGET is one of: a path to an agent definition (agent.md); module:attribute or "
    "path/to/file.py:attribute naming an Agent or an AgentSpec (the module is imported "
    "from the current folder); <app-id>:<name> for an agent of the app in --app DIR (or in the "
    "current folder when it holds app.yaml)"
)


@dataclass(frozen=True)
class PythonSpec:
    """An `AgentSpec` found in Python, or an `Agent`'s spec and function tools: it runs
    alone in a runtime of its own."""

    spec: AgentSpec
    tools: tuple[Tool, ...] = ()
    """An `Agent`'s own tools (its functions), added to the built-in ones."""

    def make_runtime(self, *, provider: Provider, store: Store, working_dir: Path) -> Runtime:
        """A runtime holding the spec, with the built-in tools and the agent's own."""
        from agentkit.runtime import Runtime

        return Runtime(
            provider=provider,
            store=store,
            agents=[self.spec],
            tools=self.tools,
            working_dir=working_dir,
        )


def load_run_target(target: str, app_dir: str | None) -> RunnableAgent:
    """The agent TARGET names, with `--app app_dir` if given.

    Raises:
        UsageError: when TARGET names nothing that can run, or its files are invalid.
    """
    from agentkit.formats import install_runtime_hooks, load_target

    folder = Path(app_dir) if app_dir is not None else None
    try:
        runnable = load_target(target, folder)
    except (LookupError, ValueError, OSError) as exc:
        raise UsageError(str(exc)) from None
    if runnable is not None:
        return runnable
    found = load_python_agent(target)
    # A spec from Python may come from any format (a definition bound in the module):
    # every format's driver and resume check is there for it.
    install_runtime_hooks()
    return found


def load_python_agent(target: str, *, hints: bool = True) -> PythonSpec:
    """The `Agent` or `AgentSpec` at `module:attribute` or `path/to/file.py:attribute`,
    with the function tools of an `Agent`.

    Raises:
        UsageError: naming TARGET and what is wrong with it (with `hints`, what
            `agentkit run` takes instead when it names nothing).
    """
    from agentkit._internal.pytargets import PythonTargetError, import_target, is_python_target
    from agentkit.agent import Agent
    from agentkit.spec import AgentSpec

    if not is_python_target(target):
        raise UsageError(f"TARGET {target!r} is not a form agentkit knows{_target_hint(target)}")
    try:
        found = import_target(target)
    except PythonTargetError as exc:
        hint = _target_hint(target) if exc.missing and hints else ""
        if hint and target.rpartition(":")[0].endswith(".py"):
            hint = f". {TARGET_FORMS}"
        raise UsageError(f"{exc}{hint}") from None
    if isinstance(found, Agent):
        return PythonSpec(found.spec, tools=tuple(found.tools))
    if isinstance(found, AgentSpec):
        owner = _agent_owning(target, found)
        return PythonSpec(found, tools=tuple(owner.tools) if owner is not None else ())
    raise UsageError(f"{target} is a {type(found).__name__}, not an AgentSpec nor an Agent")


def _agent_owning(target: str, spec: AgentSpec) -> Agent[Any] | None:
    """The `Agent` whose `spec` TARGET names (`file.py:agent.spec`): its function tools
    come with its spec."""
    from agentkit._internal.pytargets import PythonTargetError, import_target
    from agentkit.agent import Agent

    head, dot, last = target.rpartition(".")
    if not dot or last != "spec" or ":" not in head:
        return None
    try:
        owner = import_target(head)  # the module is imported already: not again
    except PythonTargetError:
        return None
    return owner if isinstance(owner, Agent) and owner.spec is spec else None


def _target_hint(target: str) -> str:
    """What to write instead, for a TARGET that names nothing."""
    forms = f". {TARGET_FORMS}"
    if Path(target).is_dir():
        return f"; {target!r} is a folder: run an app's agent with --app {target} APP-ID:NAME"
    if target.endswith((".yaml", ".yml")):
        return "; an agent YAML file runs inside its app: --app APP-FOLDER APP-ID:NAME"
    if target.endswith(".py"):
        return f"; name the Agent in the file too, as in {target}:agent"
    return forms
