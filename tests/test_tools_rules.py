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
from tools_support import REGISTRY, make_ctx


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
