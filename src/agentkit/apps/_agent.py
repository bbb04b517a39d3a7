"""Agent YAML files: every field of the table, checked strictly, into an
[`AppAgent`][agentkit.apps.AppAgent] and its [`AgentSpec`][agentkit.spec.AgentSpec]."""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, cast

from agentkit._internal.input import file_problem
from agentkit.diagnostics import Diagnostic
from agentkit.spec import AgentSpec, ModelSelection, PermissionMode, SpecError, Tier
from agentkit.tools import CLAUDE_TOOL_NAMES, RHO_CAPABILITIES, parse_tool_entry

from ._fields import (
    bool_field,
    choices_text,
    enum_field,
    present,
    schema_problems,
    show,
    string_field,
    string_list_field,
    unknown_keys,
    whole_number,
)
from ._model import (
    APP_ID_RE,
    CANONICAL_RE,
    NAME_RE,
    STANDALONE_APP_ID,
    AppAgent,
    AppLoadError,
)
from ._yaml import FileReport, NotJson, Path_, read_yaml, to_plain, type_word

__all__ = ["AGENT_FIELDS", "check_agent", "check_agent_file", "load_agent_file"]

TOOL_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")

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


@cache
def rho_to_claude() -> dict[str, str]:
    """The Claude name of each built-in tool by its Rho capability name."""
    from agentkit.tools import builtin_tools

    registry = builtin_tools()
    out: dict[str, str] = {}
    for rho in RHO_CAPABILITIES:
        tool = registry.get(rho)
        claude = [n for n in (tool.name, *tool.aliases) if n in CLAUDE_TOOL_NAMES] if tool else []
        if claude:
            out[rho] = claude[0]
    return out


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
    if app_id is not None and not APP_ID_RE.match(app_id):
        raise ValueError(f"invalid app id {app_id!r}")
    file = Path(path)
    try:
        report, agent = check_agent(file, str(file), app_id or STANDALONE_APP_ID)
    except (OSError, ValueError, ArithmeticError, RecursionError, MemoryError) as exc:
        # loading reports problems of the input; it never raises anything but AppLoadError
        raise AppLoadError(
            [Diagnostic(str(file), 0, 0, "(root)", f"cannot load the agent file: {exc}")]
        ) from None
    if agent is None or report.has_errors:
        raise AppLoadError(report.diagnostics)
    return agent


def check_agent_file(path: Path) -> list[Diagnostic]:
    """Every diagnostic of one standalone agent file (used by `validate_paths`)."""
    problem = file_problem(path)
    if problem is not None:
        return [Diagnostic(str(path), 0, 0, "(root)", problem)]
    report, _ = check_agent(path, str(path), STANDALONE_APP_ID)
    return sorted(report.diagnostics)


