"""Apps as an agent format: which paths and targets are theirs, how they load for the
command line and a machine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from agentkit.diagnostics import Diagnostic
from agentkit.engine import Driver, SessionCheck
from agentkit.spec import AgentSpec

from ._loader import load_app
from ._model import App
from ._runner import load_app_actions, own_agent
from ._validate import AGENT_SUFFIXES, APP_FILE_NAMES, validate_paths

if TYPE_CHECKING:
    from agentkit.providers import Provider
    from agentkit.runtime import Runtime
    from agentkit.stores import Store

__all__ = ["AppFormat", "RunnableAppAgent"]


@dataclass(frozen=True)
class RunnableAppAgent:
    """An agent of an app loaded with its actions module, ready for `agentkit run`.

    Attributes:
        spec: The agent's spec.
        app: Its app, whose runtime holds every agent and action of the app.
    """

    spec: AgentSpec
    app: App

    def make_runtime(self, *, provider: Provider, store: Store, working_dir: Path) -> Runtime:
        """The app's runtime (see [`App.make_runtime`][agentkit.apps.App.make_runtime])."""
        return self.app.make_runtime(provider=provider, store=store, working_dir=working_dir)


def _names_python_file(target: str) -> bool:
    head, colon, _ = target.rpartition(":")
    return bool(colon) and head.endswith(".py")


class AppFormat:
    """The agent format of apps: `app.yaml` with its `agents/*.yaml`, and agent YAML files.

    Registered with [`agentkit.formats`][agentkit.formats] as `apps`. An app agent is named
    `<app-id>:<name>` and read in the app folder (`--app DIR`, else the current folder when
    it holds `app.yaml`).
    """

    name = "apps"
    drivers: Mapping[str, Driver] = MappingProxyType({})
    session_checks: Mapping[str, SessionCheck] = MappingProxyType({})

    def claims_path(self, path: Path) -> bool:
        """An app folder (holding `app.yaml`), an `app.yaml` file or an agent YAML file;
        never a `.md` path, which is a definition's."""
        if path.suffix == ".md":
            return False
        if path.is_dir():
            return (path / "app.yaml").exists()
        return path.name in APP_FILE_NAMES or path.suffix.lower() in AGENT_SUFFIXES

    def claims_target(self, target: str, folder: Path | None) -> bool:
        """Any TARGET when the app folder is given, else `<app-id>:<name>` when the current
        folder holds `app.yaml`; never a `.md` file's path nor a Python file's
        `file.py:attribute`, which name a definition and a spec."""
        if target.endswith(".md") or _names_python_file(target):
            return False
        return folder is not None or (":" in target and (Path.cwd() / "app.yaml").is_file())

    def load_path(self, path: Path, *, tools: Sequence[str]) -> list[AgentSpec]:
        """The specs of every agent of the app at `path` (its folder or `app.yaml`); the
        app's own Python actions are not loaded.

        Raises:
            AppLoadError: (a `ValueError`) with every problem of every file.
        """
        return load_app(path).specs

    def load_target(self, target: str, folder: Path | None) -> RunnableAppAgent:
        """The app in `folder` (else the current folder) with its actions module, and its
        agent `target` (`<app-id>:<name>`).

        Raises:
            AppLoadError: (a `ValueError`) when the app or its actions module is invalid.
            ForeignAgentError: (a `LookupError`) when `target` is not an agent of the app.
        """
        app = load_app_actions(load_app(folder if folder is not None else Path.cwd()))
        return RunnableAppAgent(own_agent(app, target), app)

    def validate(self, paths: Sequence[Path]) -> list[Diagnostic]:
        """Every diagnostic of the app folders, `app.yaml` and agent files at `paths` (see
        [`validate_paths`][agentkit.apps.validate_paths]); it also says why a path that is
        none of them cannot be checked.

        Raises:
            ValidateUsageError: (a `ValueError`) when a path cannot be checked at all.
        """
        return validate_paths(paths)
