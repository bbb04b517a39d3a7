"""`agentkit members add|list|remove|rotate`: the members of a machine, straight in its store.

They need no `Machine` (and no provider): `Members` reads and writes the store, so they
work the same whether or not `agentkit serve` runs on that database.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import TYPE_CHECKING, Any, cast

from agentkit.cli._help import DB_HELP, HELP_FORMATTER, add_list_format, wrap_paragraphs
from agentkit.cli._output import print_table
from agentkit.cli._store import StoreUsageError, open_cli_store

if TYPE_CHECKING:
    from agentkit.conversations import Role
    from agentkit.stores import Store

__all__ = [
    "NO_SUCH_MEMBER",
    "add_members_parser",
    "machine_store_location",
    "members_command",
    "open_machine_store",
]

NO_SUCH_MEMBER = 1
"""Exit code of `members remove` and `members rotate` when there is no member with that
name."""


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


def add_members_parser(sub: Any) -> None:
    """The `members` command's arguments and help, with `add`, `list` and `remove`."""
    members = sub.add_parser(
        "members",
        help="add, list, remove the members of a machine or give one a new token",
        description=wrap_paragraphs(
            "Manage the members of a machine (the people and programs that use it through "
            "'agentkit serve' or 'agentkit chat'): each has an id that is never reused, a "
            "name, a role and a secret token. A member added under the name of a removed "
            "one is someone else: it sees nothing of the old one's. These commands work "
            "on the machine's store directly, whether or not a server runs on it.",
            "Roles: owner (manages agents, creates conversations and prompts), editor "
            "(creates conversations and prompts), viewer (reads shared conversations).",
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit members add ada --role owner
  TOKEN=$(agentkit members add ci-bot --role editor --db machine.db)
  agentkit members list --format json
  NEW=$(agentkit members rotate ci-bot)
  agentkit members remove ci-bot --db postgresql://agentkit@db.internal/agentkit

exit codes:
  0  done
  1  remove, rotate: no member with this name (said on stderr)
  2  usage or environment error: a name that is taken or not valid, an unknown role,
     a store that cannot be opened or fails""",
    )
    members_sub = members.add_subparsers(
        dest="members_command", title="commands", metavar="COMMAND", required=True
    )
    add = members_sub.add_parser(
        "add",
        help="add a member and print its token",
        description=wrap_paragraphs(
            "Add a member and print its secret token, alone on one line of stdout: the "
            "only time it is shown (the store keeps its SHA-256 hash). Give it to the "
            "member as AGENTKIT_TOKEN."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit members add ada --role owner
  TOKEN=$(agentkit members add ci-bot --role editor --db machine.db)

exit codes:
  0  added (the token is on stdout)
  2  the name is taken or not valid (1-100 letters, digits, '_', '.', '@', '-'), the
     role is unknown, or the store cannot be opened""",
    )
    add.add_argument("name", metavar="NAME", help="the member's name, unique in the machine")
    add.add_argument(
        "--role",
        required=True,
        metavar="owner|editor|viewer",
        help="owner: manages agents too; editor: creates conversations and prompts; "
        "viewer: reads shared conversations",
    )
    add.add_argument("--db", metavar="URL", help=DB_HELP)

    listing = members_sub.add_parser(
        "list",
        help="list the members and their roles",
        description="List the members of the machine, oldest first: name, role and id.",
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit members list
  agentkit members list --format json --db machine.db

output:
  text  a table: NAME ROLE ID
  json  a JSON list of {"name", "role", "id"}

exit codes:
  0  listed (a store that does not exist yet lists nothing)
  2  usage or environment error (a store that cannot be read)""",
    )
    listing.add_argument("--db", metavar="URL", help=DB_HELP)
    add_list_format(listing)

    remove = members_sub.add_parser(
        "remove",
        help="remove a member",
        description=wrap_paragraphs(
            "Remove a member: its token is refused from its next request. Its "
            "conversations stay (private ones are then visible to nobody)."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit members remove ci-bot
  agentkit members remove ada --db postgresql://agentkit@db.internal/agentkit

exit codes:
  0  removed
  1  no member with this name (said on stderr)
  2  usage or environment error (a store that cannot be opened)""",
    )
    remove.add_argument("name", metavar="NAME", help="the member's name")
    remove.add_argument("--db", metavar="URL", help=DB_HELP)

    rotate = members_sub.add_parser(
        "rotate",
        help="give a member a new token and print it",
        description=wrap_paragraphs(
            "Give a member a new secret token and print it, alone on one line of stdout. "
            "The old token is refused from the next request on; the member keeps its id, "
            "role, conversations and rooms."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit members rotate ci-bot
  NEW=$(agentkit members rotate ada --db machine.db)

exit codes:
  0  rotated (the new token is on stdout)
  1  no member with this name (said on stderr)
  2  usage or environment error (a store that cannot be opened)""",
    )
    rotate.add_argument("name", metavar="NAME", help="the member's name")
    rotate.add_argument("--db", metavar="URL", help=DB_HELP)


def members_command(args: argparse.Namespace) -> int:
    """Run `agentkit members add|list|remove` with parsed arguments; returns the exit
    code."""
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
            if args.members_command == "rotate":
                return await _rotate(store, args.name)
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


async def _rotate(store: Store | None, name: str) -> int:
    from agentkit.conversations import Members

    members = None if store is None else Members(store)
    if members is None or await members.get(name) is None:
        print(f"agentkit: error: no member {name!r}", file=sys.stderr)
        return NO_SUCH_MEMBER
    print(await members.rotate(name), flush=True)
    return 0


async def _list(store: Store | None, fmt: str) -> int:
    from agentkit.conversations import Member, Members

    found: list[Member] = []
    if store is not None:
        members = Members(store)
        page = await members.list(limit=1000)
        found.extend(page)
        while page.next is not None:
            page = await members.list(limit=1000, cursor=page.next)
            found.extend(page)
    rows = [{"name": m.name, "role": m.role, "id": m.id} for m in found]
    if fmt == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
    elif rows:
        table = [(r["name"], r["role"], r["id"]) for r in rows]
        print_table(sys.stdout, ("NAME", "ROLE", "ID"), table)
    else:
        print("no members", file=sys.stderr)
    return 0
