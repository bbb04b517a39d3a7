"""Run a model-supplied regular expression in a child process that can be killed.

Why a child process: Python's `re` holds the GIL for a whole `search` call, and a pattern
such as `(a*)*b` backtracks exponentially. Run in a worker thread, such a search stops the
event loop, every other run, the tool's timeout and `run.cancel()`, and a thread cannot be
killed. So `Grep` reads the files itself (in a worker thread, through the sandbox, exactly
as before) and sends only their *text* to a small stdlib-only scanner started with
`sys.executable -I -S -c ...`, which compiles the pattern with `re` and returns, per file,
the number of matching lines and the first few of them (capped). The parent waits for the
replies asynchronously; when the tool times out or the call is cancelled the child is
killed, whatever it is doing. The child never opens a file, so the sandbox is unchanged.

The alternative, the third-party `regex` package (which can release the GIL and takes a
`timeout=`), was not chosen: it would be a second code path with a slightly different
syntax, and a run still needs the child-process fallback when it is not installed.

Protocol (JSON documents, one per line): the parent sends `{"pattern", "flags"}` and gets
`{"ok": true}` or `{"error": message}`; then, for each batch, it sends `[line_cap, sizes]`
followed by the files' raw bytes back to back (the child decodes them as UTF-8 with
replacement, as Grep always did) and gets `[[count, [[line_number, line], ...]], ...]` in
the same order.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from agentkit._internal.contain import open_contained
from agentkit.tools._base import ToolError

__all__ = ["LINE_SHOWN_CHARS", "Hits", "encode_texts", "regex_scanner"]

LINE_SHOWN_CHARS = 500
"""Matching lines longer than this are cut (and marked `[truncated]`)."""
_REPLY_MAX_BYTES = 256 * 1024 * 1024

_SCANNER = f"""
import json, re, sys
def main():
    stdin = sys.stdin.buffer
    read = stdin.readline
    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()
    head = json.loads(read())
    try:
        regex = re.compile(head["pattern"], head["flags"])
    except Exception as exc:
        send({{"error": str(exc) or type(exc).__name__}})
        return
    send({{"ok": True}})
    while True:
        header = read()
        if not header:
            return
        limit, sizes = json.loads(header)
        results = []
        for size in sizes:
            text = stdin.read(size).decode("utf-8", errors="replace")
            count = 0
            shown = []
            for number, line in enumerate(text.splitlines(), 1):
                if regex.search(line):
                    count += 1
                    if len(shown) < limit:
                        if len(line) > {LINE_SHOWN_CHARS}:
                            line = line[:{LINE_SHOWN_CHARS}] + " [truncated]"
                        shown.append([number, line])
            limit -= len(shown)
            results.append([count, shown])
        send(results)
main()
"""

Hits = list[tuple[int, list[tuple[int, str]]]]
"""Per text: the number of matching lines and the first ones as (line number, line)."""


def encode_texts(texts: list[bytes]) -> tuple[list[int], bytes]:
    """One batch of file contents in the scanner's wire format: sizes and joined bytes."""
    return [len(text) for text in texts], b"".join(texts)


async def _reply(stdout: BufferedByteReceiveStream) -> object:
    try:
        line = await stdout.receive_until(b"\n", _REPLY_MAX_BYTES)
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound):
        raise ToolError("the regular-expression search stopped unexpectedly") from None
    return json.loads(line)


@asynccontextmanager
async def regex_scanner(
    pattern: str, flags: int
) -> AsyncIterator[Callable[[tuple[list[int], bytes], int], Awaitable[Hits]]]:
    """Start a scanner for `pattern`; yields `scan(encode_texts(...), line_cap) -> Hits`.

    `line_cap` is how many matching lines (in total over the batch) to send back; counts
    are always complete. The child is killed when the block exits, normally or not.

    Raises:
        ToolError: The pattern is not a valid regular expression, or the scanner died.
    """
    async with open_contained(
        [sys.executable, "-I", "-S", "-c", _SCANNER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as process:
        assert process.stdin is not None and process.stdout is not None
        stdin = process.stdin
        stdout = BufferedByteReceiveStream(process.stdout)
        await stdin.send(json.dumps({"pattern": pattern, "flags": flags}).encode() + b"\n")
        ready = await _reply(stdout)
        if isinstance(ready, dict) and "error" in ready:
            raise ToolError(f"invalid regular expression: {ready['error']}")

        async def scan(texts: tuple[list[int], bytes], line_cap: int) -> Hits:
            sizes, data = texts
            await stdin.send(json.dumps([line_cap, sizes]).encode() + b"\n" + data)
            reply = await _reply(stdout)
            assert isinstance(reply, list)
            return [(count, [(n, line) for n, line in shown]) for count, shown in reply]

        yield scan
