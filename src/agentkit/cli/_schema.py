"""`agentkit schema`: the JSON Schemas of app files, for editor support."""

from __future__ import annotations

import argparse
from typing import Any

from agentkit.cli._help import HELP_FORMATTER

__all__ = ["add_schema_parser", "schema_command"]


def add_schema_parser(sub: Any) -> None:
    """The `schema` command's arguments and help."""
    schema = sub.add_parser(
        "schema",
        help="print the JSON Schemas for editor support",
        description="Print the JSON Schemas of app.yaml and agent YAML files.",
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit schema apps > schemas.json
  agentkit schema apps agent > agent.schema.json

exit codes:
  0  printed
  2  usage error""",
    )
    schema.add_argument("kind", choices=("apps",), help="the schema family (only apps)")
    schema.add_argument(
        "which",
        nargs="?",
        choices=("all", "app", "agent"),
        default="all",
        help="both schemas as one object (default), or only app.yaml's or an agent file's",
    )


def schema_command(args: argparse.Namespace) -> int:
    """Run `agentkit schema` with parsed arguments; returns the exit code."""
    from agentkit.apps import schema_text

    print(schema_text(args.which))
    return 0
