"""Loading `app.yaml` and the agent files it lists into an [`App`][agentkit.apps.App].

Every problem of every file is collected as a [`Diagnostic`][agentkit.diagnostics.Diagnostic]
with the file, 1-based line and column and the field path; when any of them is an error,
[`AppLoadError`][agentkit.apps.AppLoadError] is raised with all of them and nothing is
returned: an app loads completely or not at all.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agentkit._internal.input import file_problem
from agentkit.diagnostics import Diagnostic

from ._agent import check_agent
from ._fields import present, show, string_field, unknown_keys, whole_number
from ._model import (
    APP_ID_RE,
    CANONICAL_RE,
    STANDALONE_APP_ID,
    App,
    AppAgent,
    AppLoadError,
)
from ._yaml import FileReport, NotJson, Path_, read_yaml, to_plain, type_word

__all__ = ["APP_FIELDS", "check_app", "load_app"]

APP_FIELDS = ("formatVersion", "id", "agents", "name", "description", "version")
VERSION_RE = re.compile(r"^\S+$")


def load_app(path: str | os.PathLike[str]) -> App:
    """Load an app from its folder or its `app.yaml`, with every agent file it lists.

    Args:
        path: The app folder (containing `app.yaml`) or the `app.yaml` file itself.

    Returns:
        The app; `app.warnings` holds warnings of every file.

    Raises:
        AppLoadError: with every problem of every file when anything is invalid.
    """
    app, diagnostics = _guarded_load(path)
    if app is None:
        raise AppLoadError(diagnostics)
    return app


def _guarded_load(path: str | os.PathLike[str]) -> tuple[App | None, list[Diagnostic]]:
    """`_load_app`, with any failure the checks did not foresee turned into a diagnostic:
    loading reports problems of the input, it never raises anything but `AppLoadError`."""
    try:
        return _load_app(Path(path))
    except (OSError, ValueError, ArithmeticError, RecursionError, MemoryError) as exc:
        where = Diagnostic(str(path), 0, 0, "(root)", f"cannot load the app: {exc}")
        return None, [where]


def _app_file(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        return path / "app.yaml", path
    return path, path.parent


def _load_app(path: Path) -> tuple[App | None, list[Diagnostic]]:
    app_file, root = _app_file(path)
    display = str(app_file)
    problem = file_problem(app_file)
    if problem == "no such file":
        missing = Diagnostic(display, 0, 0, "(root)", "no such file: an app needs an app.yaml")
        return None, [missing]
    if problem is not None:
        return None, [Diagnostic(display, 0, 0, "(root)", problem)]
    report = read_yaml(app_file, display)
    diagnostics: list[Diagnostic] = []
    if not report.parsed:
        return None, report.diagnostics
    data = report.root
    if not isinstance(data, dict):
        report.add((), f"app.yaml must be a mapping of keys, not {type_word(data)}")
        return None, report.diagnostics

    unknown_keys(report, data, APP_FIELDS, "app.yaml")
    version = data.get("formatVersion")
    if "formatVersion" not in data:
        report.add(("formatVersion",), "required field is missing (use formatVersion: 2)")
    elif whole_number(version) != 2:
        report.add(("formatVersion",), f"must be 2, not {show(version)}")
    app_id = string_field(report, data, "id", required=True)
    if app_id is not None and not APP_ID_RE.match(app_id):
        why = "must not contain ':'; " if ":" in app_id else ""
        report.add(
            ("id",),
            f"invalid app id {app_id!r}: {why}use lowercase letters and digits, "
            "with single hyphens between groups (e.g. research-app)",
        )
        app_id = None
    name = string_field(report, data, "name")
    description = string_field(report, data, "description")
    version_text = string_field(report, data, "version")
    if version_text is not None and not VERSION_RE.match(version_text):
        report.add(("version",), "must be a version string without spaces (e.g. 1.2.0)")

    agent_files = _agent_paths(report, data, root)
    diagnostics.extend(report.diagnostics)

    agents: dict[str, AppAgent] = {}
    first_file: dict[str, str] = {}
    failed = report.has_errors
    reports: list[FileReport] = []
    for agent_file in agent_files:
        agent_report, agent = check_agent(agent_file, str(agent_file), app_id or STANDALONE_APP_ID)
        reports.append(agent_report)
        if agent is not None and agent.name in first_file:
            agent_report.add(
                ("name",),
                f"duplicate agent name {agent.name!r}: already declared in "
                f"{first_file[agent.name]}",
            )
            agent = None
        elif agent is not None:
            first_file[agent.name] = str(agent_file)
            agents[agent.name] = agent
        failed = failed or agent is None
    if app_id is not None:
        _check_own_subagents(reports, app_id)
    _check_shared_mcp_servers(reports)
    for agent_report in reports:
        failed = failed or agent_report.has_errors
        diagnostics.extend(agent_report.diagnostics)

    if failed or app_id is None:
        return None, sorted(diagnostics)
    warnings = tuple(sorted(d for d in diagnostics if d.severity == "warning"))
    app = App(
        id=app_id,
        root=root,
        agents=agents,
        name=name,
        description=description,
        version=version_text,
        warnings=warnings,
    )
    return app, sorted(diagnostics)


def _check_own_subagents(reports: list[FileReport], app_id: str) -> None:
    """`allowedSubagents` entries of this app must name agents the app declares."""
    names = {
        r.root["name"]
        for r in reports
        if isinstance(r.root, dict) and isinstance(r.root.get("name"), str)
    }
    for report in reports:
        entries = report.root.get("allowedSubagents") if isinstance(report.root, dict) else None
        if not isinstance(entries, list):
            continue
        for index, entry in enumerate(entries):
            if isinstance(entry, str) and CANONICAL_RE.match(entry):
                owner, _, local = entry.partition(":")
                if owner == app_id and local not in names:
                    report.add(
                        ("allowedSubagents", index),
                        f"app {app_id!r} declares no agent {local!r}",
                    )


def _check_shared_mcp_servers(reports: list[FileReport]) -> None:
    """The app's runtime starts one MCP server per name for all its agents: a name that two
    files configure differently is an error at the second file (the same config is fine)."""
    first: dict[str, tuple[Any, str]] = {}
    for report in reports:
        servers = report.root.get("mcpServers") if isinstance(report.root, dict) else None
        if not isinstance(servers, dict):
            continue
        for name, server in servers.items():
            try:
                config = to_plain(server)
            except NotJson:
                continue  # reported by the agent check
            if not isinstance(name, str) or not isinstance(config, dict):
                continue
            if name not in first:
                first[name] = (config, report.file)
            elif first[name][0] != config:
                report.add(
                    ("mcpServers", name),
                    f"MCP server {name!r} is configured differently in {first[name][1]}; "
                    "the agents of an app share their MCP servers by name: use the same "
                    "config or another name",
                    at="key",
                )


def _agent_paths(report: FileReport, data: dict[str, Any], root: Path) -> list[Path]:
    if not present(report, data, "agents", required=True, hint="a list of agent file paths"):
        return []
    entries = data["agents"]
    if not isinstance(entries, list):
        report.add(("agents",), f"must be a list of agent file paths, not {type_word(entries)}")
        return []
    found: list[Path] = []
    seen: dict[Path, int] = {}
    real_root = root.resolve()
    for index, entry in enumerate(entries):
        where: Path_ = ("agents", index)
        if not isinstance(entry, str) or not entry.strip():
            report.add(where, f"must be a relative file path, not {show(entry)}")
            continue
        resolved = _resolve_agent_path(report, where, entry, root, real_root)
        if resolved is None:
            continue
        shown, real = resolved
        if real in seen:
            report.add(where, f"{entry!r} is listed twice (first as agents[{seen[real]}])")
            continue
        seen[real] = index
        found.append(shown)
    return found


def _resolve_agent_path(
    report: FileReport, where: Path_, entry: str, root: Path, real_root: Path
) -> tuple[Path, Path] | None:
    if "\x00" in entry:
        report.add(where, f"{entry!r} must not contain a NUL character")
        return None
    relative = Path(entry)
    if relative.is_absolute() or entry.startswith(("/", "\\", "~")) or re.match(r"^\w:", entry):
        report.add(where, f"{entry!r} must be a path relative to the app folder")
        return None
    if ".." in re.split(r"[\\/]", entry):
        report.add(where, f"{entry!r} must not leave the app folder ('..' is not allowed)")
        return None
    candidates = [root / relative, root / "src" / relative]
    for candidate in candidates:
        if not os.path.lexists(candidate):
            continue
        real = candidate.resolve()
        if not real.is_relative_to(real_root):
            report.add(
                where, f"{entry!r} leaves the app folder through a symbolic link (to {real})"
            )
            return None
        if not real.is_file():
            kind = "a folder" if real.is_dir() else "not a regular file"
            report.add(where, f"{entry!r} is {kind}, not an agent file")
            return None
        return candidate, real
    looked = " and ".join(str(c) for c in candidates)
    report.add(where, f"agent file {entry!r} not found (looked for {looked})")
    return None


def check_app(path: Path) -> list[Diagnostic]:
    """Every diagnostic of an app folder or `app.yaml` (used by `validate_paths`)."""
    return _guarded_load(path)[1]
