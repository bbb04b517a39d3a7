"""Loading `app.yaml` and agent YAML files, strictly, into [`App`][agentkit.apps.App].

Every problem of every file is collected as a [`Diagnostic`][agentkit.diagnostics.Diagnostic]
with the file, 1-based line and column and the field path; when any of them is an error,
[`AppLoadError`][agentkit.apps.AppLoadError] is raised with all of them and nothing is
returned: an app loads completely or not at all.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from agentkit.actions import ActionExecutor, ActionRegistry
from agentkit.diagnostics import Diagnostic, LoadError
from agentkit.spec import AgentSpec, ModelSelection, PermissionMode, SpecError, Tier
from agentkit.tools import parse_tool_entry

from ._yaml import FileReport, NotJson, Path_, is_bool, read_yaml, to_plain, type_word

if TYPE_CHECKING:
    from agentkit.runtime import Runtime
    from agentkit.tools import Effect, ToolRegistry

__all__ = [
    "AGENT_FIELDS",
    "APP_FIELDS",
    "App",
    "AppAgent",
    "AppLoadError",
    "load_agent_file",
    "load_app",
]

APP_ID_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
"""An app id: lowercase letters and digits in groups joined by single hyphens."""

NAME_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"
"""A local agent or action name: 1-64 letters, digits, `_`, `.`, `-`; not starting with
`.` or `-`; never `:`."""

CANONICAL_PATTERN = APP_ID_PATTERN[:-1] + ":" + NAME_PATTERN[1:]
"""A canonical id `<app-id>:<name>`."""

_APP_ID = re.compile(APP_ID_PATTERN)
_NAME = re.compile(NAME_PATTERN)
_CANONICAL = re.compile(CANONICAL_PATTERN)
_TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
_VERSION = re.compile(r"^\S+$")

STANDALONE_APP_ID = "local"
"""The app id an agent file loaded on its own gets (`local:<name>`)."""

APP_FIELDS = ("formatVersion", "id", "agents", "name", "description", "version")
AGENT_FIELDS = (
    "name",
    "description",
    "tier",
    "model",
    "reasoningEffort",
    "systemPromptPrefix",
    "tools",
    "actions",
    "permissionMode",
    "maxTurns",
    "allowedSubagents",
    "outputSchema",
    "mcpServers",
    "networkDiscovery",
    "codeBacked",
)
TIERS = ("large", "medium", "small")
LEGACY_MODELS = {"opus": "large", "sonnet": "medium", "haiku": "small"}
REASONING_EFFORTS = ("low", "high", "xhigh")
PERMISSION_MODES = ("acceptEdits", "bypassPermissions", "default")
OUTSIDE_WORLD_TOOLS = ("WebFetch", "WebSearch", "Bash")
RECOMMENDED_MIN_TURNS = 30
MCP_SERVER_FIELDS = ("type", "command", "args", "env", "cwd", "url", "headers")
MCP_TYPES = ("stdio", "http", "sse")


class AppLoadError(LoadError):
    """An app or agent file is invalid. `diagnostics` lists every problem of every file
    (warnings included), sorted by file and position."""


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
        `WebFetch`, ...), the vocabulary of agent YAML, when `agentkit.tools` provides them.
        """
        from agentkit.runtime import Runtime

        options = dict(runtime_options)
        if options.get("tools") is None:
            options["tools"] = _builtin_tools()
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
        if not _NAME.match(local):
            raise ValueError(
                f"action name {name!r} is not a name of app {self.id!r} "
                "(letters, digits, '_', '.', '-'; apps register only their own actions)"
            )
        return self.actions.action(
            f"{self.id}:{local}", input_schema, description=description, effect=effect
        )


def _builtin_tools() -> ToolRegistry | None:
    import agentkit.tools

    make = getattr(agentkit.tools, "builtin_tools", None)
    if make is None:
        return None
    tools: ToolRegistry = make("claude")
    return tools


# --------------------------------------------------------------------------- app.yaml


def load_app(path: str | os.PathLike[str]) -> App:
    """Load an app from its folder or its `app.yaml`, with every agent file it lists.

    Args:
        path: The app folder (containing `app.yaml`) or the `app.yaml` file itself.

    Returns:
        The app; `app.warnings` holds warnings of every file.

    Raises:
        AppLoadError: with every problem of every file when anything is invalid.
    """
    app, diagnostics = _load_app(Path(path))
    if app is None:
        raise AppLoadError(diagnostics)
    return app


def _app_file(path: Path) -> tuple[Path, Path]:
    if path.is_dir():
        return path / "app.yaml", path
    return path, path.parent


