"""`agentkit fingerprint`: the values a session records of a definition."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from agentkit.cli._exit import EXIT_FAILED, EXIT_OK, UsageError
from agentkit.cli._help import HELP_FORMATTER, wrap_paragraphs

__all__ = ["add_fingerprint_parser", "fingerprint_command"]


def add_fingerprint_parser(sub: Any) -> None:
    """The `fingerprint` command's arguments and help."""
    fingerprint = sub.add_parser(
        "fingerprint",
        help="print a definition's fingerprints",
        description=wrap_paragraphs(
            "Print an agent definition's fingerprints, v2 then v1, one a line: "
            "the values a session records to notice that its definition changed."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit fingerprint agents/reviewer.md

exit codes:
  0  printed
  1  the definition is invalid (the problems are printed on stderr)
  2  usage error: no such file""",
    )
    fingerprint.add_argument("file", metavar="FILE", help="an agent definition (.md file)")


def fingerprint_command(args: argparse.Namespace) -> int:
    """Run `agentkit fingerprint` with parsed arguments; returns the exit code (1 when the
    definition is invalid)."""
    from agentkit.defs import fingerprint_lines

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{args.file}: no such file")
    try:
        for line in fingerprint_lines(path):
            print(line)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
