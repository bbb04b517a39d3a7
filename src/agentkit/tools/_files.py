"""File tools: read, write, edit, glob, grep and list_dir, all inside the sandbox.

File work runs in worker threads. `Grep`'s regular expression comes from the model, so it
runs in a child process instead (see `_scan`): a runaway pattern is killed when the tool
times out or the call is cancelled, and never blocks the event loop.

Why one long module: the file tools share one sandboxed walk and its rule checks (decided on
the path really opened); splitting the tools apart would split that walk.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Awaitable, Callable, Generator, Iterator
from typing import Any, TypeVar

import anyio.to_thread

from agentkit.tools._base import Effect, Tool, ToolContext, ToolError, object_schema
from agentkit.tools._rules import call_restrictions, path_matcher, path_matches
from agentkit.tools._sandbox import Sandbox
from agentkit.tools._scan import encode_texts, regex_scanner

__all__ = [
    "edit_tool",
    "glob_tool",
    "grep_tool",
    "list_dir_tool",
    "read_tool",
    "write_tool",
]

READ_MAX_BYTES = 10 * 1024 * 1024
"""Files larger than this are read only up to here."""
READ_DEFAULT_LINES = 2000
LINE_MAX_CHARS = 2000
OUTPUT_MAX_CHARS = 200_000
GLOB_MAX_RESULTS = 1000
GREP_MAX_FILE_BYTES = 5 * 1024 * 1024
GREP_BATCH_BYTES = 4 * 1024 * 1024
"""Grep sends files to its scanner process in batches of about this much text."""
GREP_BATCH_FILES = 256
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})

WALK_MAX_DEPTH = 256
"""Folders deeper than this below the searched folder are not entered by Glob and Grep
(each open level holds a descriptor); the result says how many were left out."""

_READ = ("Read", "read_file")
_WRITE = ("Write", "write")
_EDIT = ("Edit", "edit")
_GLOB = ("Glob", "glob")
_GREP = ("Grep", "grep")
_LS = ("LS", "list_dir")

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _sandbox(ctx: ToolContext) -> Sandbox:
    return Sandbox(ctx.working_dir)


def _rule(names: tuple[str, str], ctx: ToolContext) -> Callable[[str], bool] | None:
    """The calling agent's path rules for this tool (`Read(./src/**)`), to be decided again
    by the sandbox on the path it really opens; `None` when no rule restricts the call.

    The engine checks the path as written (and resolved) before the call; a link swapped
    in between that check and the open is caught here, in the walk that opens the file.
    """
    specifiers = call_restrictions(names, ctx)
    if specifiers is None:
        return None
    return lambda rel: any(path_matches(specifier, rel) for specifier in specifiers)


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:8192]


T = TypeVar("T")


async def _in_thread(fn: Callable[[], T]) -> T:
    """Run blocking file work in a worker thread; OS errors become tool errors."""
    try:
        return await anyio.to_thread.run_sync(fn)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise ToolError(f"{where}{exc.strerror or exc}") from None


def _file_tool(
    name: str,
    alias: str,
    description: str,
    work: Callable[[dict[str, Any], ToolContext], str],
    schema: dict[str, Any],
    *,
    effect: Effect,
    path_field: str,
) -> Tool:
    """A file tool: `work` runs in a worker thread; `path_field` is what specifiers match."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        return await _in_thread(lambda: work(args, ctx))

    return _async_file_tool(
        name, alias, description, run, schema, effect=effect, path_field=path_field
    )


def _async_file_tool(
    name: str,
    alias: str,
    description: str,
    run: Callable[[dict[str, Any], ToolContext], Awaitable[str]],
    schema: dict[str, Any],
    *,
    effect: Effect,
    path_field: str,
) -> Tool:
    return Tool(
        name=name,
        aliases=(alias,),
        description=description,
        input_schema=schema,
        function=run,
        effect=effect,
        matches=path_matcher(path_field),
    )


_FILE_PATH = {
    "type": "string",
    "description": "Path of the file, relative to the working directory.",
}


# -- read ---------------------------------------------------------------------------


