"""File tools on real files, called under both vocabularies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from agentkit.tools import (
    CLAUDE_TOOL_NAMES,
    RHO_CAPABILITIES,
    ToolError,
    builtin_tools,
)
from agentkit.tools._files import READ_DEFAULT_LINES
from support.tools import REGISTRY, call, call_error, make_ctx

PAIRS = [
    ("Read", "read_file"),
    ("Write", "write"),
    ("Edit", "edit"),
    ("Glob", "glob"),
    ("Grep", "grep"),
    ("LS", "list_dir"),
    ("Bash", "bash"),
    ("WebFetch", "fetch_content"),
    ("WebSearch", "web_search"),
    ("AskUserQuestion", "questionnaire"),
]


@pytest.mark.parametrize(("claude", "rho"), PAIRS)
def test_each_capability_is_one_tool_under_both_names(claude: str, rho: str) -> None:
    assert REGISTRY.get(claude) is REGISTRY.get(rho) is not None


def test_vocabulary_registries_hold_only_their_own_names() -> None:
    claude = builtin_tools("claude")
    rho = builtin_tools("rho")
    assert set(claude.names()) == set(CLAUDE_TOOL_NAMES)
    assert "Read" not in rho and "read_file" in rho and "shell" in rho
    assert set(rho.names()) <= set(RHO_CAPABILITIES)
    assert {"skill", "rho"}.isdisjoint(rho.names())  # extension capabilities: host-supplied
    assert rho.get("shell") is rho.get("bash")
    read = rho.get("read_file")
    assert read is not None and read.name == "read_file" and read.aliases == ()


def test_effects_and_schemas() -> None:
    effects = {name: REGISTRY.get(name).effect for name, _ in PAIRS}  # type: ignore[union-attr]
    assert effects["Read"] == effects["Glob"] == effects["Grep"] == effects["LS"] == "read"
    assert effects["Write"] == effects["Edit"] == "edit"
    assert effects["Bash"] == "execute"
    assert effects["WebFetch"] == "read"
    process = REGISTRY.get("process")
    assert process is not None and process.effect == "execute"
    for name in REGISTRY.names():
        tool = REGISTRY.get(name)
        assert tool is not None and tool.input_schema["type"] == "object" and tool.description
        Draft202012Validator.check_schema(tool.input_schema)


@pytest.mark.anyio
@pytest.mark.parametrize(("write", "read"), [("Write", "Read"), ("write", "read_file")])
async def test_write_creates_parents_and_read_numbers_lines(
    tmp_path: Path, write: str, read: str
) -> None:
    ctx = make_ctx(tmp_path)
    result = await call(REGISTRY, write, ctx, file_path="a/b/notes.txt", content="one\ntwo\n")
    assert result == "Wrote 8 bytes to a/b/notes.txt"
    assert (tmp_path / "a" / "b" / "notes.txt").read_text() == "one\ntwo\n"
    text = await call(REGISTRY, read, ctx, file_path="a/b/notes.txt")
    assert text == "     1\tone\n     2\ttwo"
    absolute = await call(REGISTRY, read, ctx, file_path=str(tmp_path / "a/b/notes.txt"))
    assert absolute == text


@pytest.mark.anyio
async def test_read_line_ranges_and_continuation_hint(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    ctx = make_ctx(tmp_path)
    ranged = await call(REGISTRY, "Read", ctx, file_path="long.txt", offset=10, limit=3)
    assert ranged.splitlines()[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "read on with offset=13" in ranged
    default = await call(REGISTRY, "Read", ctx, file_path="long.txt")
    assert f"line {READ_DEFAULT_LINES}\n" in default and "line 2001\n" not in default
    read = REGISTRY.get("Read")
    assert read is not None
    message = await call_error(read, ctx, file_path="long.txt", offset=5000)
    assert "3000 lines" in message


@pytest.mark.anyio
async def test_read_refuses_binary_missing_and_folders(tmp_path: Path) -> None:
    (tmp_path / "image.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    (tmp_path / "folder").mkdir()
    read = REGISTRY.get("Read")
    assert read is not None
    ctx = make_ctx(tmp_path)
    assert "binary" in await call_error(read, ctx, file_path="image.bin")
    assert "no such file" in await call_error(read, ctx, file_path="missing.txt")
    assert "folder" in await call_error(read, ctx, file_path="folder")
    assert "working directory" in await call_error(read, ctx, file_path=".")


@pytest.mark.anyio
async def test_read_caps_very_long_lines(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("x" * 10_000 + "\n")
    text = await call(REGISTRY, "Read", make_ctx(tmp_path), file_path="wide.txt")
    assert "[line truncated]" in text and len(text) < 2100


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Edit", "edit"])
async def test_edit_replaces_exactly_one_match(tmp_path: Path, name: str) -> None:
    (tmp_path / "code.py").write_text("a = 1\nb = 2\nc = 1\n")
    ctx = make_ctx(tmp_path)
    edit = REGISTRY.get(name)
    assert edit is not None
    await call(REGISTRY, name, ctx, file_path="code.py", old_string="b = 2", new_string="b = 3")
    assert (tmp_path / "code.py").read_text() == "a = 1\nb = 3\nc = 1\n"
    zero = await call_error(edit, ctx, file_path="code.py", old_string="zzz", new_string="y")
    assert "not found" in zero
    several = await call_error(edit, ctx, file_path="code.py", old_string="= 1", new_string="= 9")
    assert "2 times" in several
    assert (tmp_path / "code.py").read_text() == "a = 1\nb = 3\nc = 1\n"
    args = {"file_path": "code.py", "old_string": "= 1", "new_string": "= 9"}
    done = await call(REGISTRY, name, ctx, **args, replace_all=True)
    assert done == "Replaced 2 occurrence(s) in code.py"
    assert (tmp_path / "code.py").read_text() == "a = 9\nb = 3\nc = 9\n"
    same = await call_error(edit, ctx, file_path="code.py", old_string="a", new_string="a")
    assert "same" in same


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Glob", "glob"])
async def test_glob_matches_paths_newest_first(tmp_path: Path, name: str) -> None:
    for rel in ("src/a.py", "src/pkg/b.py", "src/pkg/c.txt", "top.py", ".git/x.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    os.utime(tmp_path / "src/a.py", (1, 1))
    ctx = make_ctx(tmp_path)
    found = (await call(REGISTRY, name, ctx, pattern="**/*.py")).splitlines()
    assert sorted(found) == ["src/a.py", "src/pkg/b.py", "top.py"]
    assert found[-1] == "src/a.py"  # oldest last
    assert (await call(REGISTRY, name, ctx, pattern="*.py")).splitlines() == ["top.py"]
    in_pkg = await call(REGISTRY, name, ctx, pattern="*.py", path="src/pkg")
    assert in_pkg == "src/pkg/b.py"
    assert (await call(REGISTRY, name, ctx, pattern="*.rs")).startswith("No files")
    with pytest.raises(ToolError):
        await call(REGISTRY, name, ctx, pattern="../*")


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["Grep", "grep"])
async def test_grep_modes_filters_and_cap(tmp_path: Path, name: str) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    (tmp_path / "src" / "b.txt").write_text("alpha beta\nALPHA\n")
    (tmp_path / "blob.bin").write_bytes(b"alpha\x00\x00")
    (tmp_path / "many.txt").write_text("hit\n" * 50)
    ctx = make_ctx(tmp_path)
    files = await call(REGISTRY, name, ctx, pattern="alpha")
    assert files.splitlines() == ["src/a.py", "src/b.txt"]
    content = await call(REGISTRY, name, ctx, pattern=r"def \w+", output_mode="content")
    assert content == "src/a.py:1:def alpha():"
    count = await call(
        REGISTRY, name, ctx, pattern="alpha", output_mode="count", case_insensitive=True
    )
    assert count.splitlines() == ["src/a.py:1", "src/b.txt:2"]
    only_py = await call(REGISTRY, name, ctx, pattern="alpha", glob="*.py")
    assert only_py == "src/a.py"
    one_file = await call(REGISTRY, name, ctx, pattern="beta", path="src/b.txt")
    assert one_file == "src/b.txt"
    capped = await call(REGISTRY, name, ctx, pattern="hit", output_mode="content", max_results=5)
    lines = capped.splitlines()
    assert lines[:5] == [f"many.txt:{i}:hit" for i in range(1, 6)]
    assert lines[5] == "[results capped at 5; 45 more]"
    grep = REGISTRY.get(name)
    assert grep is not None
    assert "invalid regular expression" in await call_error(grep, ctx, pattern="(")


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["LS", "list_dir"])
async def test_list_dir(tmp_path: Path, name: str) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("x")
    (tmp_path / "file.txt").write_text("f")
    os.symlink("file.txt", tmp_path / "alias")
    ctx = make_ctx(tmp_path)
    assert (await call(REGISTRY, name, ctx)).splitlines() == ["alias@", "file.txt", "sub/"]
    assert await call(REGISTRY, name, ctx, path="sub") == "x.txt"
    tool = REGISTRY.get(name)
    assert tool is not None
    assert "no such folder" in await call_error(tool, ctx, path="nope")


@pytest.mark.anyio
async def test_links_inside_the_working_directory_work(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "data.txt").write_text("inside\n")
    os.symlink("real", tmp_path / "shortcut")
    os.symlink("real/data.txt", tmp_path / "data_link")
    ctx = make_ctx(tmp_path)
    assert "inside" in await call(REGISTRY, "Read", ctx, file_path="shortcut/data.txt")
    assert "inside" in await call(REGISTRY, "Read", ctx, file_path="data_link")
    await call(REGISTRY, "Write", ctx, file_path="shortcut/new.txt", content="via link")
    assert (tmp_path / "real" / "new.txt").read_text() == "via link"


# -- path rules decided on the file really opened; deep trees ----

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import threading  # noqa: E402
from collections.abc import Iterator  # noqa: E402

from agentkit.spec import AgentSpec  # noqa: E402
from agentkit.tools import ToolContext, entry_allows  # noqa: E402
from agentkit.tools._files import WALK_MAX_DEPTH  # noqa: E402


def ruled(tmp_path: Path, *entries: str) -> ToolContext:
    spec = AgentSpec(id="t:files", description="d", system_prompt="p", tools=entries)
    return dataclasses.replace(make_ctx(tmp_path), spec=spec)


class Swapper:
    """A thread swapping `src/x` between a regular file and a link to `../secrets/key`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self) -> None:
        target = self.root / "src" / "x"
        source = self.root / "public"
        source.write_text("public")
        plain = self.root / "src" / ".plain"
        link = self.root / "src" / ".link"
        while not self.stop.is_set():
            # both states are made with one quick call, so each holds about half the time
            os.link(source, plain)
            os.replace(plain, target)
            os.symlink("../secrets/key", link)
            os.replace(link, target)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def swap_tree(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "x").write_text("public")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("SECRET")


