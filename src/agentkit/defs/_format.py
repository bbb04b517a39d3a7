"""Markdown definitions as an agent format: which paths and targets are theirs, how they
load for the command line and a machine, and what a runtime needs to run them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from agentkit.defs._binding import HostCapabilities, bind
from agentkit.defs._claude_cli import claude_cli_driver
from agentkit.defs._fingerprint import check_resume
from agentkit.defs._parser import load_definition, load_definitions
from agentkit.defs._validate import validate_paths
from agentkit.diagnostics import Diagnostic
from agentkit.engine import Driver, SessionCheck, register_driver, register_session_check
from agentkit.spec import AgentSpec

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.stores import Store

__all__ = [
    "RUNTIME_DRIVERS",
    "SESSION_CHECKS",
    "DefinitionFormat",
    "RunnableDefinition",
    "register_runtime_hooks",
]

RUNTIME_DRIVERS: Mapping[str, Driver] = MappingProxyType({"claude-cli": claude_cli_driver})
"""The drivers definitions need beside the engine, by `AgentSpec.runtime`."""

SESSION_CHECKS: Mapping[str, SessionCheck] = MappingProxyType({"definition": check_resume})
"""The checks on resume of definition sessions, by the session metadata key they read."""


def register_runtime_hooks() -> None:
    """Let every `Runtime` run `runtime: claude-cli` specs and refuse to resume a session
    whose definition changed since it started.

    Registers [`claude_cli_driver`][agentkit.defs.claude_cli_driver] for `claude-cli` and
    [`check_resume`][agentkit.defs.check_resume] for the `definition` session metadata.
    Importing `agentkit.defs` registers nothing; `agentkit run` and a `Machine` loading
    definitions call this themselves. Calling it again changes nothing.
    """
    for runtime, driver in RUNTIME_DRIVERS.items():
        register_driver(runtime, driver)
    for key, check in SESSION_CHECKS.items():
        register_session_check(key, check)


def _host_tool_names() -> list[str]:
    """The names of the built-in tools a command line runtime offers."""
    import agentkit.tools as tools

    return tools.builtin_tools().names()


@dataclass(frozen=True)
class RunnableDefinition:
    """A definition bound to the built-in tools, ready for `agentkit run`.

    Attributes:
        spec: The bound spec.
    """

    spec: AgentSpec

    def make_runtime(self, *, provider: Provider, store: Store, working_dir: Path) -> Runtime:
        """A runtime holding `spec`, with the built-in tools it was bound to."""
        from agentkit.runtime import Runtime

        # The default tools are the built-ins the spec was bound against, and the runtime
        # stops their background processes when it closes.
        return Runtime(provider=provider, store=store, agents=[self.spec], working_dir=working_dir)


class DefinitionFormat:
    """The agent format of Markdown definitions: `.md` files and folders of them.

    Registered with [`agentkit.formats`][agentkit.formats] as `defs`.
    """

    name = "defs"
    drivers: Mapping[str, Driver] = RUNTIME_DRIVERS
    session_checks: Mapping[str, SessionCheck] = SESSION_CHECKS

    def claims_path(self, path: Path) -> bool:
        """A `.md` path, or a folder of `.md` files that is not an app folder (an app's
        README is no definition)."""
        if path.suffix == ".md":
            return True
        return path.is_dir() and not (path / "app.yaml").exists() and any(path.glob("*.md"))

    def claims_target(self, target: str, folder: Path | None) -> bool:
        """A TARGET that is a path to a `.md` file."""
        return target.endswith(".md")

    def load_path(self, path: Path, *, tools: Sequence[str]) -> list[AgentSpec]:
        """The definition at `path` (every one, for a folder), bound to a host with `tools`.

        Raises:
            DefinitionError: when a definition is invalid (a `ValueError`).
            BindError: when the host lacks a listed capability (a `ValueError`).
        """
        host = HostCapabilities.of(tools)
        if path.is_dir():
            return [bind(definition, host) for definition in load_definitions(path)]
        return [bind(load_definition(path), host)]

    def load_target(self, target: str, folder: Path | None) -> RunnableDefinition:
        """The definition at `target` bound to the built-in tools, for `agentkit run`.

        Raises:
            DefinitionError: when the file is invalid (a `ValueError`).
            BindError: when the host lacks a listed capability (a `ValueError`).
        """
        host = HostCapabilities.of(_host_tool_names())
        return RunnableDefinition(bind(load_definition(target), host))

    def validate(self, paths: Sequence[Path]) -> list[Diagnostic]:
        """Every problem of the definitions at `paths` (see
        [`validate_paths`][agentkit.defs.validate_paths]).

        Raises:
            DefinitionPathError: (a `ValueError`) when a path cannot be checked at all.
        """
        return validate_paths(paths)
