"""Permission rules: what an allowlist entry such as `Bash(git *)` or `Read(./src/**)` allows.

An allowlist entry is `Name` or `Name(specifier)`. `Name` is any of a tool's names (either
vocabulary). Without a specifier the entry allows every call of the tool. With one, the
tool's `matches` function decides; a tool without `matches` accepts no specifier, so such an
entry allows nothing (fail closed).

Command specifiers (`Bash`, `shell`, `process`): pattern and command are both split into
words exactly as bash splits them: only space and tab separate words outside quotes, and a
quoted or backslash-escaped blank stays inside its word. The words are then compared as
written (quotes kept): `*` matches any run of characters (word boundaries included), every
other character matches itself, and a space of the pattern matches one word boundary of
the command. A pattern ending in ` *` also matches the bare command (`git *` matches
`git`); the legacy form `git:*` means `git *`. A command matches only if it is one simple
command: it must not contain, outside single quotes, any of `;` `&` `|` `<` `>` `(` `)` `$`
or a backtick (so no chaining, pipes, redirections, substitutions or expansions), no brace
expansion (`{a,b}`), no comment (`#` starting a word), no newline, carriage return or NUL
anywhere, and outside quotes no other control character and no whitespace but space and
tab (`\v`, U+00A0 and the like are word characters to bash but separators to a reader).
An unterminated quote never matches. These commands still run if another entry (or `Bash`
alone) allows them; they just never match a pattern.

The `powershell` tool's rules accept less, since PowerShell splits and quotes differently:
only printable ASCII (PowerShell reads typographic quotes and dashes as its own), no double
quotes, no `,` (an array: each item becomes an argument), `{` `}` or `@` outside single
quotes, and a backslash is an ordinary character.

A matched `git` command must not use `-c`, `--config-env` or `--exec-path` before its
subcommand, nor `--upload-pack` (`-u` of `clone` and `ls-remote`), `--receive-pack` or
`--exec` (or an abbreviation) after it, unless the pattern names that option: each makes git
run a program named in the command. Configuration git reads from files (`core.fsmonitor`,
`core.sshCommand`, aliases, hooks) still runs programs; see docs/security.md.

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

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal
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

_FORBIDDEN_UNQUOTED = frozenset(";&|<>()$`")
_SEP = "\x00"
"""Stands for a word boundary in the matched form; a NUL never gets this far in a command."""
_GIT_GLOBAL_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env",
     "--attr-source"}
)
"""git's options before the subcommand that take the next word as their value."""
_GIT_GLOBAL_REFUSED = ("-c", "--config-env", "--exec-path")
"""Global git options that make git run a program named in the command itself."""
_GIT_ANYWHERE_REFUSED = ("--upload-pack", "--receive-pack", "--exec")
"""Subcommand options naming a program for git to run (git accepts unambiguous prefixes)."""
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_GIT_SHORT_UPLOAD_PACK = frozenset({"clone", "ls-remote"})
"""Subcommands whose `-u <program>` is `--upload-pack`."""


Shell = Literal["bash", "powershell"]
"""Whose word splitting a command rule follows."""


@dataclass(frozen=True)
class _Word:
    """One word as bash splits it: `raw` as written (quotes kept), `value` as passed on."""

    raw: str
    value: str


def _unsafe_char(ch: str) -> bool:
    """A character bash keeps inside an unquoted word but a reader (or Python's
    `str.split`) may take for a separator or not see at all: control characters, every
    whitespace but space and tab, and invisible format characters."""
    if ch in " \t":
        return False
    return ch.isspace() or unicodedata.category(ch)[0] in ("C", "Z")


_POWERSHELL_UNQUOTED = frozenset(',{}@"%^')
"""Characters PowerShell (or `cmd`, the fallback on Windows) gives a meaning bash does not
(arrays, script blocks, splatting, double quotes whose escapes differ, `%VAR%`, `^`
escapes): refused outside single quotes for `powershell`."""