@pytest.mark.anyio
async def test_read_rule_holds_while_a_link_is_swapped_in(tmp_path: Path) -> None:
    """`Read(./src/**)` never returns the secret behind a link swapped in while it reads: a
    rule checked on the name, with the file opened separately, leaks it in about 55 of
    3,000 reads; here none of them does."""
    swap_tree(tmp_path)
    entry = "Read(./src/**)"
    ctx = ruled(tmp_path, entry)
    read = REGISTRY.get("Read")
    assert read is not None
    leaks = refused = 0
    with Swapper(tmp_path):
        for _ in range(3000):
            args = {"file_path": "src/x"}
            if not entry_allows(entry, read, args, ctx):  # what the engine checks first
                refused += 1
                continue
            try:
                text = await read.function(args, ctx)
            except ToolError as exc:
                assert "not allowed by the permission rules" in str(exc) or "no such" in str(exc)
                refused += 1
                continue
            leaks += "SECRET" in text
    print(f"reads refused: {refused}, leaks: {leaks}")
    assert leaks == 0
    assert refused < 3000  # the swap really raced with the reads


@pytest.mark.anyio
async def test_write_rule_holds_while_a_link_is_swapped_in(tmp_path: Path) -> None:
    """`Write(./src/**)` overwrote `secrets/key` through a link swapped in after the check."""
    swap_tree(tmp_path)
    entry = "Write(./src/**)"
    ctx = ruled(tmp_path, entry)
    write = REGISTRY.get("Write")
    assert write is not None
    with Swapper(tmp_path):
        for _ in range(1500):
            args = {"file_path": "src/x", "content": "OVERWRITTEN"}
            if entry_allows(entry, write, args, ctx):
                with contextlib.suppress(ToolError):
                    await write.function(args, ctx)
    assert (tmp_path / "secrets" / "key").read_text() == "SECRET"