def _load_app(path: Path) -> tuple[App | None, list[Diagnostic]]:
    app_file, root = _app_file(path)
    display = str(app_file)
    if not app_file.is_file():
        missing = Diagnostic(display, 0, 0, "(root)", "no such file: an app needs an app.yaml")
        return None, [missing]
    report = read_yaml(app_file, display)
    diagnostics: list[Diagnostic] = []
    if not report.parsed:
        return None, report.diagnostics
    data = report.root
    if not isinstance(data, dict):
        report.add((), f"app.yaml must be a mapping of keys, not {type_word(data)}")
        return None, report.diagnostics

    _unknown_keys(report, data, APP_FIELDS, "app.yaml")
    version = data.get("formatVersion")
    if "formatVersion" not in data:
        report.add(("formatVersion",), "required field is missing (use formatVersion: 2)")
    elif is_bool(version) or not isinstance(version, int) or version != 2:
        report.add(("formatVersion",), f"must be 2, not {_show(version)}")
    app_id = _string(report, data, "id", required=True)
    if app_id is not None and not _APP_ID.match(app_id):
        why = "must not contain ':'; " if ":" in app_id else ""
        report.add(
            ("id",),
            f"invalid app id {app_id!r}: {why}use lowercase letters and digits, "
            "with single hyphens between groups (e.g. research-app)",
        )
        app_id = None
    name = _string(report, data, "name")
    description = _string(report, data, "description")
    version_text = _string(report, data, "version")
    if version_text is not None and not _VERSION.match(version_text):
        report.add(("version",), "must be a version string without spaces (e.g. 1.2.0)")

    agent_files = _agent_paths(report, data, root)
    diagnostics.extend(report.diagnostics)

    agents: dict[str, AppAgent] = {}
    first_file: dict[str, str] = {}
    failed = report.has_errors
    reports: list[FileReport] = []
    for agent_file in agent_files:
        agent_report, agent = _check_agent(
            agent_file, str(agent_file), app_id or STANDALONE_APP_ID
        )
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
            if isinstance(entry, str) and _CANONICAL.match(entry):
                owner, _, local = entry.partition(":")
                if owner == app_id and local not in names:
                    report.add(
                        ("allowedSubagents", index),
                        f"app {app_id!r} declares no agent {local!r}",
                    )


def _agent_paths(report: FileReport, data: dict[str, Any], root: Path) -> list[Path]:
    if "agents" not in data:
        report.add(("agents",), "required field is missing (a list of agent file paths)")
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
            report.add(where, f"must be a relative file path, not {_show(entry)}")
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


# --------------------------------------------------------------------------- agent files


def load_agent_file(path: str | os.PathLike[str], app_id: str | None = None) -> AppAgent:
    """Load one agent YAML file on its own.

    Args:
        path: The agent file.
        app_id: The app the agent belongs to; its canonical id becomes `<app_id>:<name>`.
            Without one the agent gets the app id `local` (`local:<name>`).

    Raises:
        AppLoadError: with every problem of the file when it is invalid.
        ValueError: when `app_id` is not a valid app id.
    """
    if app_id is not None and not _APP_ID.match(app_id):
        raise ValueError(f"invalid app id {app_id!r}")
    file = Path(path)
    report, agent = _check_agent(file, str(file), app_id or STANDALONE_APP_ID)
    if agent is None or report.has_errors:
        raise AppLoadError(report.diagnostics)
    return agent


def check_agent_file(path: Path) -> list[Diagnostic]:
    """Every diagnostic of one standalone agent file (used by `validate_paths`)."""
    if not path.is_file():
        return [Diagnostic(str(path), 0, 0, "(root)", "no such file")]
    report, _ = _check_agent(path, str(path), STANDALONE_APP_ID)
    return sorted(report.diagnostics)


def check_app(path: Path) -> list[Diagnostic]:
    """Every diagnostic of an app folder or `app.yaml` (used by `validate_paths`)."""
    return _load_app(path)[1]


def _check_agent(file: Path, display: str, app_id: str) -> tuple[FileReport, AppAgent | None]:
    report = read_yaml(file, display)
    if not report.parsed:
        return report, None
    data = report.root
    if data is None or not isinstance(data, dict):
        report.add((), f"an agent file must be a mapping of fields, not {type_word(data)}")
        return report, None
    return report, _AgentChecker(report, data, app_id, file).run()


