"""Permission rules: what an allowlist entry such as `Bash(git *)` or `Read(./src/**)` allows.

An allowlist entry is `Name` or `Name(specifier)`. `Name` is any of a tool's names (either
vocabulary). Without a specifier the entry allows every call of the tool. With one, the
tool's `matches` function decides; a tool without `matches` accepts no specifier, so such an
entry allows nothing (fail closed).

Command specifiers (`Bash`, `shell`, `process`): the pattern is matched against the whole
command. `*` matches any run of characters, every other character matches itself, and runs
of blanks count as one space. A pattern ending in ` *` also matches the bare command
(`git *` matches `git`); the legacy form `git:*` means `git *`. A command matches only if
it is one simple command: it must not contain, outside single quotes, any of `;` `&` `|`
`<` `>` `(` `)` `$` or a backtick (so no chaining with `;`, `&&`, `||`, `&`, no pipes, no
redirections, no command or process substitution, no variable expansion), and no newline,
carriage return or NUL anywhere. An unterminated quote never matches. These commands still
run if another entry (or `Bash` alone) allows them; they just never match a pattern.

Path specifiers (`Read`, `Write`, `Edit`, `Glob`, `Grep`, `LS` and their Rho names): the
pattern is a path relative to the working directory (`./` and a leading `/` both mean the
working directory). `*` matches within one path segment, `?` one character of a segment,
`[abc]` a character class, `**` any number of whole segments (zero included), so
`src/**` matches `src` and everything below it. The call's path (the `file_path` or `path`
argument; `.` when omitted) must match both as written (normalised) and after following
links inside the working directory. A class never matches `/` (`[!a]` is one character
of a segment). Matching uses no regular expressions (see `_wildcards`), so no pattern can
make it backtrack exponentially.

MCP entries: `mcp__server__tool` names one tool; `mcp__server` and `mcp__server__*` allow
every tool of that server (use [`entry_tool_names`][agentkit.tools.entry_tool_names] to
list them).

Fetch specifiers (`WebFetch`, `fetch_content`): `domain:example.com` allows that host and
its subdomains.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from agentkit.tools._base import Tool, ToolContext, ToolError, ToolRegistry, parse_tool_entry
from agentkit.tools._sandbox import Sandbox
from agentkit.tools._wildcards import Token, wildcard_match, wildcard_tokens

__all__ = [
    "command_matches",
    "entry_allows",
    "entry_tool_names",
    "is_simple_command",
    "path_matches",
]


def entry_allows(entry: str, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> bool:
    """Whether the allowlist `entry` allows calling `tool` with `args`.

    Args:
        entry: `Name` or `Name(specifier)`.
        tool: The tool being called.
        args: The call's arguments (after schema validation).
        ctx: The call's context (its working directory resolves path specifiers).

    Returns:
        `True` when `entry` names the tool and the specifier (if any) matches the call.
    """
    name, specifier = parse_tool_entry(entry.strip())
    if name not in (tool.name, *tool.aliases):
        server = _mcp_server_entry(name) if specifier is None else None
        return server is not None and tool.name.startswith(f"{server}__")
    if specifier is None:
        return True
    if tool.matches is None:
        return False
    try:
        return tool.matches(specifier.strip(), args, ctx)
    except ToolError:
        return False


def _mcp_server_entry(name: str) -> str | None:
    """`mcp__server` for the entries `mcp__server` and `mcp__server__*`, else `None`."""
    if name.endswith("__*"):
        name = name[:-3]
    parts = name.split("__")
    if len(parts) == 2 and parts[0] == "mcp" and parts[1]:
        return name
    return None


def entry_tool_names(entry: str, registry: ToolRegistry) -> list[str]:
    """The registered names an allowlist entry refers to.

    Usually just the entry's name; `mcp__server` and `mcp__server__*` stand for every tool
    of that MCP server.
    """
    name, specifier = parse_tool_entry(entry.strip())
    server = _mcp_server_entry(name) if specifier is None else None
    if server is not None:
        return [n for n in registry.names() if n.startswith(f"{server}__")]
    return [name] if name in registry else []


# -- commands -------------------------------------------------------------------------

_FORBIDDEN_UNQUOTED = set(";&|<>()$`")
_FORBIDDEN_ANYWHERE = set("\n\r\x00")


def is_simple_command(command: str) -> bool:
    """Whether `command` is one simple command: no chaining, pipes, redirections,
    substitutions or expansions (see the module documentation)."""
    if any(ch in _FORBIDDEN_ANYWHERE for ch in command):
        return False
    quote: str | None = None
    escaped = False
    for ch in command:
        if escaped:
            escaped = False
            continue
        if quote == "'":
            if ch == "'":
                quote = None
            continue
        if ch == "\\":
            escaped = True
            continue
        if quote == '"':
            if ch == '"':
                quote = None
            elif ch in "$`":
                return False
            continue
        if ch in "'\"":
            quote = ch
        elif ch in _FORBIDDEN_UNQUOTED:
            return False
    return quote is None and not escaped


def _normalise_command(command: str) -> str:
    return " ".join(command.split())


@lru_cache(maxsize=256)
def _command_pattern(pattern: str) -> tuple[tuple[Token, ...], tuple[Token, ...] | None]:
    """The wildcard tokens of a command specifier, and of its bare form (`git` for `git *`)."""
    pattern = _normalise_command(pattern)
    if pattern.endswith(":*"):
        pattern = pattern[:-2] + " *"
    bare = wildcard_tokens(pattern[:-2], classes=False) if pattern.endswith(" *") else None
    return wildcard_tokens(pattern, classes=False), bare


def command_matches(pattern: str, command: str) -> bool:
    """Whether `command` is a simple command matching the specifier `pattern`."""
    if not is_simple_command(command):
        return False
    tokens, bare = _command_pattern(pattern)
    command = _normalise_command(command)
    return wildcard_match(tokens, command) or (bare is not None and wildcard_match(bare, command))


def command_matcher(key: str = "command") -> Callable[[str, dict[str, Any], ToolContext], bool]:
    """A `Tool.matches` for tools whose `key` argument is a shell command."""

    def matches(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
        command = args.get(key)
        if command is None:
            # Calls that start nothing (process poll/stop) are not restricted.
            return True
        return isinstance(command, str) and command_matches(specifier, command)

    return matches


# -- paths ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _PathPattern:
    """A path specifier split into segments; `**` segments stay the string `"**"`.

    `open_tail`: the pattern ended in `name/**`, so its last segment may be followed by
    anything (`src/**` matches `src` and everything below it).
    """

    segments: tuple[tuple[Token, ...] | str, ...]
    open_tail: bool


@lru_cache(maxsize=256)
def _path_pattern(pattern: str) -> _PathPattern:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern in ("", "."):
        pattern = "**"
    raw = [s for s in pattern.split("/") if s not in ("", ".")]
    open_tail = len(raw) >= 2 and raw[-1] == "**" and raw[-2] != "**"
    if open_tail:
        raw.pop()
    segments = tuple("**" if s == "**" else wildcard_tokens(s, classes=True) for s in raw)
    return _PathPattern(segments, open_tail)


def path_matches(pattern: str, relative_path: str) -> bool:
    """Whether a normalised path relative to the working directory matches `pattern`.

    Matching runs in time bounded by the pattern's and the path's lengths (no regular
    expression, so no catastrophic backtracking): each segment is matched by
    `wildcard_match`, and `**` is resolved by dynamic programming over (pattern segment,
    path segment) pairs.
    """
    compiled = _path_pattern(pattern)
    segments = compiled.segments
    if not segments:
        return relative_path == ""
    parts = relative_path.split("/")
    n = len(parts)
    last = len(segments) - 1
    # after[j]: whether segments[i + 1:] match parts[j:]; filled from the last segment back.
    after: list[bool] = []
    for i in range(last, -1, -1):
        segment = segments[i]
        row = [False] * n
        for j in range(n - 1, -1, -1):
            if isinstance(segment, str):  # `**`
                if i == last:
                    row[j] = True  # a final `**` after `**` (or alone) matches the rest
                else:
                    row[j] = after[j] or (parts[j] != "" and j + 1 < n and row[j + 1])
            elif i == last:
                fits = compiled.open_tail or j == n - 1
                row[j] = fits and wildcard_match(segment, parts[j])
            else:
                row[j] = j + 1 < n and after[j + 1] and wildcard_match(segment, parts[j])
        after = row
    return after[0]


def path_matcher(*keys: str) -> Callable[[str, dict[str, Any], ToolContext], bool]:
    """A `Tool.matches` for tools whose path is the first present argument of `keys`."""

    def matches(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
        value = next((args[k] for k in keys if args.get(k) is not None), ".")
        if not isinstance(value, str):
            return False
        sandbox = Sandbox(ctx.working_dir)
        written = sandbox.relative(value)
        real = sandbox.real_relative(value)
        return path_matches(specifier, written) and path_matches(specifier, real)

    return matches


# -- URLs -----------------------------------------------------------------------------


def url_matcher(key: str = "url") -> Callable[[str, dict[str, Any], ToolContext], bool]:
    """A `Tool.matches` for `domain:<host>` specifiers on a URL argument."""

    def matches(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
        if not specifier.startswith("domain:"):
            return False
        domain = specifier[len("domain:") :].strip().lower().rstrip(".")
        url = args.get(key)
        if not isinstance(url, str) or not domain:
            return False
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
        return host == domain or host.endswith("." + domain)

    return matches
