"""`agentkit validate`: every problem of agent files, whatever their format, without
running them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from agentkit.cli._exit import UsageError
from agentkit.cli._help import HELP_FORMATTER, wrap_paragraphs

__all__ = ["add_validate_parser", "validate_command"]


def add_validate_parser(sub: Any) -> None:
    """The `validate` command's arguments and help."""
    validate = sub.add_parser(
        "validate",
        help="check app folders, agent YAML and .md files",
        description=wrap_paragraphs(
            "Check app folders, app.yaml files, agent YAML files and agent "
            "definitions (.md files or folders of them) and report every problem."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit validate examples/research-app
  agentkit validate agents/researcher.yaml agents/reviewer.md
  agentkit validate --format json examples/research-app

output:
  text  one 'file:line:col: field: message' line per problem (warnings say 'warning:';
        the position is left out when there is none), or 'ok: N path(s) valid'
  json  one JSON object: {"valid": true|false, "diagnostics": [{"file", "line",
        "column", "field", "message", "severity"}, ...]} (line and column are 0 when
        unknown)

exit codes:
  0  everything is valid (warnings allowed)
  1  something is invalid
  2  usage error: a path that does not exist or cannot be checked""",
    )
    validate.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="an app folder, app.yaml, an agent .yaml/.yml file, an agent .md file, or a "
        "folder of .md files",
    )
    validate.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per problem (default); json: one object for scripts",
    )


def validate_command(args: argparse.Namespace) -> int:
    """Run `agentkit validate` with parsed arguments; returns the exit code (1 when
    something is invalid)."""
    from agentkit.formats import validate_paths

    paths: list[Path] = []
    for raw in args.paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"{raw}: no such file or folder")
        paths.append(path)
    try:
        diagnostics = validate_paths(paths)
    except ValueError as exc:  # a path the format that claims it cannot check at all
        raise UsageError(str(exc)) from None
    errors = [d for d in diagnostics if d.severity == "error"]
    if args.format == "json":
        report = {"valid": not errors, "diagnostics": [d.to_dict() for d in diagnostics]}
        print(json.dumps(report, indent=2))
    else:
        for diagnostic in diagnostics:
            print(diagnostic)
        if not diagnostics:
            print(f"ok: {len(args.paths)} path(s) valid")
    return 1 if errors else 0
