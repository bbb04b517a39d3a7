"""`agentkit runs` and `agentkit runs show`: the runs in the store, and one run's events
printed as `agentkit run` printed them."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from agentkit.cli._help import HELP_FORMATTER, STORE_HELP, add_list_format, wrap_paragraphs
from agentkit.cli._output import EventPrinter, print_table
from agentkit.cli._store import NOT_FOUND, print_json, read_store, when

if TYPE_CHECKING:
    from agentkit.stores import RunRecord, Store

__all__ = ["add_runs_parser", "runs_command"]


def add_runs_parser(sub: Any) -> None:
    """The `runs` command's arguments and help, with `runs show`."""
    runs = sub.add_parser(
        "runs",
        help="list the runs in the store, or show one",
        # Written out: argparse's own would make `show` look required.
        usage="agentkit runs [-h] [--session ID] [--format {text,json}] [--store LOCATION]\n"
        "       agentkit runs show [-h] [--format {text,jsonl}] [--store LOCATION] RUN_ID",
        description=wrap_paragraphs(
            "List the runs in the store, oldest first (all of them, or one session's), or "
            "with 'show' print one run's stored events as 'agentkit run' printed them."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit runs
  agentkit runs --session SESSION_ID --format json
  agentkit runs show RUN_ID
  agentkit runs show RUN_ID --format jsonl

output:
  text  a table: RUN SESSION AGENT STATUS CREATED FINISHED (times in UTC)
  json  a JSON list of {"id", "sessionId", "agentId", "status", "createdAt",
        "finishedAt"}; status is running, completed, interrupted or error

exit codes:
  0  listed
  1  no session with the --session id (said on stderr)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    runs.add_argument("--session", metavar="ID", help="only the runs of this session")
    add_list_format(runs)
    runs.add_argument("--store", metavar="LOCATION", help=STORE_HELP)
    runs_sub = runs.add_subparsers(dest="runs_command", title="commands", metavar="COMMAND")
    show = runs_sub.add_parser(
        "show",
        help="replay a stored run as 'agentkit run' printed it",
        description=wrap_paragraphs(
            "Print a stored run's events exactly as 'agentkit run' printed them "
            "(stores keep every event but the text_delta pieces; the text event after them "
            "holds the same text)."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit runs show RUN_ID
  agentkit runs show RUN_ID --format jsonl | jq -c 'select(.type == "tool_use")'

exit codes:
  0  shown
  1  no run with this id in the store (said on stderr)
  2  usage or environment error (bad arguments, a store that cannot be read)""",
    )
    show.add_argument("run_id", metavar="RUN_ID", help="the run's id (see 'agentkit runs')")
    show.add_argument(
        "--format",
        choices=("text", "jsonl"),
        default="text",
        help="as for 'agentkit run': text (default) or jsonl",
    )
    # SUPPRESS: not given here, it must not overwrite a `--store` given before `show`.
    show.add_argument("--store", metavar="LOCATION", default=argparse.SUPPRESS, help=STORE_HELP)


def runs_command(args: argparse.Namespace) -> int:
    """Run `agentkit runs` or `agentkit runs show` with parsed arguments; returns the exit
    code (`NOT_FOUND` for a session or run that is not in the store)."""
    if getattr(args, "runs_command", None) == "show":
        return read_store(args.store, lambda store: _show(store, args.run_id, args.format))
    return read_store(args.store, lambda store: _runs(store, args.session, args.list_format))


def _run_row(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "sessionId": run.session_id,
        "agentId": run.agent_id,
        "status": run.status,
        "createdAt": when(run.created_at),
        "finishedAt": when(run.finished_at) if run.finished_at is not None else None,
    }


async def _runs(store: Store | None, session_id: str | None, fmt: str) -> int:
    runs: list[RunRecord] = []
    if session_id is not None:
        if store is None or await store.get_session(session_id) is None:
            print(f"agentkit: error: no session {session_id!r} in the store", file=sys.stderr)
            return NOT_FOUND
        runs = await store.list_runs(session_id)
    elif store is not None:
        for session in await store.list_sessions():
            runs.extend(await store.list_runs(session.id))
        runs.sort(key=lambda run: run.created_at)
    rows = [_run_row(run) for run in runs]
    if fmt == "json":
        print_json(rows)
    elif rows:
        print_table(
            sys.stdout,
            ("RUN", "SESSION", "AGENT", "STATUS", "CREATED", "FINISHED"),
            [
                (
                    r["id"],
                    r["sessionId"],
                    r["agentId"],
                    r["status"],
                    r["createdAt"],
                    r["finishedAt"] or "-",
                )
                for r in rows
            ],
        )
    else:
        print("no runs", file=sys.stderr)
    return 0


async def _show(store: Store | None, run_id: str, fmt: str) -> int:
    run = None if store is None else await store.get_run(run_id)
    if store is None or run is None:
        print(f"agentkit: error: no run {run_id!r} in the store", file=sys.stderr)
        return NOT_FOUND
    printer = EventPrinter(fmt, sys.stdout, sys.stderr)
    for entry in await store.read_events(run_id):
        printer.event(entry.event)
    printer.finish(run.session_id, run.id)
    return 0