def _bash_words(command: str, *, powershell: bool = False) -> list[_Word] | None:
    """`command` split into words exactly as bash splits one simple command.

    With `powershell`, only what both shells split alike is accepted: printable ASCII, no
    double quotes, no `,` `{` `}` `@` outside single quotes, and a backslash is an ordinary
    character (PowerShell escapes with the backtick, which is refused).

    Only space and tab separate words outside quotes (a newline would end the command, so
    it is refused with every other control character). Quotes and backslashes are
    removed as bash removes them. `None` when the command is not one simple command this
    matcher can reason about: an operator or expansion outside single quotes, an unsafe
    character outside quotes, a comment, a brace expansion, or an unterminated quote.
    """
    if any(ch in command for ch in "\n\r\x00"):
        return None
    if powershell and not all(" " <= ch <= "~" or ch == "\t" for ch in command):
        return None  # PowerShell also reads typographic quotes and dashes as its own
    words: list[_Word] = []
    raw: list[str] = []
    value: list[str] = []
    in_word = False
    brace = False  # an unquoted `{` in this word: a later `,` or `..` makes it an expansion
    i, n = 0, len(command)
    while i < n:
        ch = command[i]
        if ch in " \t":
            if in_word:
                words.append(_Word("".join(raw), "".join(value)))
                raw, value, in_word, brace = [], [], False, False
            i += 1
            continue
        if not in_word and ch == "#":
            return None  # bash ignores the rest of the line: a rule would see words bash skips
        in_word = True
        if ch == "\\" and not powershell:
            if i + 1 >= n or _unsafe_char(command[i + 1]):
                return None
            raw.append(command[i : i + 2])
            value.append(command[i + 1])
            i += 2
        elif ch == "'":
            end = command.find("'", i + 1)
            if end < 0:
                return None
            raw.append(command[i : end + 1])
            value.append(command[i + 1 : end])
            i = end + 1
        elif ch == '"':
            if powershell:
                return None  # its escapes (backtick, `""`) differ from bash's
            j = i + 1
            while j < n and command[j] != '"':
                c = command[j]
                if c in "$`":
                    return None
                if c == "\\":
                    if j + 1 >= n:
                        return None
                    if command[j + 1] in '"\\':
                        value.append(command[j + 1])
                        j += 2
                        continue
                value.append(c)
                j += 1
            if j >= n:
                return None
            raw.append(command[i : j + 1])
            i = j + 1
        else:
            if ch in _FORBIDDEN_UNQUOTED or _unsafe_char(ch):
                return None
            if powershell and ch in _POWERSHELL_UNQUOTED:
                return None
            if ch == "{":
                brace = True
            elif brace and (ch == "," or command.startswith("..", i)):
                return None  # `{a,b}` and `{1..3}` become several words
            raw.append(ch)
            value.append(ch)
            i += 1
    if in_word:
        words.append(_Word("".join(raw), "".join(value)))
    return words


def is_simple_command(command: str, *, shell: Shell = "bash") -> bool:
    """Whether `command` is one simple command whose words bash splits as this module does:
    no chaining, pipes, redirections, substitutions, expansions, comments, brace expansion,
    control characters or non-ASCII whitespace outside quotes (see the module documentation)."""
    return _bash_words(command, powershell=shell == "powershell") is not None


@dataclass(frozen=True)
class _CommandPattern:
    tokens: tuple[Token, ...]
    bare: tuple[Token, ...] | None
    words: tuple[str, ...]


@lru_cache(maxsize=256)
def _command_pattern(pattern: str, shell: Shell = "bash") -> _CommandPattern | None:
    """The wildcard tokens of a command specifier (words joined by a boundary mark), and of
    its bare form (`git` for `git *`); `None` for a pattern no command can match."""
    pattern = pattern.strip(" \t")
    if pattern.endswith(":*"):
        pattern = pattern[:-2] + " *"
    words = _bash_words(pattern, powershell=shell == "powershell")
    if not words:
        return None
    raw = [w.raw for w in words]
    tokens = wildcard_tokens(_SEP.join(raw), classes=False)
    bare = None
    if len(raw) > 1 and raw[-1] == "*":
        bare = wildcard_tokens(_SEP.join(raw[:-1]), classes=False)
    return _CommandPattern(tokens, bare, tuple(raw))


