"""How the command line prints: a run's events (live or replayed from a store) and tables.

`agentkit run` and `agentkit runs show` both print through `EventPrinter`, so a replayed
run looks exactly as it did live (less the `text_delta` events, which stores do not keep;
the `text` event that follows them carries the same text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.events import AgentMessage

__all__ = ["EventPrinter", "print_table"]


class EventPrinter:
    """Writes events as text (live answer, status lines for tools) or as JSON lines."""

    def __init__(self, fmt: str, out: IO[str], err: IO[str]) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.streamed = False
        self.console: Any = None
        if fmt == "text":
            try:
                from rich.console import Console
            except ImportError:  # the `cli` extra is optional: plain status lines then
                pass
            else:
                self.console = Console(file=err, highlight=False)

    def _status(self, line: str) -> None:
        if self.console is not None:
            if self.streamed:
                self.out.write("\n")
                self.out.flush()
                self.streamed = False
            from rich.text import Text

            self.console.print(Text(f"· {line}", style="dim"), soft_wrap=True)
        else:
            print(f"· {line}", file=self.err, flush=True)

    def event(self, event: AgentMessage) -> None:
        """Print one event: a JSON line, or its text and status lines."""
        if self.fmt == "jsonl":
            from agentkit.events import to_wire

            self.out.write(json.dumps(to_wire(event), ensure_ascii=False) + "\n")
            self.out.flush()
            return
        who = f"[{event.agent}] " if event.agent else ""
        kind = event.type
        if kind == "text_delta":
            self.out.write(event.content)  # type: ignore[union-attr]
            self.out.flush()
            self.streamed = True
        elif kind == "text":
            if not self.streamed:
                self.out.write(who + event.content)  # type: ignore[union-attr]
            self.out.write("\n")
            self.out.flush()
            self.streamed = False
        elif kind == "tool_use":
            args = json.dumps(event.input, ensure_ascii=False)  # type: ignore[union-attr]
            if len(args) > 120:
                args = args[:117] + "..."
            self._status(f"{who}{event.tool} {args}")  # type: ignore[union-attr]
        elif kind == "tool_result" and event.is_error:  # type: ignore[union-attr]
            output = str(event.output)  # type: ignore[union-attr]
            self._status(f"{who}{event.tool} failed: {output[:200]}")  # type: ignore[union-attr]
        elif kind == "structured_output" and not event.agent:
            payload = event.payload  # type: ignore[union-attr]
            self.out.write(json.dumps(payload, ensure_ascii=False, indent=2) + "\n")
        elif kind == "error" and not event.agent:
            print(f"agentkit: error: {event.error}", file=self.err)  # type: ignore[union-attr]

    def finish(self, session_id: str, run_id: str) -> None:
        """The closing lines of a text run: where to resume it and how to replay it."""
        if self.fmt == "text":
            print(f"session: {session_id}\nrun: {run_id}", file=self.err, flush=True)


def print_table(out: IO[str], header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Columns padded to their widest cell, two spaces apart; the last one is not padded
    (no trailing blanks for `grep`/`cut` users)."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        out.write("  ".join([*cells, row[-1]]) + "\n")