@dataclass
class _AgentChecker:
    report: FileReport
    data: dict[str, Any]
    app_id: str
    file: Path

    def run(self) -> AppAgent | None:
        report, data = self.report, self.data
        _unknown_keys(report, data, AGENT_FIELDS, "agent")
        name = self.name()
        description = _string(report, data, "description", required=True, nonempty=True)
        tier, legacy = self.tier()
        effort = _enum(report, data, "reasoningEffort", REASONING_EFFORTS) or "high"
        prompt = _string(report, data, "systemPromptPrefix", required=True, nonempty=True)
        tools = self.tools()
        actions = self.ids("actions", star=True)
        permission = _enum(report, data, "permissionMode", PERMISSION_MODES, required=True)
        max_turns = self.max_turns()
        subagents = self.ids("allowedSubagents", star=False)
        output_schema = self.output_schema()
        mcp = self.mcp_servers()
        network = _bool(report, data, "networkDiscovery")
        code_backed = _bool(report, data, "codeBacked")
        self.warnings(permission)

        if report.has_errors:
            return None
        assert name is not None and description is not None and tier is not None
        assert prompt is not None and tools is not None and permission is not None
        metadata: dict[str, Any] = {"appId": self.app_id, "source": str(self.file)}
        if legacy is not None:
            metadata["model"] = legacy
        if mcp is not None:
            metadata["mcpServers"] = mcp
        if network is not None:
            metadata["networkDiscovery"] = network
        if code_backed is not None:
            metadata["codeBacked"] = code_backed
        canonical = f"{self.app_id}:{name}"
        try:
            spec = AgentSpec(
                id=canonical,
                description=description,
                system_prompt=prompt,
                model=ModelSelection.of_tier(cast(Tier, tier)),
                reasoning_effort=effort,
                tools=tuple(tools),
                actions=tuple(actions or ()),
                permission_mode=cast(PermissionMode, permission),
                max_turns=max_turns,
                allowed_subagents=tuple(subagents or ()),
                output_schema=output_schema,
                metadata=metadata,
            )
        except SpecError as exc:  # pragma: no cover - the checks above are stricter
            report.add((), f"{exc.field}: {exc.message}")
            return None
        return AppAgent(
            name=name,
            id=canonical,
            source=self.file,
            tier=cast(Tier, tier),
            spec=spec,
            legacy_model=legacy,
            mcp_servers=mcp or {},
            network_discovery=network,
            code_backed=code_backed,
            warnings=tuple(d for d in report.diagnostics if d.severity == "warning"),
        )

    def name(self) -> str | None:
        name = _string(self.report, self.data, "name", required=True, nonempty=True)
        if name is None:
            return None
        if ":" in name:
            self.report.add(
                ("name",),
                f"must not contain ':' ({name!r}); write the local name, the canonical id "
                f"'<app-id>:<name>' is formed from the app id",
            )
            return None
        if not _NAME.match(name):
            self.report.add(
                ("name",),
                f"invalid agent name {name!r}: use 1-64 letters, digits, '_', '.' or '-', "
                "starting with a letter, digit or '_'",
            )
            return None
        return name

    def tier(self) -> tuple[str | None, str | None]:
        report, data = self.report, self.data
        if "tier" in data and "model" in data:
            report.add(
                ("model",),
                "'model' and 'tier' are both set; keep only 'tier' "
                "('model' is the legacy spelling)",
                at="key",
            )
            _enum(report, data, "tier", TIERS)
            return None, None
        if "model" in data:
            legacy = _enum(report, data, "model", tuple(LEGACY_MODELS))
            return (LEGACY_MODELS[legacy], legacy) if legacy else (None, None)
        if "tier" not in data:
            report.add(("tier",), "required field is missing (large, medium or small)")
            return None, None
        return _enum(report, data, "tier", TIERS), None

    def tools(self) -> list[str] | None:
        entries = _string_list(self.report, self.data, "tools", required=True)
        if entries is None:
            return None
        out: list[str] = []
        for index, entry in entries:
            name, specifier = parse_tool_entry(entry)
            if not _TOOL_NAME.match(name) or (specifier is not None and not specifier.strip()):
                self.report.add(
                    ("tools", index),
                    f"invalid tool entry {entry!r}: write a tool name (Read) or a name with a "
                    "non-empty specifier (Bash(git *))",
                )
            elif entry in out:
                self.report.add(("tools", index), f"{entry!r} is listed twice")
            else:
                out.append(entry)
        return out

    def ids(self, key: str, *, star: bool) -> list[str] | None:
        entries = _string_list(self.report, self.data, key)
        if entries is None:
            return None
        out: list[str] = []
        kind = "action" if star else "agent"
        for index, entry in entries:
            if star and entry == "*":
                pass
            elif not _CANONICAL.match(entry):
                hint = f"; write '<app-id>:{entry}'" if _NAME.match(entry) else ""
                extra = " or \"*\"" if star else ""
                self.report.add(
                    (key, index),
                    f"{entry!r} is not a canonical '<app-id>:<name>' {kind} id{extra}{hint}",
                )
                continue
            if entry in out:
                self.report.add((key, index), f"{entry!r} is listed twice")
                continue
            out.append(entry)
        return out

    def max_turns(self) -> int | None:
        if "maxTurns" not in self.data:
            return None
        value = self.data["maxTurns"]
        if is_bool(value) or not isinstance(value, int):
            self.report.add(("maxTurns",), f"must be a positive integer, not {_show(value)}")
            return None
        if value < 1:
            self.report.add(("maxTurns",), f"must be a positive integer, not {value}")
            return None
        return int(value)

    def output_schema(self) -> dict[str, Any] | None:
        if "outputSchema" not in self.data:
            return None
        raw = self.data["outputSchema"]
        if not isinstance(raw, dict):
            self.report.add(
                ("outputSchema",), f"must be a JSON Schema mapping, not {type_word(raw)}"
            )
            return None
        try:
            schema = to_plain(raw, ("outputSchema",))
        except NotJson as exc:
            self.report.add(exc.path, str(exc))
            return None
        problems = _schema_problems(schema)
        for path, message in problems:
            self.report.add(("outputSchema", *path), f"not a valid JSON Schema: {message}")
        return None if problems else cast(dict[str, Any], schema)

    def mcp_servers(self) -> dict[str, Any] | None:
        report, data = self.report, self.data
        if "mcpServers" not in data:
            return None
        servers = data["mcpServers"]
        if not isinstance(servers, dict):
            report.add(
                ("mcpServers",), f"must be a mapping of server name to server, not "
                f"{type_word(servers)}"
            )
            return None
        for server_name, server in servers.items():
            where: Path_ = ("mcpServers", str(server_name))
            if not isinstance(server_name, str) or not _NAME.match(server_name):
                report.add(where, f"invalid server name {server_name!r}", at="key")
                continue
            if not isinstance(server, dict):
                report.add(where, f"must be a mapping (command or url), not {type_word(server)}")
                continue
            self.mcp_server(where, server)
        try:
            return cast(dict[str, Any], to_plain(servers, ("mcpServers",)))
        except NotJson as exc:
            report.add(exc.path, str(exc))
            return None

    def mcp_server(self, where: Path_, server: dict[str, Any]) -> None:
        report = self.report
        _unknown_keys(report, server, MCP_SERVER_FIELDS, "MCP server", prefix=where)
        kind = _enum(report, server, "type", MCP_TYPES, prefix=where)
        for key in ("command", "url", "cwd"):
            _string(report, server, key, nonempty=True, prefix=where)
        _string_list(report, server, "args", prefix=where)
        for key in ("env", "headers"):
            if key not in server:
                continue
            values = server[key]
            if not isinstance(values, dict):
                report.add((*where, key), f"must be a mapping of strings, not {type_word(values)}")
                continue
            for k, v in values.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    report.add((*where, key, str(k)), f"must be a string, not {_show(v)}")
        if kind is None and "type" in server:
            return
        if kind is None:
            kind = "http" if "url" in server and "command" not in server else "stdio"
        needed, foreign = (
            ("command", ("url", "headers")) if kind == "stdio"
            else ("url", ("command", "args", "env", "cwd"))
        )
        if needed not in server:
            report.add((*where, needed), f"required field is missing (type: {kind})")
        for key in foreign:
            if key in server:
                report.add((*where, key), f"a {kind} server does not take {key!r}", at="key")

    def warnings(self, permission: str | None) -> None:
        report, data = self.report, self.data
        max_turns = data.get("maxTurns")
        if (
            isinstance(max_turns, int)
            and not is_bool(max_turns)
            and 1 <= max_turns < RECOMMENDED_MIN_TURNS
        ):
            report.warn(
                ("maxTurns",),
                f"{max_turns} is below the recommended {RECOMMENDED_MIN_TURNS}; an agent "
                "doing real work may stop before it finishes",
            )
        if permission == "bypassPermissions":
            entries = data.get("tools")
            for index, entry in enumerate(entries if isinstance(entries, list) else []):
                if isinstance(entry, str) and parse_tool_entry(entry)[0] in OUTSIDE_WORLD_TOOLS:
                    report.warn(
                        ("tools", index),
                        f"{entry} reaches the outside world and permissionMode is "
                        "bypassPermissions: no call is ever checked; use acceptEdits unless "
                        "the agent is fully trusted or sandboxed",
                    )
        actions = data.get("actions")
        if isinstance(actions, list):
            for index, entry in enumerate(actions):
                if entry == "*":
                    report.warn(
                        ("actions", index),
                        '"*" allows every action; list the canonical action ids the agent needs',
                    )