def command_matches(pattern: str, command: str, *, shell: Shell = "bash") -> bool:
    """Whether `command` is a simple command matching the specifier `pattern`.

    Both are split into words as bash splits them; a space in the pattern matches only a
    word boundary of the command (never a quoted or escaped blank, nor any other kind of
    whitespace), and the words are compared as written. A matched `git` command must not
    use an option that makes git run another program unless the pattern names it.
    """
    compiled = _command_pattern(pattern, shell)
    words = _bash_words(command, powershell=shell == "powershell")
    if compiled is None or not words:
        return False
    text = _SEP.join(w.raw for w in words)
    if not (
        wildcard_match(compiled.tokens, text)
        or (compiled.bare is not None and wildcard_match(compiled.bare, text))
    ):
        return False
    return not _git_escape(words, compiled.words)


def _git_escape(words: list[_Word], pattern_words: tuple[str, ...]) -> str | None:
    """The option of a `git` command that runs a program of the caller's choosing (`-c
    alias.x=!cmd`, `--upload-pack=cmd`, ...) and that the pattern does not name, or `None`."""
    values = [w.value for w in words]
    while values and _ASSIGNMENT.match(values[0]):
        values.pop(0)  # `VAR=value git ...` runs git too
    if not values or values[0].rsplit("/", 1)[-1] not in ("git", "git.exe"):
        return None

    def named(option: str) -> bool:
        return any(w == option or w.startswith(option + "=") for w in pattern_words)

    values = values[1:]
    subcommand = None
    i = 0
    while i < len(values):  # the global options, up to the subcommand
        option = values[i]
        if not option.startswith("-"):
            subcommand = option
            break
        for refused in _GIT_GLOBAL_REFUSED:
            if option.startswith(refused) and not named(refused):
                return refused
        i += 2 if option in _GIT_GLOBAL_WITH_VALUE else 1
    for option in values[i + 1 :]:
        if option == "--":
            break
        name = option.split("=", 1)[0]
        for refused in _GIT_ANYWHERE_REFUSED:
            # git takes any unambiguous prefix of a long option (`--upl=cmd`)
            if len(name) > 3 and refused.startswith(name) and not named(refused):
                return refused
        short = option.startswith("-") and not option.startswith("--")
        if (
            subcommand in _GIT_SHORT_UPLOAD_PACK
            and short
            and "u" in option[1:]
            and not (named("-u") or named("--upload-pack"))
        ):
            return "--upload-pack"
    return None


def command_matcher(
    key: str = "command", shell: Shell = "bash"
) -> Callable[[str, dict[str, Any], ToolContext], bool]:
    """A `Tool.matches` for tools whose `key` argument is a `shell` command."""

    def matches(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
        command = args.get(key)
        if command is None:
            # Calls that start nothing (process poll/stop) are not restricted.
            return True
        return isinstance(command, str) and command_matches(specifier, command, shell=shell)

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


def url_allowed(specifier: str, url: str) -> bool:
    """Whether a `domain:<host>` specifier allows `url` (the host or a subdomain of it)."""
    if not specifier.startswith("domain:"):
        return False
    domain = specifier[len("domain:") :].strip().lower().rstrip(".")
    if not domain:
        return False
    try:
        host = (urlsplit(url).hostname or "").lower().rstrip(".")
    except ValueError:
        return False
    return host == domain or host.endswith("." + domain)


def url_matcher(key: str = "url") -> Callable[[str, dict[str, Any], ToolContext], bool]:
    """A `Tool.matches` for `domain:<host>` specifiers on a URL argument."""

    def matches(specifier: str, args: dict[str, Any], ctx: ToolContext) -> bool:
        url = args.get(key)
        return isinstance(url, str) and url_allowed(specifier, url)

    return matches


def call_restrictions(names: tuple[str, ...], ctx: ToolContext) -> tuple[str, ...] | None:
    """The specifiers of the calling agent's allowlist entries that restrict the tool called
    `names`, for a tool that must apply them again to what it really touches (a redirect,
    the file a path leads to); `None` when nothing restricts the call (no agent, or an entry
    naming the tool without a specifier).

    The engine checks the call's arguments before the tool runs; a tool that follows a
    redirect or a link decides again with these on what it actually reaches.
    """
    spec = ctx.spec
    if spec is None:
        return None
    found: list[str] = []
    for entry in spec.tools:
        name, specifier = parse_tool_entry(entry.strip())
        if name not in names:
            continue
        if specifier is None:
            return None
        found.append(specifier.strip())
    return tuple(found) or None
