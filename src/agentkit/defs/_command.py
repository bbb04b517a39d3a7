"""What `agentkit run path/to/agent.md PROMPT` needs from this package."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentkit.defs._binding import HostCapabilities, bind
from agentkit.defs._parser import load_definition
from agentkit.defs._types import Definition
from agentkit.spec import AgentSpec
from agentkit.tools import ToolRegistry

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.stores import Store

__all__ = ["DefinitionRunner", "load_definition_for_cli"]


def _host_tools() -> ToolRegistry:
    """The built-in tools when the tools package provides them, else none."""
    import agentkit.tools as tools

    return tools.builtin_tools()


@dataclass(frozen=True)
class DefinitionRunner:
    """A definition bound to the command line's host: its tools make the runtime.

    Attributes:
        definition: The parsed definition.
        spec: The bound spec.
        tools: The host's tools (the built-in tools when available).
    """

    definition: Definition
    spec: AgentSpec
    tools: ToolRegistry

    def make_runtime(
        self, *, provider: Provider, store: Store, working_dir: str | Path
    ) -> Runtime:
        """A runtime that runs `spec` with the host's tools."""
        from agentkit.runtime import Runtime

        # The default tools are the same built-ins `tools` lists, and the runtime stops
        # their background processes when it closes.
        return Runtime(
            provider=provider, store=store, agents=[self.spec], working_dir=working_dir
        )


def load_definition_for_cli(path: str | Path) -> tuple[AgentSpec, DefinitionRunner]:
    """Load and bind a definition for `agentkit run FILE.md`.

    Raises:
        DefinitionError: when the file is invalid (a `ValueError`).
        BindError: when the host lacks a listed capability (a `ValueError`).
    """
    definition = load_definition(path)
    tools = _host_tools()
    spec = bind(definition, HostCapabilities.of(tools.names()))
    return spec, DefinitionRunner(definition, spec, tools)
