"""The command line's session store: where it is and how it opens, for `run`, `sessions`
and `runs`, and how those print what they read."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentkit.stores import Store

__all__ = [
    "NOT_FOUND",
    "StoreUsageError",
    "default_store_location",
    "open_cli_store",
    "print_json",
    "read_store",
    "when",
]

NOT_FOUND = 1
"""Exit code of `runs show` (and `runs --session`) when the store has no such run/session."""


class StoreUsageError(Exception):
    """The store named on the command line cannot be opened (exit 2, like a usage error)."""


def default_store_location() -> str:
    """$AGENTKIT_STORE, else the state folder's `agentkit/agentkit.db`."""
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


def when(timestamp: float | None) -> str:
    """A store time (seconds since the epoch) as ISO 8601 in UTC, to the second."""
    if timestamp is None:
        return "-"
    moment = datetime.fromtimestamp(timestamp, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def print_json(rows: list[dict[str, Any]]) -> None:
    """Rows as the indented JSON list of `--format json`."""
    print(json.dumps(rows, indent=2, ensure_ascii=False))


def read_store(location: str | None, read: Callable[[Store | None], Awaitable[int]]) -> int:
    """`read(store)` on the store at `location`, opened without creating it (`None` when it
    does not exist yet), and closed after; returns `read`'s exit code."""
    import anyio

    from agentkit.stores import StoreError

    store = open_cli_store(location, create=False)

    async def go() -> int:
        try:
            return await read(store)
        finally:
            if store is not None:
                # What was asked is done; a close that fails changes nothing about it.
                with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):
                    await store.aclose()

    code: int = anyio.run(go)
    return code
