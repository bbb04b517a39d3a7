"""Asking a person: what a turn hands back when it must wait (`Suspension`), what it is
given to go on (`Resumption`), and the allow rules a person remembered in a session.

The engine does not wait itself: a call that needs a person ends the turn with a
`Suspension` (the step so far, the request event, the continuation state as JSON), which
the runtime stores in one transaction with the run's move to `waiting`. Whoever decides
gives the runtime a `Resumption`, and the engine starts the turn again from the state: the
pending call, the rest of that assistant message's calls, then the model loop with its
counts carried over.

Remembered rules (`remember=True` of a decision) are kept in the session's metadata under
`RULES_KEY` as a list of allowlist entries (see `agentkit.tools` permission rules):
`Bash(git status)` allows that command, `Read(src/app.py)` that path (both matched like
allowlist entries). Any other call (a tool without specifiers, an action, a command or
path holding a wildcard character `*`, `?`, `[`, or one the allowlist syntax cannot match,
such as a chained command) is remembered as its exact input,
`{"tool": "Bash", "input": {...}}`: remembering never widens what a person allowed.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agentkit.events import AgentMessage
from agentkit.messages import Message
from agentkit.tools import Tool, ToolContext, entry_allows

__all__ = [
    "RULES_KEY",
    "RememberedRule",
    "Resumption",
    "RulesLoader",
    "Suspension",
    "allowed_by",
    "new_request_id",
    "remembered",
    "rule_for",
    "rule_text",
    "with_rule",
]

RULES_KEY = "agentkit.permissions"
"""The session metadata key of the remembered allow rules: `{"allow": [rule, ...]}`."""

RememberedRule = str | dict[str, Any]
"""An allowlist entry (`"Bash(git status)"`), or an exact call (`{"tool", "input"}`)."""

RulesLoader = Callable[[], Awaitable[Sequence[RememberedRule]]]
"""Reads the remembered rules of the turn's session (when a call needs consent)."""

_COMMAND_ARGS = ("command",)
_PATH_ARGS = ("file_path", "path", "notebook_path")
_WILDCARDS = frozenset("*?[]")
MAX_RULES = 200
"""Remembered rules a session keeps (the oldest go first)."""


def new_request_id() -> str:
    """A random id for a request to a person."""
    return os.urandom(12).hex()


@dataclass
class Suspension:
    """A turn that waits for a person: what the runtime stores as the run goes `waiting`.

    Attributes:
        request: The `permission_request` or `question` event (emitted already).
        messages: The step's transcript messages not saved yet (the assistant message and
            the results of the calls before the pending one).
        state: The continuation as JSON (counts, usage, which call is pending).
        deadline: When the request ends as denied, if ever.
    """

    request: AgentMessage
    messages: list[Message]
    state: dict[str, Any]
    deadline: float | None = None


@dataclass(frozen=True)
class Resumption:
    """How a waiting turn goes on: its stored state and the decision or answers.

    Attributes:
        state: The continuation stored with the suspension.
        kind: `permission` (then `allow`, `message`, `updated_input`) or `question`
            (then `answers`, or `error` when nobody answered).
    """

    state: dict[str, Any]
    kind: Literal["permission", "question"]
    allow: bool = False
    message: str | None = None
    updated_input: dict[str, Any] | None = None
    answers: Any = None
    error: str | None = None


def _specifier(tool: Tool, arguments: dict[str, Any]) -> str | None:
    if tool.matches is None:
        return None
    for name in (*_COMMAND_ARGS, *_PATH_ARGS):
        value = arguments.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def rule_for(
    tool: Tool | None, name: str, arguments: dict[str, Any], ctx: ToolContext
) -> RememberedRule:
    """The rule that remembers "allow this call" (see the module): `Name(specifier)` when
    the allowlist syntax can say exactly this call, else the exact call."""
    if tool is not None:
        specifier = _specifier(tool, arguments)
        if specifier is not None and not (_WILDCARDS & set(specifier)) and ")" not in specifier:
            rule = f"{name}({specifier})"
            if entry_allows(rule, tool, arguments, ctx):
                return rule
    return {"tool": name, "input": arguments}


def rule_text(rule: RememberedRule) -> str:
    """A rule as one line (for the `permission_decision` event)."""
    if isinstance(rule, str):
        return rule
    return f"{rule.get('tool')} {json.dumps(rule.get('input'), sort_keys=True)}"


def allowed_by(
    rules: Sequence[RememberedRule],
    tool: Tool | None,
    name: str,
    arguments: dict[str, Any],
    ctx: ToolContext,
) -> bool:
    """Whether a remembered rule allows this call."""
    for rule in rules:
        if isinstance(rule, dict):
            if rule.get("tool") == name and rule.get("input") == arguments:
                return True
        elif (
            isinstance(rule, str) and tool is not None and entry_allows(rule, tool, arguments, ctx)
        ):
            return True
    return False


def remembered(metadata: dict[str, Any]) -> list[RememberedRule]:
    """The remembered rules of a session's metadata (malformed entries left out)."""
    kept = metadata.get(RULES_KEY)
    allow = kept.get("allow") if isinstance(kept, dict) else None
    if not isinstance(allow, list):
        return []
    return [rule for rule in allow if isinstance(rule, str | dict)]


def with_rule(metadata: dict[str, Any], rule: RememberedRule) -> dict[str, Any]:
    """The session's metadata with `rule` remembered (once; at most `MAX_RULES`)."""
    rules = [kept for kept in remembered(metadata) if kept != rule]
    rules.append(rule)
    return {**metadata, RULES_KEY: {"allow": rules[-MAX_RULES:]}}