# --------------------------------------------------------------------------- field helpers


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(str(value))
    if value is None or is_bool(value) or isinstance(value, int | float):
        return f"{type_word(value)} ({'null' if value is None else _yaml_scalar(value)})"
    return type_word(value)


def _yaml_scalar(value: Any) -> str:
    if is_bool(value):
        return "true" if value else "false"
    return str(value)


def _unknown_keys(
    report: FileReport,
    data: dict[Any, Any],
    allowed: tuple[str, ...],
    what: str,
    prefix: Path_ = (),
) -> None:
    for key in data:
        if not isinstance(key, str):
            report.add(
                (*prefix, str(key)), f"keys must be strings, not {type_word(key)}", at="key"
            )
            continue
        if key in allowed:
            continue
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        report.add(
            (*prefix, key),
            f"unknown field {key!r} in {what}{hint} (allowed: {', '.join(allowed)})",
            at="key",
        )


def _string(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    nonempty: bool = False,
    prefix: Path_ = (),
) -> str | None:
    if key not in data:
        if required:
            report.add((*prefix, key), "required field is missing")
        return None
    value = data[key]
    if not isinstance(value, str):
        hint = "; quote it" if value is not None and not isinstance(value, dict | list) else ""
        report.add((*prefix, key), f"must be a string, not {_show(value)}{hint}")
        return None
    if nonempty and not value.strip():
        report.add((*prefix, key), "must not be empty")
        return None
    return str(value)