def _read(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    path = args["file_path"]
    offset = int(args.get("offset") or 1)
    limit = int(args.get("limit") or READ_DEFAULT_LINES)
    data = sandbox.read_bytes(path, READ_MAX_BYTES, allow=_rule(_READ, ctx))
    shown = sandbox.relative(path)
    if _is_binary(data):
        raise ToolError(f"{shown} is a binary file; Read shows text files only")
    truncated_file = len(data) > READ_MAX_BYTES
    lines = data[:READ_MAX_BYTES].decode("utf-8", errors="replace").splitlines()
    if not lines:
        return f"({shown} is empty)"
    if offset > len(lines):
        raise ToolError(f"{shown} has {len(lines)} lines; offset {offset} is past the end")
    out: list[str] = []
    size = 0
    end = min(len(lines), offset - 1 + limit)
    for number in range(offset, end + 1):
        text = lines[number - 1]
        if len(text) > LINE_MAX_CHARS:
            text = text[:LINE_MAX_CHARS] + " [line truncated]"
        row = f"{number:>6}\t{text}"
        size += len(row) + 1
        if size > OUTPUT_MAX_CHARS:
            out.append(f"[output truncated at line {number - 1}; read on with offset={number}]")
            break
        out.append(row)
    else:
        if end < len(lines):
            out.append(f"[{len(lines) - end} more lines; read on with offset={end + 1}]")
    if truncated_file:
        out.append(f"[file larger than {READ_MAX_BYTES} bytes; only the start was read]")
    return "\n".join(out)


def read_tool() -> Tool:
    """The `Read` / `read_file` tool: a text file's lines, numbered, with an optional range."""
    return _file_tool(
        *_READ,
        "Read a text file in the working directory. Lines are numbered from 1 "
        f"(`cat -n` style). At most {READ_DEFAULT_LINES} lines are returned per call; use "
        "`offset` (first line, 1-based) and `limit` (number of lines) to read a range. "
        "Binary files are refused.",
        _read,
        object_schema(
            {
                "file_path": _FILE_PATH,
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to return (1-based). Default 1.",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": f"How many lines to return. Default {READ_DEFAULT_LINES}.",
                },
            },
            "file_path",
        ),
        effect="read",
        path_field="file_path",
    )


# -- write --------------------------------------------------------------------------