@pytest.mark.anyio
async def test_rules_are_decided_on_the_opened_path_for_every_file_tool(tmp_path: Path) -> None:
    swap_tree(tmp_path)
    os.remove(tmp_path / "src" / "x")
    os.symlink("../secrets/key", tmp_path / "src" / "x")
    os.symlink("../secrets", tmp_path / "src" / "dir")
    calls = [
        ("Read", {"file_path": "src/x"}),
        ("Write", {"file_path": "src/x", "content": "no"}),
        ("Edit", {"file_path": "src/x", "old_string": "SECRET", "new_string": "no"}),
        ("LS", {"path": "src/dir"}),
        ("Glob", {"pattern": "*", "path": "src/dir"}),
        ("Grep", {"pattern": "SECRET", "path": "src/dir"}),
        ("Grep", {"pattern": "SECRET", "path": "src/x"}),
    ]
    for name, args in calls:
        tool = REGISTRY.get(name)
        assert tool is not None
        message = await call_error(tool, ruled(tmp_path, f"{name}(./src/**)"), **args)
        assert "leads to secrets" in message and "permission rules" in message, (name, message)
        # without a rule (or with a bare entry) the sandbox alone decides: allowed
        await tool.function(dict(args), ruled(tmp_path, f"{name}(./src/**)", name))
        (tmp_path / "secrets" / "key").write_text("SECRET")


