"""`agentkit sessions`: the sessions in the store."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from agentkit.cli._help import HELP_FORMATTER, STORE_HELP, add_list_format, wrap_paragraphs
from agentkit.cli._output import print_table
from agentkit.cli._store import print_json, read_store, when

if TYPE_CHECKING:
    from agentkit.stores import SessionRecord, Store

__all__ = ["add_sessions_parser", "sessions_command"]


def add_sessions_parser(sub: Any) -> None:
    """The `sessions` command's arguments and help."""
    sessions = sub.add_parser(
        "sessions",
        help="list the sessions in the store",
        description=wrap_paragraphs(
            "List the sessions in the store, oldest first: id, agent, when it was "
            "created and last updated, and how many runs it has."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit sessions
  agentkit sessions --format json --store ./agentkit.db

output:
  text  a table: SESSION AGENT CREATED UPDATED RUNS (times in UTC)
  json  a JSON list of {"id", "agentId", "createdAt", "updatedAt", "runs", "metadata"}

exit codes:
  0  listed (an empty or not yet created store lists nothing)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    add_list_format(sessions)
    sessions.add_argument("--store", metavar="LOCATION", help=STORE_HELP)


def sessions_command(args: argparse.Namespace) -> int:
    """Run `agentkit sessions` with parsed arguments; returns the exit code."""
    return read_store(args.store, lambda store: _sessions(store, args.list_format))


def _session_row(session: SessionRecord, runs: int) -> dict[str, Any]:
    return {
        "id": session.id,
        "agentId": session.agent_id,
        "createdAt": when(session.created_at),
        "updatedAt": when(session.updated_at),
        "runs": runs,
        "metadata": session.metadata,
    }


async def _sessions(store: Store | None, fmt: str) -> int:
    rows: list[dict[str, Any]] = []
    if store is not None:
        for session in await store.list_sessions():
            rows.append(_session_row(session, len(await store.list_runs(session.id))))
    if fmt == "json":
        print_json(rows)
    elif rows:
        print_table(
            sys.stdout,
            ("SESSION", "AGENT", "CREATED", "UPDATED", "RUNS"),
            [(r["id"], r["agentId"], r["createdAt"], r["updatedAt"], str(r["runs"])) for r in rows],
        )
    else:
        print("no sessions", file=sys.stderr)
    return 0