def _write(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    data = str(args["content"]).encode("utf-8")
    sandbox.write_bytes(args["file_path"], data, allow=_rule(_WRITE, ctx))
    return f"Wrote {len(data)} bytes to {sandbox.relative(args['file_path'])}"


def write_tool() -> Tool:
    """The `Write` / `write` tool: create or replace a file (missing folders are created)."""
    return _file_tool(
        *_WRITE,
        "Create a file or replace its whole content. Missing parent folders are created. "
        "To change part of an existing file, prefer Edit.",
        _write,
        object_schema(
            {
                "file_path": _FILE_PATH,
                "content": {"type": "string", "description": "The complete new content."},
            },
            "file_path",
            "content",
        ),
        effect="edit",
        path_field="file_path",
    )


# -- edit ---------------------------------------------------------------------------


def _edit(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    path = args["file_path"]
    old, new = args["old_string"], args["new_string"]
    replace_all = bool(args.get("replace_all", False))
    shown = sandbox.relative(path)
    if old == "":
        raise ToolError("old_string must not be empty; use Write to create a file")
    if old == new:
        raise ToolError("old_string and new_string are the same; nothing to change")
    allow = _rule(_EDIT, ctx)
    data = sandbox.read_bytes(path, READ_MAX_BYTES, allow=allow)
    if len(data) > READ_MAX_BYTES:
        raise ToolError(f"{shown} is larger than {READ_MAX_BYTES} bytes; Edit refuses it")
    if _is_binary(data):
        raise ToolError(f"{shown} is a binary file; Edit changes text files only")
    text = data.decode("utf-8", errors="surrogateescape")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old_string was not found in {shown}; copy it exactly from Read")
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {shown}; include more surrounding text to "
            "make it unique, or set replace_all to true"
        )
    text = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    sandbox.write_bytes(path, text.encode("utf-8", errors="surrogateescape"), allow=allow)
    return f"Replaced {count if replace_all else 1} occurrence(s) in {shown}"


def edit_tool() -> Tool:
    """The `Edit` / `edit` tool: exact string replacement that must match exactly once."""
    return _file_tool(
        *_EDIT,
        "Replace an exact string in a file. `old_string` must appear exactly once "
        "(include enough surrounding lines to make it unique) unless `replace_all` is "
        "true. Whitespace and indentation must match the file exactly.",
        _edit,
        object_schema(
            {
                "file_path": _FILE_PATH,
                "old_string": {"type": "string", "description": "The exact text to replace."},
                "new_string": {"type": "string", "description": "The replacement text."},
                "replace_all": {
                    "type": "boolean",
                    "description": "Replace every occurrence instead of exactly one.",
                },
            },
            "file_path",
            "old_string",
            "new_string",
        ),
        effect="edit",
        path_field="file_path",
    )


# -- walking ------------------------------------------------------------------------


class _Walk:
    """What a walk left out: folders too deep to enter."""

    def __init__(self) -> None:
        self.too_deep = 0

    def note(self) -> str:
        if not self.too_deep:
            return ""
        return (
            f"\n[{self.too_deep} folder(s) nested more than {WALK_MAX_DEPTH} levels below the "
            "searched folder were not searched]"
        )


def _walk_files(
    sandbox: Sandbox,
    top: str,
    walk: _Walk | None = None,
    allow: Callable[[str], bool] | None = None,
) -> Iterator[tuple[str, int, os.stat_result]]:
    """Yield (path relative to the root, parent dir fd, lstat) for every file under `top`.

    Walks without recursion (a tree 5,000 folders deep used to end in `RecursionError` in
    `os.fwalk`), from a descriptor the sandbox opened (`allow` decides on that folder),
    opening each folder with `O_NOFOLLOW` relative to its parent: links to folders are
    never followed; linked files are yielded with their link's lstat (callers skip or
    refuse them). A folder's files come first, then its subfolders, in name order.
    Folders deeper than `WALK_MAX_DEPTH` are counted in `walk` and skipped.
    """
    base = sandbox.relative(top)
    prefix = "" if base == "." else base + "/"
    walk = walk or _Walk()
    with sandbox.open_dir(top, allow=allow) as top_fd:
        # each frame: an open folder, its path below `top`, its subfolders still to visit
        frames: list[tuple[int, str, Iterator[str]]] = []
        fd, rel_dir = top_fd, ""
        try:
            while True:
                subdirs: list[str] = []
                files: list[tuple[str, os.stat_result]] = []
                with os.scandir(fd) as entries:
                    for entry in entries:
                        try:
                            if entry.is_dir(follow_symlinks=False):
                                if entry.name not in SKIPPED_DIRS:
                                    subdirs.append(entry.name)
                            else:
                                files.append((entry.name, entry.stat(follow_symlinks=False)))
                        except OSError:
                            continue
                for name, info in sorted(files, key=lambda item: item[0]):
                    yield prefix + (f"{rel_dir}/{name}" if rel_dir else name), fd, info
                frames.append((fd, rel_dir, iter(sorted(subdirs))))
                fd = -1
                while frames and fd < 0:
                    parent_fd, parent_rel, pending = frames[-1]
                    child = next(pending, None)
                    if child is None:
                        frames.pop()
                        if parent_fd != top_fd:
                            os.close(parent_fd)
                        continue
                    if len(frames) >= WALK_MAX_DEPTH:
                        walk.too_deep += 1
                        continue
                    flags = os.O_RDONLY | _O_DIRECTORY | _O_NOFOLLOW | _O_CLOEXEC
                    try:
                        fd = os.open(child, flags, dir_fd=parent_fd)
                    except OSError:
                        continue  # gone, or swapped for a link: not followed
                    rel_dir = f"{parent_rel}/{child}" if parent_rel else child
                if fd < 0:
                    return
        finally:
            for frame_fd, _, _ in frames:
                if frame_fd != top_fd:
                    os.close(frame_fd)
            if fd >= 0 and fd != top_fd and all(fd != f for f, _, _ in frames):
                os.close(fd)


def _check_pattern(pattern: str) -> str:
    if "\x00" in pattern or pattern.startswith(("/", "~")) or ".." in pattern.split("/"):
        raise ToolError("the glob pattern must be relative and stay inside the folder searched")
    return pattern.removeprefix("./")


def _glob(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    pattern = _check_pattern(str(args["pattern"]))
    top = args.get("path") or "."
    base = sandbox.relative(top)
    skip = 0 if base == "." else len(base) + 1
    found: list[tuple[float, str]] = []
    walk = _Walk()
    for rel, _, info in _walk_files(sandbox, top, walk, _rule(_GLOB, ctx)):
        if path_matches(pattern, rel[skip:]):
            found.append((info.st_mtime, rel))
    found.sort(key=lambda item: (-item[0], item[1]))
    if not found:
        return f"No files match {pattern!r} under {base}{walk.note()}"
    lines = [rel for _, rel in found[:GLOB_MAX_RESULTS]]
    if len(found) > GLOB_MAX_RESULTS:
        lines.append(f"[{len(found) - GLOB_MAX_RESULTS} more; narrow the pattern]")
    return "\n".join(lines) + walk.note()


def glob_tool() -> Tool:
    """The `Glob` / `glob` tool: file paths matching a glob pattern, newest first."""
    return _file_tool(
        *_GLOB,
        "Find files by name pattern, e.g. `**/*.py` or `src/*.ts`. `*` matches within a "
        "path segment, `**` any number of folders. Paths are returned relative to the "
        f"working directory, most recently modified first (at most {GLOB_MAX_RESULTS}).",
        _glob,
        object_schema(
            {
                "pattern": {"type": "string", "description": "Glob pattern, e.g. `**/*.py`."},
                "path": {
                    "type": "string",
                    "description": "Folder to search in (default: the working directory).",
                },
            },
            "pattern",
        ),
        effect="read",
        path_field="path",
    )


# -- grep ---------------------------------------------------------------------------


def _file_filter(glob: str | None) -> Callable[[str], bool]:
    if not glob:
        return lambda rel: True
    pattern = _check_pattern(glob)
    if "/" in pattern:
        return lambda rel: path_matches(pattern, rel)
    return lambda rel: path_matches(pattern, rel.rsplit("/", 1)[-1])


async def _grep(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    flags = re.IGNORECASE if args.get("case_insensitive") else 0
    mode = args.get("output_mode") or "files_with_matches"
    cap = int(args.get("max_results") or 200)
    top = args.get("path") or "."
    wanted = _file_filter(args.get("glob"))

    results: list[str] = []
    total = 0
    capped = False  # files_with_matches / count stop at the cap; content counts on
    walk = _Walk()
    async with regex_scanner(str(args["pattern"]), flags) as scan:
        # a generator: it runs in the threads
        files = _grep_files(sandbox, top, wanted, walk, _rule(_GREP, ctx))
        try:
            while not capped and (batch := await _in_thread(lambda: _next_batch(files))):
                rels, texts = batch
                line_cap = max(cap - len(results), 0) if mode == "content" else 0
                hits = await scan(texts, line_cap)
                for rel, (count, lines) in zip(rels, hits, strict=True):
                    if not count:
                        continue
                    total += count if mode == "content" else 1
                    if mode == "files_with_matches":
                        results.append(rel)
                    elif mode == "count":
                        results.append(f"{rel}:{count}")
                    else:
                        results.extend(f"{rel}:{n}:{line}" for n, line in lines)
                    capped = len(results) >= cap and mode != "content"
                    if capped:
                        break
        finally:
            files.close()
    if not results:
        return f"No matches for {args['pattern']!r}{walk.note()}"
    more = total - len(results)
    if len(results) >= cap:
        results = results[:cap]
        results.append(f"[results capped at {cap}{f'; {more} more' if more > 0 else ''}]")
    return "\n".join(results) + walk.note()


def _grep_files(
    sandbox: Sandbox,
    top: str,
    wanted: Callable[[str], bool],
    walk: _Walk,
    allow: Callable[[str], bool] | None,
) -> Generator[tuple[str, bytes], None, None]:
    """The files Grep searches: `top` itself when it is a file, else those under it."""
    rel_top = sandbox.relative(top)
    if rel_top != "." and _is_file(sandbox, top):
        yield rel_top, sandbox.read_bytes(top, GREP_MAX_FILE_BYTES, allow=allow)
    else:
        yield from _candidate_files(sandbox, top, wanted, walk, allow)


def _next_batch(
    files: Iterator[tuple[str, bytes]],
) -> tuple[list[str], tuple[list[int], bytes]] | None:
    """The next text files (paths, encoded contents) for the scanner; `None` when done."""
    rels: list[str] = []
    texts: list[bytes] = []
    size = 0
    for rel, data in files:
        if len(data) > GREP_MAX_FILE_BYTES or _is_binary(data):
            continue
        rels.append(rel)
        texts.append(data)
        size += len(data)
        if size >= GREP_BATCH_BYTES or len(rels) >= GREP_BATCH_FILES:
            break
    return (rels, encode_texts(texts)) if rels else None


def _is_file(sandbox: Sandbox, path: str) -> bool:
    try:
        os.close(sandbox.open_file(path))
    except ToolError as exc:
        if "is a folder" in str(exc):
            return False
        raise
    return True


def _candidate_files(
    sandbox: Sandbox,
    top: str,
    wanted: Callable[[str], bool],
    walk: _Walk,
    allow: Callable[[str], bool] | None,
) -> Iterator[tuple[str, bytes]]:
    for rel, dir_fd, info in _walk_files(sandbox, top, walk, allow):
        if not stat.S_ISREG(info.st_mode) or not wanted(rel):
            continue  # links are skipped: they are never followed while walking
        if info.st_size > GREP_MAX_FILE_BYTES:
            continue
        name = rel.rsplit("/", 1)[-1]
        try:
            fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK, dir_fd=dir_fd)
        except OSError:
            continue
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            continue
        with os.fdopen(fd, "rb") as handle:
            yield rel, handle.read(GREP_MAX_FILE_BYTES + 1)


def grep_tool() -> Tool:
    """The `Grep` / `grep` tool: search file contents with a regular expression."""
    return _async_file_tool(
        *_GREP,
        "Search file contents with a regular expression (Python `re` syntax). "
        "`output_mode`: `files_with_matches` (default; paths only), `content` "
        "(`path:line:text`), or `count` (matches per file). Filter files with `glob`, "
        "e.g. `*.py`. Binary files and `.git` are skipped.",
        _grep,
        object_schema(
            {
                "pattern": {"type": "string", "description": "Regular expression to search."},
                "path": {
                    "type": "string",
                    "description": "File or folder to search (default: the working directory).",
                },
                "glob": {
                    "type": "string",
                    "description": "Only files matching this glob, e.g. `*.py` or `src/**/*.ts`.",
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["files_with_matches", "content", "count"],
                },
                "case_insensitive": {"type": "boolean"},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 5000,
                    "description": "Cap on result lines (default 200).",
                },
            },
            "pattern",
        ),
        effect="read",
        path_field="path",
    )


# -- list_dir -----------------------------------------------------------------------


def _list_dir(args: dict[str, Any], ctx: ToolContext) -> str:
    sandbox = _sandbox(ctx)
    path = args.get("path") or "."
    shown = sandbox.relative(path)
    entries: list[str] = []
    with sandbox.open_dir(path, allow=_rule(_LS, ctx)) as fd:
        for entry in sorted(os.scandir(fd), key=lambda e: e.name):
            if entry.is_symlink():
                entries.append(f"{entry.name}@")
            elif entry.is_dir(follow_symlinks=False):
                entries.append(f"{entry.name}/")
            else:
                entries.append(entry.name)
    if not entries:
        return f"{shown} is empty"
    if len(entries) > GLOB_MAX_RESULTS:
        rest = len(entries) - GLOB_MAX_RESULTS
        entries = [*entries[:GLOB_MAX_RESULTS], f"[{rest} more entries]"]
    return "\n".join(entries)


def list_dir_tool() -> Tool:
    """The `LS` / `list_dir` tool: a folder's entries (folders end in `/`, links in `@`)."""
    return _file_tool(
        *_LS,
        "List the entries of a folder in the working directory. Folders end in `/`, "
        "symbolic links in `@`.",
        _list_dir,
        object_schema(
            {
                "path": {
                    "type": "string",
                    "description": "Folder to list (default: the working directory).",
                },
            }
        ),
        effect="read",
        path_field="path",
    )