DEEP = 1500
"""Folders in the deep-tree test: past Python's recursion limit, which `os.fwalk` hit. (The
issue's 5,000 behave the same, but removing such a chain takes some file systems ~15 s.)"""


@pytest.fixture(scope="module")
def deep_tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("deep")
    here = os.getcwd()
    os.chdir(root)  # build the chain relative to the current folder: paths stay short
    try:
        os.mkdir("d")
        os.chdir("d")
        Path("top.txt").write_text("needle")
        for _ in range(DEEP):
            os.mkdir("a")
            os.chdir("a")
        Path("bottom.txt").write_text("needle")
    finally:
        os.chdir(here)
    yield root
    remove_chain(root / "d")


@pytest.mark.anyio
async def test_a_very_deep_tree_is_walked_without_recursion(deep_tree: Path) -> None:
    """`os.fwalk` recursed once per level: Glob and Grep ended in RecursionError."""
    ctx = make_ctx(deep_tree)
    for name, args in (("Glob", {"pattern": "**/*.txt"}), ("Grep", {"pattern": "needle"})):
        text = await call(REGISTRY, name, ctx, **args)
        assert "d/top.txt" in text, name
        assert f"1 folder(s) nested more than {WALK_MAX_DEPTH} levels" in text, name
        assert "d/top.txt" in await call(REGISTRY, name, ctx, path="d", **args)


def remove_chain(folder: Path) -> None:
    """Remove a deep chain of `a` folders without recursion (pytest's cleanup recurses)."""
    here = os.getcwd()
    os.chdir(folder)
    depth = 0
    try:
        while os.path.isdir("a"):
            os.chdir("a")
            depth += 1
        for _ in range(depth):
            for leftover in os.listdir("."):
                os.unlink(leftover)
            os.chdir("..")
            os.rmdir("a")
    finally:
        os.chdir(here)


@pytest.mark.anyio
async def test_write_creates_no_folder_where_the_rule_does_not_allow_the_file(
    tmp_path: Path,
) -> None:
    swap_tree(tmp_path)
    os.symlink("../secrets", tmp_path / "src" / "d")
    write = REGISTRY.get("Write")
    assert write is not None
    message = await call_error(
        write, ruled(tmp_path, "Write(./src/**)"), file_path="src/d/new/x.txt", content="x"
    )
    assert "leads to secrets/new/x.txt" in message
    assert not (tmp_path / "secrets" / "new").exists()
    ctx = ruled(tmp_path, "Write(./src/**)")
    await call(REGISTRY, "Write", ctx, file_path="src/n/x.txt", content="fine")
    assert (tmp_path / "src" / "n" / "x.txt").read_text() == "fine"
