"""What an agent format is: the protocol every format of agent files meets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from agentkit.diagnostics import Diagnostic
from agentkit.engine import Driver, SessionCheck
from agentkit.spec import AgentSpec

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.stores import Store

__all__ = ["AgentFormat", "RunnableAgent"]


class RunnableAgent(Protocol):
    """One agent loaded for `agentkit run`, with the runtime it runs in."""

    @property
    def spec(self) -> AgentSpec:
        """The agent to run."""
        ...

    def make_runtime(self, *, provider: Provider, store: Store, working_dir: Path) -> Runtime:
        """A runtime holding the agent and what it needs (an app's actions and MCP
        servers, say)."""
        ...


class AgentFormat(Protocol):
    """A kind of agent file: how to tell its paths and targets, load and check them, and
    what a runtime needs to run what it loads.

    Loading raises `ValueError` (or `LookupError`, for an agent that is not there) with
    messages that name the file, line, column and field; validation returns diagnostics
    and raises `ValueError` only for a path it cannot check at all.
    """

    @property
    def name(self) -> str:
        """The format's name in the registry (`defs`, `apps`)."""
        ...

    @property
    def drivers(self) -> Mapping[str, Driver]:
        """Drivers for the `AgentSpec.runtime` names the format's agents use beside the
        engine (none for most formats)."""
        ...

    @property
    def session_checks(self) -> Mapping[str, SessionCheck]:
        """Checks on resume, by the session metadata key the format's specs carry."""
        ...

    def claims_path(self, path: Path) -> bool:
        """Whether the file or folder at `path` is in this format."""
        ...

    def claims_target(self, target: str, folder: Path | None) -> bool:
        """Whether `agentkit run TARGET` (with `--app folder`, if given) names an agent of
        this format."""
        ...

    def load_path(self, path: Path, *, tools: Sequence[str]) -> list[AgentSpec]:
        """Every agent at `path`, for a host offering the tools named `tools`."""
        ...

    def load_target(self, target: str, folder: Path | None) -> RunnableAgent:
        """The agent `agentkit run TARGET` names."""
        ...

    def validate(self, paths: Sequence[Path]) -> list[Diagnostic]:
        """Every problem (errors and warnings) of the files at `paths`."""
        ...