def check_agent(file: Path, display: str, app_id: str) -> tuple[FileReport, AppAgent | None]:
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
        unknown_keys(report, data, AGENT_FIELDS, "agent")
        name = self.name()
        description = string_field(report, data, "description", required=True, nonempty=True)
        tier, legacy = self.tier()
        effort = enum_field(report, data, "reasoningEffort", REASONING_EFFORTS) or "high"
        prompt = string_field(report, data, "systemPromptPrefix", required=True, nonempty=True)
        tools = self.tools()
        actions = self.ids("actions", star=True)
        permission = enum_field(report, data, "permissionMode", PERMISSION_MODES, required=True)
        max_turns = self.max_turns()
        subagents = self.ids("allowedSubagents", star=False)
        output_schema = self.output_schema()
        mcp = self.mcp_servers()
        network = bool_field(report, data, "networkDiscovery")
        code_backed = bool_field(report, data, "codeBacked")
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
        name = string_field(self.report, self.data, "name", required=True, nonempty=True)
        if name is None:
            return None
        if ":" in name:
            self.report.add(
                ("name",),
                f"must not contain ':' ({name!r}); write the local name, the canonical id "
                f"'<app-id>:<name>' is formed from the app id",
            )
            return None
        if not NAME_RE.match(name):
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
            enum_field(report, data, "tier", TIERS)
            return None, None
        if "model" in data:
            legacy = enum_field(report, data, "model", tuple(LEGACY_MODELS))
            return (LEGACY_MODELS[legacy], legacy) if legacy else (None, None)
        if not present(report, data, "tier", required=True, hint=choices_text(TIERS)):
            return None, None
        return enum_field(report, data, "tier", TIERS), None

    def tools(self) -> list[str] | None:
        entries = string_list_field(self.report, self.data, "tools", required=True)
        if entries is None:
            return None
        out: list[str] = []
        for index, entry in entries:
            name, specifier = parse_tool_entry(entry)
            if not TOOL_NAME_RE.match(name) or (specifier is not None and not specifier.strip()):
                self.report.add(
                    ("tools", index),
                    f"invalid tool entry {entry!r}: write a tool name (Read) or a name with a "
                    "non-empty specifier (Bash(git *))",
                )
            elif entry in out:
                self.report.add(("tools", index), f"{entry!r} is listed twice")
            else:
                out.append(entry)
                self.tool_name_warning(index, name)
        return out

    def tool_name_warning(self, index: int, name: str) -> None:
        """Warn about a tool name the runtime will not offer unless a plugin adds it."""
        if name in CLAUDE_TOOL_NAMES:
            return
        servers = self.data.get("mcpServers")
        declared = servers if isinstance(servers, dict) else {}
        where: Path_ = ("tools", index)
        if name.startswith("mcp__"):
            server = name.split("__")[1]
            if server not in declared:
                self.report.warn(
                    where,
                    f"{name!r} names MCP server {server!r}, which this file's mcpServers "
                    "does not declare; the agent will not get the tool",
                )
            return
        if name in RHO_CAPABILITIES:
            claude = rho_to_claude().get(name)
            fix = f"write {claude!r}" if claude else "it has no Claude-named equivalent"
            self.report.warn(
                where,
                f"{name!r} is a Rho capability name (the vocabulary of Markdown "
                f"definitions); agent YAML uses Claude tool names: {fix}",
            )
            return
        close = difflib.get_close_matches(name, CLAUDE_TOOL_NAMES, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        self.report.warn(
            where,
            f"{name!r} is not a built-in tool ({hint}built-in: {', '.join(CLAUDE_TOOL_NAMES)}); "
            "the agent gets it only if a plugin registers a tool under this name",
        )

    def ids(self, key: str, *, star: bool) -> list[str] | None:
        entries = string_list_field(self.report, self.data, key)
        if entries is None:
            return None
        out: list[str] = []
        kind = "action" if star else "agent"
        for index, entry in entries:
            if star and entry == "*":
                pass
            elif not CANONICAL_RE.match(entry):
                hint = f"; write '<app-id>:{entry}'" if NAME_RE.match(entry) else ""
                extra = ' or "*"' if star else ""
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
        turns = whole_number(value)
        if turns is None:
            self.report.add(("maxTurns",), f"must be a positive integer, not {show(value)}")
            return None
        if turns < 1:
            self.report.add(("maxTurns",), f"must be a positive integer, not {value}")
            return None
        return turns

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
        # a `$ref` cycle that never descends into the output is one of the problems
        problems = schema_problems(schema)
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
                ("mcpServers",),
                f"must be a mapping of server name to server, not {type_word(servers)}",
            )
            return None
        for server_name, server in servers.items():
            where: Path_ = ("mcpServers", str(server_name))
            if not isinstance(server_name, str) or not NAME_RE.match(server_name):
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
        unknown_keys(report, server, MCP_SERVER_FIELDS, "MCP server", prefix=where)
        kind = enum_field(report, server, "type", MCP_TYPES, prefix=where)
        for key in ("command", "url", "cwd"):
            string_field(report, server, key, nonempty=True, prefix=where)
        string_list_field(report, server, "args", prefix=where)
        for key in ("env", "headers"):
            if key not in server:
                continue
            values = server[key]
            if not isinstance(values, dict):
                report.add((*where, key), f"must be a mapping of strings, not {type_word(values)}")
                continue
            for k, v in values.items():
                if not isinstance(k, str) or not isinstance(v, str):
                    report.add((*where, key, str(k)), f"must be a string, not {show(v)}")
        if kind is None and "type" in server:
            return
        if kind is None:
            kind = "http" if "url" in server and "command" not in server else "stdio"
        needed, foreign = (
            ("command", ("url", "headers"))
            if kind == "stdio"
            else ("url", ("command", "args", "env", "cwd"))
        )
        if needed not in server:
            report.add((*where, needed), f"required field is missing (type: {kind})")
        for key in foreign:
            if key in server:
                report.add((*where, key), f"a {kind} server does not take {key!r}", at="key")

    def warnings(self, permission: str | None) -> None:
        report, data = self.report, self.data
        max_turns = whole_number(data.get("maxTurns"))
        if max_turns is not None and 1 <= max_turns < RECOMMENDED_MIN_TURNS:
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
                        "bypassPermissions: its calls run without a permission prompt "
                        "(allowlist rules such as Bash(git *) still apply); use acceptEdits "
                        "unless the agent is fully trusted or sandboxed",
                    )
        actions = data.get("actions")
        if isinstance(actions, list):
            for index, entry in enumerate(actions):
                if entry == "*":
                    report.warn(
                        ("actions", index),
                        '"*" allows every action; list the canonical action ids the agent needs',
                    )
