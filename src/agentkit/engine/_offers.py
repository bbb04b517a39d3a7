"""What a spec is offered in a turn: its allowlisted tools, actions, `summon` and
`submit_output`, as model-facing definitions with what calling each means.

Computed once per spec and registry version, and kept in the runtime's `OfferCache`."""

from __future__ import annotations

import difflib
import logging
from dataclasses import dataclass
from typing import Any, Literal

from agentkit.actions import Action, action_tool_name
from agentkit.engine._turns import TurnResources
from agentkit.errors import UnknownToolError
from agentkit.providers import ToolDefinition
from agentkit.spec import AgentSpec
from agentkit.tools import Tool, entry_tool_names, parse_tool_entry

__all__ = ["SUBMIT_OUTPUT", "SUMMON", "Offered", "check_allowlist", "offered_tools", "offers_of"]

_logger = logging.getLogger("agentkit.engine")


SUBMIT_OUTPUT = "submit_output"


SUMMON = "summon"


@dataclass
class Offered:
    """A tool as offered in this turn, with what calling it means."""

    definition: ToolDefinition
    kind: Literal["tool", "action", "summon", "submit"]
    tool: Tool | None = None
    action: Action | None = None
    entries: tuple[str, ...] = ()  # restricting allowlist entries; empty: unrestricted


def submit_schema(output_schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The `submit_output` input schema, and whether the payload is wrapped in `output`
    (model APIs take object schemas only)."""
    if output_schema.get("type") == "object":
        return output_schema, False
    inner = dict(output_schema)
    wrapper: dict[str, Any] = {}
    # Root-relative `$ref`s (`#/$defs/item`) must still resolve from the wrapper's root.
    for key in ("$defs", "definitions", "$schema"):
        if key in inner:
            wrapper[key] = inner.pop(key)
    wrapper.update(
        type="object",
        properties={"output": inner},
        required=["output"],
        additionalProperties=False,
    )
    return wrapper, True


def offered_tools(spec: AgentSpec, resources: TurnResources) -> dict[str, Offered]:
    """Everything the model may call in a turn of `spec`, by model-facing name."""
    offered: dict[str, Offered] = {}
    for entry in spec.tools:
        restricted = parse_tool_entry(entry)[1] is not None
        for name in entry_tool_names(entry, resources.tools):
            tool = resources.tools.get(name)
            if tool is None:
                continue
            previous = offered.get(name)
            if previous is None:
                offered[name] = Offered(
                    ToolDefinition(name, tool.description, tool.input_schema),
                    "tool",
                    tool=tool,
                    entries=(entry,) if restricted else (),
                )
            elif previous.entries:
                # A bare entry lifts every restriction; otherwise any entry may allow.
                previous.entries = (*previous.entries, entry) if restricted else ()
    if spec.actions:
        for action in resources.actions:
            if spec.allows_action(action.id):
                tool_name = action_tool_name(action.id)
                offered[tool_name] = Offered(
                    ToolDefinition(
                        tool_name,
                        action.description or f"Run the action {action.id}.",
                        action.input_schema,
                    ),
                    "action",
                    action=action,
                )
    if spec.allowed_subagents:
        offered[SUMMON] = Offered(
            ToolDefinition(
                SUMMON,
                "Run another agent on a task and get its final answer.",
                {
                    "type": "object",
                    "properties": {
                        "agentName": {"type": "string", "enum": list(spec.allowed_subagents)},
                        "prompt": {"type": "string", "minLength": 1},
                        "sessionId": {"type": "string"},
                    },
                    "required": ["agentName", "prompt"],
                    "additionalProperties": False,
                },
            ),
            "summon",
        )
    if spec.output_schema is not None:
        schema, _ = submit_schema(spec.output_schema)
        offered[SUBMIT_OUTPUT] = Offered(
            ToolDefinition(SUBMIT_OUTPUT, "Submit your final structured answer.", schema),
            "submit",
        )
    return offered


_Offers = tuple[dict[str, Offered], tuple[ToolDefinition, ...]]


def offers_of(spec: AgentSpec, resources: TurnResources) -> _Offers:
    """`offered_tools` and their definitions, remembered per spec in `resources.offers`: a
    spec is immutable, so the answer changes only when the spec is another object or a
    registry has changed (registries only grow; a tool registry counts its changes)."""
    tools, actions = resources.tools, resources.actions
    cache = resources.offers.entries
    key = id(spec)
    hit = cache.get(key)
    if hit is not None:
        cached_spec, cached_tools, tools_version, cached_actions, action_count, found = hit
        offers: _Offers = found
        if (
            cached_spec is spec
            and cached_tools is tools
            and tools_version == tools.version
            and cached_actions is actions
            and action_count == len(actions)
        ):
            return offers
    _check_unresolved(spec, resources)
    offered = offered_tools(spec, resources)
    offers = (offered, tuple(o.definition for o in offered.values()))
    if len(cache) >= 512:  # many short-lived specs: start over rather than grow
        cache.clear()
    cache[key] = (spec, tools, tools.version, actions, len(actions), offers)
    return offers


def check_allowlist(spec: AgentSpec, resources: TurnResources) -> None:
    """Raise `UnknownToolError` when an allowlist entry of `spec` names a tool `resources`
    does not have (what the engine offers `spec` is then worked out and kept)."""
    offers_of(spec, resources)


def _check_unresolved(spec: AgentSpec, resources: TurnResources) -> None:
    """Refuse the allowlist entries of `spec` that name a tool `resources` do not have
    (a typo there would otherwise only show as a model that never calls the tool), with
    the closest name; log the other entries that name nothing: MCP server entries
    (`mcp__server`, `mcp__server__*`) of a server with no tools, actions and agents.
    Once per spec and registry version (see `offers_of`)."""
    registry = resources.tools
    unresolved = [entry for entry in spec.tools if not entry_tool_names(entry, registry)]
    unknown = [entry for entry in unresolved if not _server_entry(entry)]
    if unknown:
        names = registry.names()
        by_lower = {name.lower(): name for name in names}
        suggestions: dict[str, str] = {}
        for entry in unknown:
            name = parse_tool_entry(entry.strip())[0]
            close = difflib.get_close_matches(name, names, n=1) or [
                by_lower[match]
                for match in difflib.get_close_matches(name.lower(), list(by_lower), n=1)
            ]
            if close:
                suggestions[entry] = close[0]
        raise UnknownToolError(spec.id, unknown, suggestions)
    tools = unresolved
    actions = [a for a in spec.actions if a != "*" and resources.actions.get(a) is None]
    agents = [name for name in spec.allowed_subagents if name not in resources.host.agents]
    if tools or actions:
        _logger.warning(
            "agent %s allows what this runtime does not have, so it is not offered: %s",
            spec.id,
            ", ".join([*tools, *actions]),
        )
    if agents:
        _logger.warning(
            "agent %s may summon agents this runtime does not have (yet): %s",
            spec.id,
            ", ".join(agents),
        )


def _server_entry(entry: str) -> bool:
    """Whether `entry` is `mcp__server` or `mcp__server__*`: every tool of an MCP server,
    which may have none."""
    name, specifier = parse_tool_entry(entry.strip())
    parts = name.removesuffix("__*").split("__")
    return specifier is None and len(parts) == 2 and parts[0] == "mcp" and bool(parts[1])
