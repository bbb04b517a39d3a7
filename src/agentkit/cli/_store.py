"""The command line's store: where it is, and the commands that read it
(`agentkit sessions`, `agentkit runs`, `agentkit runs show`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._output import EventPrinter, print_table

if TYPE_CHECKING:
    from agentkit.stores import RunRecord, SessionRecord, Store

__all__ = ["NOT_FOUND", "default_store_location", "open_cli_store", "store_commands"]

NOT_FOUND = 1
"""Exit code of `runs show` (and `runs --session`) when the store has no such run/session."""


class StoreUsageError(Exception):
    """The store named on the command line cannot be opened (exit 2, like a usage error)."""


def default_store_location() -> str:
    configured = os.environ.get("AGENTKIT_STORE")
    if configured:
        return configured
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return str(Path(state) / "agentkit" / "agentkit.db")


def _is_file_path(location: str) -> bool:
    return location != ":memory:" and "://" not in location


def open_cli_store(location: str | None, *, create: bool) -> Store | None:
    """The store at `location` (else $AGENTKIT_STORE, else the default file).

    With `create=False` (the commands that only read) a SQLite file that does not exist is
    not created: the result is `None`, an empty store, so that listing never leaves a new
    database behind.
    """
    from agentkit.stores import open_store

    location = location or default_store_location()
    try:
        if _is_file_path(location):
            path = Path(location).expanduser()
            if not create and not path.exists():
                return None
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
        store: Store = open_store(location)
    except (ValueError, OSError) as exc:
        raise StoreUsageError(f"cannot open the store {location!r}: {exc}") from None
    return store


def _when(timestamp: float | None) -> str:
    """A store time (seconds since the epoch) as ISO 8601 in UTC, to the second."""
    if timestamp is None:
        return "-"
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _session_row(session: SessionRecord, runs: int) -> dict[str, Any]:
    return {
        "id": session.id,
        "agentId": session.agent_id,
        "createdAt": _when(session.created_at),
        "updatedAt": _when(session.updated_at),
        "runs": runs,
        "metadata": session.metadata,
    }


def _run_row(run: RunRecord) -> dict[str, Any]:
    return {
        "id": run.id,
        "sessionId": run.session_id,
        "agentId": run.agent_id,
        "status": run.status,
        "createdAt": _when(run.created_at),
        "finishedAt": _when(run.finished_at) if run.finished_at is not None else None,
    }


def _print_json(rows: list[dict[str, Any]]) -> None:
    print(json.dumps(rows, indent=2, ensure_ascii=False))


async def _sessions(store: Store | None, fmt: str) -> int:
    rows: list[dict[str, Any]] = []
    if store is not None:
        for session in await store.list_sessions():
            rows.append(_session_row(session, len(await store.list_runs(session.id))))
    if fmt == "json":
        _print_json(rows)
    elif rows:
        print_table(
            sys.stdout,
            ("SESSION", "AGENT", "CREATED", "UPDATED", "RUNS"),
            [(r["id"], r["agentId"], r["createdAt"], r["updatedAt"], str(r["runs"])) for r in rows],
        )
    else:
        print("no sessions", file=sys.stderr)
    return 0


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
        _print_json(rows)
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


def store_commands(args: argparse.Namespace) -> int:
    """`agentkit sessions`, `agentkit runs` and `agentkit runs show`."""
    import anyio

    from agentkit.stores import StoreError

    store = open_cli_store(args.store, create=False)

    async def go() -> int:
        try:
            if args.command == "sessions":
                return await _sessions(store, args.list_format)
            if getattr(args, "runs_command", None) == "show":
                return await _show(store, args.run_id, args.format)
            return await _runs(store, args.session, args.list_format)
        finally:
            if store is not None:
                # What was asked is done; a close that fails changes nothing about it.
                with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):
                    await store.aclose()

    code: int = anyio.run(go)
    return code
