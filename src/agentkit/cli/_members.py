"""`agentkit members add|list|remove`: the members of a machine, straight in its store.

They need no `Machine` (and no provider): `Members` reads and writes the store, so they
work the same whether or not `agentkit serve` runs on that database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING, cast

from agentkit.cli._output import print_table
from agentkit.cli._store import StoreUsageError, open_cli_store

if TYPE_CHECKING:
    from agentkit.conversations import Role
    from agentkit.stores import Store

__all__ = ["NO_SUCH_MEMBER", "machine_store_location", "members_command", "open_machine_store"]

NO_SUCH_MEMBER = 1
"""Exit code of `members remove` when there is no member with that name."""


def machine_store_location(db: str | None) -> str:
    """`--db` as given, else the machine's default store."""
    if db:
        return db
    from agentkit.conversations import default_machine_store

    try:
        return default_machine_store()
    except OSError as exc:  # the state folder cannot be created
        raise StoreUsageError(f"cannot open the machine store: {exc}") from None


def open_machine_store(db: str | None, *, create: bool) -> Store | None:
    """The machine's store named by `--db` (see `open_cli_store` for `create`)."""
    return open_cli_store(machine_store_location(db), create=create)


def members_command(args: argparse.Namespace) -> int:
    import anyio

    from agentkit.conversations import MemberError
    from agentkit.stores import StoreError

    # Only `add` writes: listing or removing never leaves a new database file behind.
    store = open_machine_store(args.db, create=args.members_command == "add")

    async def go() -> int:
        try:
            if args.members_command == "add":
                return await _add(store, args.name, args.role)
            if args.members_command == "remove":
                return await _remove(store, args.name)
            return await _list(store, args.list_format)
        finally:
            if store is not None:
                with anyio.CancelScope(shield=True), contextlib.suppress(StoreError):
                    await store.aclose()

    try:
        code: int = anyio.run(go)
    except MemberError as exc:  # a name taken or not valid, an unknown role
        raise StoreUsageError(str(exc)) from None
    except StoreError as exc:
        # Drivers' messages may span lines (psycopg's hint): errors are one line.
        raise StoreUsageError(f"the machine store failed: {' '.join(str(exc).split())}") from None
    return code


async def _add(store: Store | None, name: str, role: str) -> int:
    from agentkit.conversations import Members

    assert store is not None  # opened with create=True
    # Members checks the role too: an unknown one is the same one-line error as a bad name.
    token = await Members(store).add(name, cast("Role", role))
    # The token's one appearance: alone on stdout, for `TOKEN=$(agentkit members add ...)`.
    print(token, flush=True)
    return 0


async def _remove(store: Store | None, name: str) -> int:
    from agentkit.conversations import Members

    members = None if store is None else Members(store)
    if members is None or await members.get(name) is None:
        print(f"agentkit: error: no member {name!r}", file=sys.stderr)
        return NO_SUCH_MEMBER
    await members.remove(name)
    return 0


async def _list(store: Store | None, fmt: str) -> int:
    from agentkit.conversations import Members

    found = [] if store is None else await Members(store).list()
    rows = [{"name": member.name, "role": member.role} for member in found]
    if fmt == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif rows:
        print_table(sys.stdout, ("NAME", "ROLE"), [(r["name"], r["role"]) for r in rows])
    else:
        print("no members", file=sys.stderr)
    return 0