def _enum(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    choices: tuple[str, ...],
    *,
    required: bool = False,
    prefix: Path_ = (),
) -> str | None:
    if key not in data:
        if required:
            report.add((*prefix, key), f"required field is missing ({_choices(choices)})")
        return None
    value = data[key]
    if not isinstance(value, str) or value not in choices:
        report.add((*prefix, key), f"must be one of {_choices(choices)}, not {_show(value)}")
        return None
    return str(value)


def _choices(choices: tuple[str, ...]) -> str:
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


def _bool(report: FileReport, data: dict[str, Any], key: str) -> bool | None:
    if key not in data:
        return None
    value = data[key]
    if not is_bool(value):
        report.add((key,), f"must be true or false, not {_show(value)}")
        return None
    return bool(value)


def _string_list(
    report: FileReport,
    data: dict[str, Any],
    key: str,
    *,
    required: bool = False,
    prefix: Path_ = (),
) -> list[tuple[int, str]] | None:
    if key not in data:
        if required:
            report.add((*prefix, key), "required field is missing (a list, [] for none)")
        return None
    values = data[key]
    if not isinstance(values, list):
        report.add((*prefix, key), f"must be a list of strings, not {_show(values)}")
        return None
    out: list[tuple[int, str]] = []
    for index, value in enumerate(values):
        if not isinstance(value, str) or not value.strip():
            report.add((*prefix, key, index), f"must be a non-empty string, not {_show(value)}")
        else:
            out.append((index, str(value)))
    return out


def _schema_problems(schema: Any) -> list[tuple[Path_, str]]:
    """Where and why `schema` fails its meta-schema (empty when valid)."""
    from agentkit._schema import check_schema

    try:
        check_schema(schema)
    except ValueError:
        pass
    else:
        return []
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    problems: list[tuple[Path_, str]] = []
    for error in _leaf_errors(cls(cls.META_SCHEMA).iter_errors(schema)):
        problems.append((tuple(error.absolute_path), error.message))
    problems.sort(key=lambda p: [str(x) for x in p[0]])
    unique: list[tuple[Path_, str]] = []
    for problem in problems:
        if problem not in unique:
            unique.append(problem)
    return unique or [((), "rejected by its meta-schema")]


def _leaf_errors(errors: Iterator[Any]) -> Iterator[Any]:
    """The most specific errors (meta-schema `anyOf` branches report through `context`)."""
    from jsonschema.exceptions import best_match

    for error in errors:
        if error.context:
            yield from _leaf_errors(iter([best_match(error.context)]))
        else:
            yield error

