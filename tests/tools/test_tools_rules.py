"""Permission rules: `Name` and `Name(specifier)` allowlist entries against real calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentkit.tools import (
    Tool,
    ToolContext,
    command_matches,
    entry_allows,
    is_simple_command,
    path_matches,
)
from support.tools import REGISTRY, make_ctx


def tool(name: str) -> Tool:
    found = REGISTRY.get(name)
    assert found is not None
    return found


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "a.py").write_text("a")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("k")
    os.symlink("../secrets", tmp_path / "src" / "sneaky")
    return make_ctx(tmp_path)


def test_plain_entries_allow_every_call_under_either_name(ctx: ToolContext) -> None:
    bash = tool("Bash")
    for entry in ("Bash", "bash", "shell", " Bash "):
        assert entry_allows(entry, bash, {"command": "rm -rf /"}, ctx)
    assert not entry_allows("Read", bash, {"command": "ls"}, ctx)
    assert not entry_allows("BashX", bash, {"command": "ls"}, ctx)


@pytest.mark.parametrize(
    ("pattern", "command", "allowed"),
    [
        ("git *", "git status", True),
        ("git *", "git", True),
        ("git *", "git   log   --oneline", True),
        ("git *", "git commit -m 'fix: a; b | c $(x)'", True),
        ("git *", "gitk", False),
        ("git:*", "git push", True),
        ("git status", "git status", True),
        ("git status", "git status --short", False),
        ("npm run *", "npm run test", True),
        ("npm run *", "npm install", False),
        ("* --version", "python --version", True),
        ("git *", "git status; rm x", False),
        ("git *", 'git log "$(id)"', False),
    ],
)
def test_command_specifiers(pattern: str, command: str, allowed: bool, ctx: ToolContext) -> None:
    assert command_matches(pattern, command) is allowed
    assert entry_allows(f"Bash({pattern})", tool("Bash"), {"command": command}, ctx) is allowed
    assert entry_allows(f"bash({pattern})", tool("bash"), {"command": command}, ctx) is allowed


def test_simple_command_scanner() -> None:
    assert is_simple_command("echo 'a;b' \"c d\" e\\;f")
    assert not is_simple_command('echo "unterminated')
    assert not is_simple_command("echo trailing\\")
    assert not is_simple_command("echo a\x00b")


def test_process_rules_restrict_what_is_started(ctx: ToolContext) -> None:
    process = tool("process")
    entry = "process(npm run *)"
    assert entry_allows(entry, process, {"action": "start", "command": "npm run dev"}, ctx)
    assert not entry_allows(entry, process, {"action": "start", "command": "sh"}, ctx)
    assert entry_allows(entry, process, {"action": "poll", "id": "p1"}, ctx)


@pytest.mark.parametrize(
    ("pattern", "path", "allowed"),
    [
        ("./src/**", "src", True),
        ("./src/**", "src/pkg/a.py", True),
        ("./src/**", "./src/pkg/../pkg/a.py", True),
        ("./src/**", "secrets/key", False),
        ("./src/**", "srcx/a.py", False),
        ("./src/**", "src/sneaky/key", False),  # a link inside src leading out of it
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/pkg/a.py", False),
        ("/src/**/*.py", "src/pkg/a.py", True),
        ("**/*.py", "top.py", True),
        ("src/[ab].py", "src/b.py", True),
        ("src/[!ab].py", "src/b.py", False),
        ("src/?.py", "src/a.py", True),
        ("./src/**", "../outside", False),
    ],
)
def test_path_specifiers(pattern: str, path: str, allowed: bool, ctx: ToolContext) -> None:
    for name in ("Read", "read_file", "Write", "Edit"):
        args = {"file_path": path, "content": "", "old_string": "a", "new_string": "b"}
        assert entry_allows(f"{name}({pattern})", tool(name), args, ctx) is allowed, name


def test_path_specifiers_on_folder_tools(ctx: ToolContext) -> None:
    for name in ("Glob", "Grep", "LS", "glob", "grep", "list_dir"):
        assert entry_allows(f"{name}(./src/**)", tool(name), {"pattern": "*", "path": "src"}, ctx)
        # No path means the working directory, which is not inside src.
        assert not entry_allows(f"{name}(./src/**)", tool(name), {"pattern": "*"}, ctx)


def test_path_matching_semantics() -> None:
    assert path_matches("**", ".")
    assert path_matches("docs/**", "docs")
    assert not path_matches("docs/*", "docs")
    assert path_matches("a/**/b", "a/b") and path_matches("a/**/b", "a/x/y/b")


def test_fetch_domain_specifiers(ctx: ToolContext) -> None:
    fetch = tool("WebFetch")
    entry = "WebFetch(domain:example.com)"
    assert entry_allows(entry, fetch, {"url": "https://example.com/a"}, ctx)
    assert entry_allows(entry, fetch, {"url": "https://docs.example.com/a"}, ctx)
    assert not entry_allows(entry, fetch, {"url": "https://example.com.evil.net/"}, ctx)
    assert not entry_allows(entry, fetch, {"url": "https://notexample.com/"}, ctx)
    assert not entry_allows("WebFetch(example.com)", fetch, {"url": "https://example.com"}, ctx)
    other = "fetch_content(domain:example.com)"
    assert entry_allows(other, fetch, {"url": "http://example.com"}, ctx)


def test_a_specifier_on_a_tool_without_matcher_allows_nothing(ctx: ToolContext) -> None:
    search = tool("WebSearch")
    assert entry_allows("WebSearch", search, {"query": "x"}, ctx)
    assert not entry_allows("WebSearch(anything)", search, {"query": "x"}, ctx)


# -- commands are split into words as bash splits them --------

import subprocess  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def bash_words(command: str) -> list[str]:
    """The words real bash makes of `command` (after quote removal and expansions)."""
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", "set -f; printf '%s\\0' _ " + command],
        capture_output=True,
        cwd="/",
        check=False,
        timeout=10,
    )
    assert done.returncode == 0, (command, done.stderr)
    return done.stdout.decode("utf-8", "surrogateescape").split("\0")[1:-1]


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf victim \v--version",
        "rm -rf victim \x1c--version",
        "rm -rf victim \x1f--version",
        "rm -rf victim\u00a0--version",
        "rm -rf victim\u2003--version",
        "rm -rf victim\u3000--version",
        "rm -rf victim\x85--version",
        "rm -rf victim\u200b --version",
        "rm -rf victim\\ --version",
        "rm -rf victim #x --version",
        "rm -rf victim\f--version",
    ],
)
def test_command_rules_split_words_only_where_bash_does(command: str) -> None:
    """`Bash(* --version)` allows none of these: Python's `str.split()` separates words at
    `\\v`, `\\x1c`, U+00A0... where bash does not (or bash sees a comment or an escaped
    blank), so a rule matched on those words would let bash run `rm -rf victim` with one more
    argument."""
    assert not command_matches("* --version", command)
    assert not is_simple_command(command) or command.endswith("\\ --version")


def test_quoted_blanks_and_control_characters_stay_inside_their_word() -> None:
    assert command_matches("echo *", "echo 'a\vb' \"c\u00a0d\"")
    assert command_matches("git commit -m *", 'git commit -m "fix the\tbug"')
    assert not command_matches("echo a b", "echo 'a b'")
    assert not command_matches("echo a b", "echo a\\ b")
    assert command_matches("echo 'a b'", "echo 'a b'")


def test_brace_expansion_never_matches_but_a_literal_brace_does() -> None:
    assert not command_matches("echo *", "echo {a,--version}")
    assert not command_matches("echo *", "echo {1..3}")
    assert command_matches("git *", "git stash show stash@{0}")


@pytest.mark.parametrize(
    "command",
    [
        "git -c alias.x=!touch${IFS}pwned x",
        "git -c core.sshCommand=id fetch origin",
        "git -c core.fsmonitor=id status",
        "git --config-env=core.pager=EDITOR log",
        "git --config-env core.pager=EDITOR log",
        "git --exec-path=/tmp/evil status",
        "git -C . -c core.fsmonitor=id status",
        "git --git-dir .git -c core.fsmonitor=id status",
        "git fetch --upload-pack=id origin",
        "git fetch --upload-pa=id origin",
        "git ls-remote --upload-pack id origin",
        "git clone -u id origin copy",
        "git clone -qu id origin copy",
        "git push --receive-pack=id origin",
        "git push --exec=id origin",
        "git rebase --exec id HEAD~1",
        "GIT_TRACE=1 git -c core.fsmonitor=id status",
        "/usr/bin/git -c core.fsmonitor=id status",
        "git '-c' core.fsmonitor=id status",
    ],
)
def test_git_options_that_run_programs_are_refused_under_git_star(command: str) -> None:
    assert not command_matches("git *", command.replace("${IFS}", " "))
    assert not command_matches("* status", command)


def test_git_options_are_allowed_when_the_rule_names_them() -> None:
    assert command_matches("git -c user.name=x commit *", "git -c user.name=x commit -m y")
    assert command_matches("git fetch --upload-pack=* *", "git fetch --upload-pack=x origin")


def test_ordinary_git_commands_still_match() -> None:
    for command in (
        "git status",
        "git push -u origin main",
        "git grep -c needle",
        "git commit -c HEAD",
        "git log --color --oneline",
        "git checkout -- file",
        "git add -u",
    ):
        assert command_matches("git *", command), command


_WORDS = st.sampled_from(["rm", "-rf", "victim", "--version", "git", "status", "x"])
_ODD = st.sampled_from(
    ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\xa0", "\u1680", "\u2000",
     "\u2003", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff",
     "\x7f", "\x01", "\x1b", "'", '"', "\\", "#", "=", ",", "{", "}", "..", "''", '""',
     "\\ ", "' '", '" "']
)
_PIECES = st.one_of(_WORDS, _WORDS, _WORDS, _ODD, st.text(min_size=1, max_size=2))
_SEPARATORS = st.sampled_from([" ", " ", " ", "  ", "\t", "\v", "\xa0", "\x1c", "\u3000", ""])
_COMMANDS = st.lists(
    st.tuples(st.lists(_PIECES, min_size=1, max_size=2).map("".join), _SEPARATORS), max_size=6
).map(lambda parts: "".join(word + sep for word, sep in parts))
"""Commands built of the rules' words, odd characters and separators bash does or does not
split on, so that many of them match a rule."""
_PATTERNS = st.sampled_from(
    [
        (("rm", "-rf", "victim"), False, ()),
        (("git", "status"), False, ()),
        ((), True, ("--version",)),
        (("git",), True, ()),
        (("rm",), True, ("--version",)),
        ((), True, ("victim", "--version")),
    ]
)


def _fits(words: list[str], head: tuple[str, ...], star: bool, tail: tuple[str, ...]) -> bool:
    if not star:
        return words == list(head)
    if len(words) < len(head) + len(tail) or words[: len(head)] != list(head):
        return False
    return not tail or words[len(words) - len(tail) :] == list(tail)


_NOISE = st.one_of(st.just(""), st.just(""), st.just(""), _ODD, st.text(max_size=2))


@st.composite
def _near_commands(draw: st.DrawFn, words: list[str]) -> str:
    """`words` with random noise around each word and random separators between them."""
    out = []
    for word in words:
        out.append(draw(_NOISE) + word + draw(_NOISE) + draw(_SEPARATORS))
    return "".join(out)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), shape=_PATTERNS)
def test_property_an_allowed_command_has_the_rules_bash_words(
    data: st.DataObject, shape: tuple[tuple[str, ...], bool, tuple[str, ...]]
) -> None:
    """Random commands (control characters, Unicode whitespace, quotes, escapes) near the
    rule's words are never allowed unless real bash splits them into words the rule
    describes."""
    head, star, tail = shape
    pattern = " ".join([*head, *(["*"] if star else []), *tail])
    filler = data.draw(st.lists(_WORDS, max_size=2)) if star else []
    command = data.draw(_near_commands([*head, *filler, *tail]))
    if "\x00" in command or not command_matches(pattern, command):
        return
    words = bash_words(command)
    assert _fits(words, head, star, tail), (pattern, command, words)


@settings(max_examples=150, deadline=None)
@given(command=_COMMANDS)
def test_property_words_agree_with_bash_when_the_command_is_simple(command: str) -> None:
    from agentkit.tools._rules import _bash_words

    words = _bash_words(command)
    if words is None or "~" in command:  # tilde expansion is bash's, not a split
        return
    assert [w.value for w in words] == bash_words(command), command


@pytest.mark.parametrize(
    "command",
    [
        'rm victim "\\"; rm x; \\"" --version',  # `\"` ends nothing in PowerShell: `;` splits
        "echo a\\; rm x --version",  # a backslash escapes nothing in PowerShell
        "git -C,.,-c,alias.x=!cmd,x --version",  # an array: each item is an argument
        "rm victim \u2019; rm x; \u2018 --version",  # typographic quotes are quotes there
        "echo @args --version",
        "echo {rm x} --version",
        "echo %PATH% --version",
        "echo a\u2013b --version",
    ],
)
def test_powershell_rules_refuse_what_powershell_splits_differently(command: str) -> None:
    assert not command_matches("echo *", command, shell="powershell")
    assert not command_matches("rm victim *", command, shell="powershell")
    assert not command_matches("git *", command, shell="powershell")


def test_powershell_rules_still_match_plain_commands(ctx: ToolContext) -> None:
    for command in ("git status", "git log --oneline", "dir C:\\Users\\me", "echo 'a b; c'"):
        assert command_matches("*", command, shell="powershell"), command
    assert not command_matches("dir C:\\Users *", "dir C:\\Users\\ me", shell="powershell")
    assert command_matches("dir *", "dir C:\\Users\\ me", shell="powershell")
    powershell = REGISTRY.get("powershell") or __import__(
        "agentkit.tools", fromlist=["powershell_tool"]
    ).powershell_tool()
    args = {"command": 'echo "x\\"; rm y; \\""'}
    assert not entry_allows("powershell(echo *)", powershell, args, ctx)
    assert entry_allows("Bash(echo *)", tool("Bash"), args, ctx)  # bash reads one word
