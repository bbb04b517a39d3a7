"""Members: an id that is never reused, a name, a role and a secret token, kept as member
records in the store (the token as its SHA-256 hash, under a unique index)."""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from collections import OrderedDict

from agentkit.conversations._errors import MemberError
from agentkit.conversations._models import Member, Role
from agentkit.paging import Page, check_limit, decode_key, page_of, record_key
from agentkit.stores import (
    ConversationRecord,
    MemberRecord,
    RecordExistsError,
    RecordNotFoundError,
    SessionRecord,
    Store,
)

__all__ = ["TOKEN_PREFIX", "Members", "member_of"]

TOKEN_PREFIX = "ak_"
"""How every member token starts."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
_ROLES = ("owner", "editor", "viewer")
_PAGES = "members"

FRESH_SECONDS = 0.5
"""How long a member read from the store stands for the store's member (see `Members`)."""
_KEPT = 1024  # members remembered at most (the least recently read are forgotten)


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _new_token() -> str:
    # 256 random bits. The prefix says what the secret is (to people and to secret
    # scanners) and keeps a token from starting with '-', which a command line would
    # take for an option.
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _check(name: str, role: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise MemberError(
            f"member name {name!r} must be 1-100 letters, digits, '_', '.', '@' or '-'"
        )
    if role not in _ROLES:
        raise MemberError(f"role {role!r} is not one of owner, editor, viewer")


def member_of(record: MemberRecord) -> Member:
    """The API's view of a member record."""
    return Member(id=record.id, name=record.name, role=record.role)


class Members:
    """The members of a machine, straight in its store: what `agentkit members` uses, so
    that members are managed whether or not a machine (a server) runs on that store.

    ```python
    store = open_store("machine.db")
    token = await Members(store).add("ada", "owner")
    ```

    A token is looked up in the store at every `authenticate` (every request a server
    answers): one added, removed or given a new token here or in another process applies
    to a running server's next request. Within one request, and for at most
    `FRESH_SECONDS` (half a second), the member read then stands for the member
    (`get_by_id`): the checks of a request and of its follow read the store once, not
    once per check. Every change made through this object forgets what was read, so it
    applies at once in this process; one made in another process applies by the next
    request, and to an in-process caller within `FRESH_SECONDS`. A member's id is never
    reused: a member added later under a removed member's name is someone else, who sees
    nothing of the old one's and owns nothing of it.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._read: OrderedDict[str, tuple[Member, float]] = OrderedDict()
        self._changes = 0  # changes made through this object: a read from before one is old

    def _remember(self, member: Member, changes: int) -> Member:
        if changes != self._changes:
            return member  # read before a change ended: not kept
        self._read[member.id] = (member, time.monotonic())
        self._read.move_to_end(member.id)
        if len(self._read) > _KEPT:
            self._read.popitem(last=False)
        return member

    def _forget(self) -> None:
        """A change is being made: what was read no longer stands for the store (called
        before the change and after it, so that no read in between is kept)."""
        self._changes += 1
        self._read.clear()

    async def add(self, name: str, role: Role) -> str:
        """Add a member; returns its secret token (only its SHA-256 hash is stored).

        Raises:
            MemberError: The name is taken or not valid, or the role is unknown.
        """
        _check(name, role)
        token = _new_token()
        record = MemberRecord(secrets.token_hex(16), name, role, _hash(token), time.time())
        self._forget()
        try:
            await self._store.create_member(record)
        except RecordExistsError:
            raise MemberError(f"member {name!r} exists already") from None
        finally:
            self._forget()
        return token

    async def get(self, name: str) -> Member | None:
        """The member with this name, or `None`."""
        if not isinstance(name, str) or not _NAME.match(name):
            return None
        record = await self._store.find_member(name)
        return None if record is None else member_of(record)

    async def get_by_id(self, member_id: str) -> Member | None:
        """The member with this id, or `None` (also once it is removed)."""
        if not isinstance(member_id, str):
            return None
        found = self._read.get(member_id)
        if found is not None and time.monotonic() - found[1] <= FRESH_SECONDS:
            return found[0]
        changes = self._changes
        record = await self._store.get_member(member_id)
        if record is None or record.removed_at is not None:
            self._read.pop(member_id, None)
            return None
        return self._remember(member_of(record), changes)

    async def _live(self, name: str) -> MemberRecord:
        record = await self._store.find_member(name) if isinstance(name, str) else None
        if record is None:
            raise MemberError(f"no member {name!r}")
        return record

    async def set_role(self, name: str, role: Role) -> Member:
        """Change a member's role (`MemberError` when there is no such member)."""
        _check(name, role)
        record = await self._live(name)
        self._forget()
        try:
            return member_of(await self._store.update_member(record.id, role=role))
        except RecordNotFoundError:
            raise MemberError(f"no member {name!r}") from None
        finally:
            self._forget()

    async def rotate(self, name: str) -> str:
        """Give a member a new token and return it: the old token is refused from now on,
        the member keeps its id, role, conversations and rooms (`MemberError` when there
        is no such member)."""
        record = await self._live(name)
        token = _new_token()
        self._forget()
        try:
            await self._store.update_member(record.id, token_hash=_hash(token))
        except RecordNotFoundError:
            raise MemberError(f"no member {name!r}") from None
        finally:
            self._forget()
        return token

    async def remove(self, name: str) -> None:
        """Remove a member (`MemberError` when there is no such member). Its id is kept
        by the store, never given to anyone else."""
        record = await self._live(name)
        self._forget()
        try:
            await self._store.remove_member(record.id, time.time())
        except RecordNotFoundError:
            raise MemberError(f"no member {name!r}") from None
        finally:
            self._forget()

    async def list(self, *, limit: int | None = None, cursor: str | None = None) -> Page[Member]:
        """A page of the members, oldest first (see `agentkit.paging`)."""
        size = check_limit(limit)
        records = await self._store.list_members(decode_key(cursor, _PAGES), size + 1)
        return page_of(records, size, _PAGES, record_key, member_of)

    @property
    def changes(self) -> int:
        """How many changes were made through this object: a check that read a member
        stands while this count stays the same."""
        return self._changes

    async def authenticate_reading(
        self, token: str, conversation_id: str
    ) -> tuple[Member, ConversationRecord | None, SessionRecord | None]:
        """`authenticate`, with the conversation of id `conversation_id` and its session
        (`None` when missing) read in the same statement: a store with
        `member_and_conversation` (PostgreSQL) only."""
        if not isinstance(token, str) or not token or len(token) > 200:
            raise MemberError("no member has this token")
        changes = self._changes
        read = self._store.member_and_conversation  # type: ignore[attr-defined]
        record, conversation, session = await read(_hash(token), conversation_id)
        if record is None:
            raise MemberError("no member has this token")
        return self._remember(member_of(record), changes), conversation, session

    async def authenticate(self, token: str) -> Member:
        """The member a token belongs to: one indexed lookup of the token's hash, whatever
        the number of members (`MemberError` when none)."""
        if not isinstance(token, str) or not token or len(token) > 200:
            raise MemberError("no member has this token")
        changes = self._changes
        record = await self._store.member_by_token(_hash(token))
        if record is None:
            raise MemberError("no member has this token")
        return self._remember(member_of(record), changes)
