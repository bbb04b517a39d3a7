"""The registered agent formats, and the one dispatch from a path or target to a format."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agentkit.apps import AppFormat
from agentkit.defs import DefinitionFormat
from agentkit.diagnostics import Diagnostic
from agentkit.formats._format import AgentFormat, RunnableAgent
from agentkit.runtime import register_driver, register_session_check
from agentkit.spec import AgentSpec

__all__ = [
    "BUILTIN_FORMATS",
    "claiming_format",
    "format_named",
    "install_runtime_hooks",
    "load_agents",
    "load_target",
    "register_format",
    "registered_formats",
    "validate_paths",
]

BUILTIN_FORMATS: tuple[AgentFormat, ...] = (AppFormat(), DefinitionFormat())
"""The formats agentkit brings: apps (`app.yaml`, agent YAML) and Markdown definitions.

Their claims do not overlap. Apps come first for two reasons of the command line: they
report the paths no format claims (their messages say what an app path must be), and
`agentkit validate` checks app paths before definitions."""

_formats: list[AgentFormat] = list(BUILTIN_FORMATS)


def register_format(agent_format: AgentFormat) -> None:
    """Add a format; it is asked before the formats registered earlier and the built-in
    ones, so it may claim paths and targets they would claim. A format registered under
    a name already taken replaces that one."""
    _formats[:] = [known for known in _formats if known.name != agent_format.name]
    _formats.insert(0, agent_format)


def registered_formats() -> tuple[AgentFormat, ...]:
    """Every registered format, in the order they are asked."""
    return tuple(_formats)


def format_named(name: str) -> AgentFormat:
    """The registered format called `name`.

    Raises:
        LookupError: when no format has this name.
    """
    for agent_format in _formats:
        if agent_format.name == name:
            return agent_format
    known = ", ".join(known.name for known in _formats)
    raise LookupError(f"no agent format {name!r} (the formats: {known})")


def install_runtime_hooks(agent_format: AgentFormat | None = None) -> None:
    """Register a format's drivers and session checks with every `Runtime` (every
    registered format's, without one).

    Sessions are checked on resume only through registered checks, so what a format loads
    runs in any runtime once its hooks are installed. `load_agents` and `load_target`
    install the hooks of the format they load with.
    """
    for each in _formats if agent_format is None else (agent_format,):
        for runtime, driver in each.drivers.items():
            register_driver(runtime, driver)
        for key, check in each.session_checks.items():
            register_session_check(key, check)


def claiming_format(path: str | os.PathLike[str]) -> AgentFormat | None:
    """The registered format that claims the file or folder at `path`, if any."""
    path = Path(path)
    return next((each for each in _formats if each.claims_path(path)), None)


def load_agents(
    path: str | os.PathLike[str], *, format_name: str | None = None, tools: Sequence[str] = ()
) -> list[AgentSpec]:
    """Every agent at `path`, loaded by the format called `format_name` (else the one that
    claims the path), for a host offering the tools named `tools`.

    Raises:
        LookupError: when no format has this name or claims the path.
        ValueError: when the files are invalid (the format's error names file, line,
            column and field).
    """
    path = Path(path)
    if format_name is not None:
        agent_format = format_named(format_name)
    elif (claimed := claiming_format(path)) is not None:
        agent_format = claimed
    else:
        raise LookupError(f"{path}: no agent format knows this path")
    specs = agent_format.load_path(path, tools=tools)
    install_runtime_hooks(agent_format)
    return specs


def load_target(target: str, folder: Path | None = None) -> RunnableAgent | None:
    """The agent `agentkit run TARGET` names, loaded by the format that claims `target`
    (with `--app folder`, if given); `None` when no format claims it.

    Raises:
        ValueError: when the files are invalid.
        LookupError: when the files hold no such agent.
    """
    for agent_format in _formats:
        if agent_format.claims_target(target, folder):
            runnable = agent_format.load_target(target, folder)
            install_runtime_hooks(agent_format)
            return runnable
    return None


def _reporter() -> AgentFormat:
    """The format that checks the paths no format claims, to say why they cannot be
    checked: the first built-in format still registered (apps), else the first one."""
    builtin = [each for each in _formats if any(each is known for known in BUILTIN_FORMATS)]
    if builtin:
        return builtin[0]
    if not _formats:
        raise LookupError("no agent format is registered")
    return _formats[0]


def validate_paths(paths: Sequence[Path]) -> list[Diagnostic]:
    """Every problem of the files at `paths`, in order: each path is checked by the format
    that claims it, a path no format claims by the apps format (which says why it cannot
    be checked). The formats check their paths in registry order.

    Raises:
        ValueError: when a path cannot be checked at all (the format's reason).
    """
    by_format: dict[str, list[Path]] = {}
    for path in paths:
        agent_format = claiming_format(path) or _reporter()
        by_format.setdefault(agent_format.name, []).append(path)
    diagnostics: list[Diagnostic] = []
    for agent_format in list(_formats):
        if agent_format.name in by_format:
            diagnostics.extend(agent_format.validate(by_format[agent_format.name]))
    return sorted(diagnostics)
