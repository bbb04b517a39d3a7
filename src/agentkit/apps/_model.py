"""The loaded forms of an app: [`App`][agentkit.apps.App] and
[`AppAgent`][agentkit.apps.AppAgent], the id grammar, and the load error."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.actions import ActionExecutor, ActionRegistry
from agentkit.diagnostics import Diagnostic
from agentkit.errors import AppLoadError
from agentkit.spec import AgentSpec, Tier

if TYPE_CHECKING:
    from agentkit.runtime import Runtime
    from agentkit.tools import Effect

__all__ = [
    "APP_ID_PATTERN",
    "CANONICAL_PATTERN",
    "NAME_PATTERN",
    "STANDALONE_APP_ID",
    "App",
    "AppAgent",
    "AppLoadError",
]

APP_ID_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
"""An app id: lowercase letters and digits in groups joined by single hyphens."""

NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
"""A local agent or action name: 1-64 letters, digits, `_`, `.`, `-`; not starting with
`.` or `-`; never `:`."""

CANONICAL_PATTERN = APP_ID_PATTERN[:-1] + ":" + NAME_PATTERN[1:]
"""A canonical id `<app-id>:<name>`."""

APP_ID_RE = re.compile(APP_ID_PATTERN)
NAME_RE = re.compile(NAME_PATTERN)
CANONICAL_RE = re.compile(CANONICAL_PATTERN)

STANDALONE_APP_ID = "local"
"""The app id an agent file loaded on its own gets (`local:<name>`)."""


@dataclass(frozen=True)
class AppAgent:
    """One agent declared by an app, as its YAML file says.

    Attributes:
        name: The local name (`researcher`).
        id: The canonical id `<app-id>:<name>`.
        source: The agent file.
        tier: The capability tier (the legacy `model` spelling already mapped).
        spec: The provider-neutral [`AgentSpec`][agentkit.spec.AgentSpec] the engine runs.
        legacy_model: The legacy `model` value (`opus`, `sonnet`, `haiku`) when used.
        mcp_servers: The `mcpServers` mapping, as plain values.
        network_discovery: The `networkDiscovery` flag, when given.
        code_backed: The `codeBacked` flag, when given.
        warnings: Warnings about this file.
    """

    name: str
    id: str
    source: Path
    tier: Tier
    spec: AgentSpec
    legacy_model: str | None = None
    mcp_servers: Mapping[str, Any] = field(default_factory=dict)
    network_discovery: bool | None = None
    code_backed: bool | None = None
    warnings: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, eq=False)
class App:
    """A loaded app: its `app.yaml` and every agent it declares.

    Actions are registered in Python under `<app-id>:<name>`, either on `app.actions` or
    with the [`action`][agentkit.apps.App.action] decorator.

    Attributes:
        id: The app id (`research-app`).
        root: The app folder (the folder of `app.yaml`).
        agents: Agents by local name, in `app.yaml` order.
        name: Display name from `app.yaml`.
        description: Description from `app.yaml`.
        version: Version string from `app.yaml`.
        actions: The app's actions.
        warnings: Warnings about the app's files.
    """

    id: str
    root: Path
    agents: Mapping[str, AppAgent]
    name: str | None = None
    description: str | None = None
    version: str | None = None
    actions: ActionRegistry = field(default_factory=ActionRegistry, compare=False)
    warnings: tuple[Diagnostic, ...] = ()

    @property
    def specs(self) -> list[AgentSpec]:
        """The AgentSpec of every agent, in declaration order."""
        return [agent.spec for agent in self.agents.values()]

    def make_runtime(self, **runtime_options: Any) -> Runtime:
        """A [`Runtime`][agentkit.runtime.Runtime] holding the app's agents and actions.

        `runtime_options` go to `Runtime` (`provider`, `store`, `permission_handler`, ...).
        Without `tools`, the built-in tools are offered under their Claude names (`Read`,
        `WebFetch`, ...), the vocabulary of agent YAML. The agents' `mcpServers` start and
        stop with the runtime.
        """
        from agentkit.runtime import Runtime

        options = dict(runtime_options)
        options.setdefault("tool_vocabulary", "claude")
        servers: dict[str, Any] = {}
        for agent in self.agents.values():
            servers.update(agent.mcp_servers or {})
        if servers and "mcp_servers" not in options:
            options["mcp_servers"] = servers
        return Runtime(agents=self.specs, actions=self.actions, **options)

    def agent(self, name: str) -> AppAgent:
        """The agent with this local name or canonical id.

        Raises:
            KeyError: when the app has no such agent.
        """
        local = name.removeprefix(f"{self.id}:")
        if ":" in local or local not in self.agents:
            raise KeyError(f"app {self.id!r} has no agent {name!r}")
        return self.agents[local]

    def action(
        self,
        name: str,
        input_schema: dict[str, Any] | None = None,
        *,
        description: str = "",
        effect: Effect = "read",
    ) -> Callable[[ActionExecutor], ActionExecutor]:
        """Decorator registering an async function as the action `<app-id>:<name>`.

        `name` is the local name (`notes_create`) or the canonical id of this app
        (`research-app:notes_create`).

        Raises:
            ValueError: when `name` is a canonical id of another app or not a valid name.
        """
        local = name.removeprefix(f"{self.id}:")
        if not NAME_RE.match(local):
            raise ValueError(
                f"action name {name!r} is not a name of app {self.id!r} "
                "(letters, digits, '_', '.', '-'; apps register only their own actions)"
            )
        return self.actions.action(
            f"{self.id}:{local}", input_schema, description=description, effect=effect
        )
