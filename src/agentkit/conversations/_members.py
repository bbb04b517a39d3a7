"""Members: a name, a role and a secret token, kept as sessions of a reserved agent id
(one session per member, the token stored as its SHA-256 hash)."""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from typing import Any

from agentkit.conversations._errors import MemberError
from agentkit.conversations._models import Member, Role
from agentkit.stores import SessionExistsError, Store

__all__ = ["MEMBER_AGENT", "Members"]

MEMBER_AGENT = "agentkit-machine:member"
"""The reserved agent id of the sessions that hold members."""

TOKEN_PREFIX = "ak_"
"""How every member token starts."""

_KEY = "agentkit.member"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
_ROLES = ("owner", "editor", "viewer")


def _session_id(name: str) -> str:
    return f"agentkit-member:{name}"


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _check(name: str, role: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise MemberError(
            f"member name {name!r} must be 1-100 letters, digits, '_', '.', '@' or '-'"
        )
    if role not in _ROLES:
        raise MemberError(f"role {role!r} is not one of owner, editor, viewer")


class Members:
    """The members of a machine, straight in its store: what `agentkit members` uses, so
    that members are managed whether or not a machine (a server) runs on that store.

    ```python
    store = open_store("machine.db")
    token = await Members(store).add("ada", "owner")
    ```

    A machine reads members from the store on every call: one added or removed here
    applies to a running server's next request.
    """

    def __init__(self, store: Store) -> None:
        self._store = store

    async def add(self, name: str, role: Role) -> str:
        """Add a member; returns its secret token (only its SHA-256 hash is stored).

        Raises:
            MemberError: The name is taken or not valid, or the role is unknown.
        """
        _check(name, role)
        # 256 random bits. The prefix says what the secret is (to people and to secret
        # scanners) and keeps a token from starting with '-', which a command line
        # would take for an option.
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        record = {_KEY: {"name": name, "role": role, "tokenHash": _hash(token)}}
        try:
            await self._store.create_session(_session_id(name), MEMBER_AGENT, record)
        except SessionExistsError:
            raise MemberError(f"member {name!r} exists already") from None
        return token

    async def get(self, name: str) -> Member | None:
        """The member with this name, or `None`."""
        if not isinstance(name, str) or not _NAME.match(name):
            return None
        session = await self._store.get_session(_session_id(name))
        if session is None or session.agent_id != MEMBER_AGENT:
            return None
        return _member(session.metadata)

    async def set_role(self, name: str, role: Role) -> Member:
        """Change a member's role (`MemberError` when there is no such member)."""
        _check(name, role)
        session = await self._store.get_session(_session_id(name))
        if session is None or session.agent_id != MEMBER_AGENT:
            raise MemberError(f"no member {name!r}")
        record = dict(session.metadata[_KEY])
        record["role"] = role
        await self._store.update_session(session.id, {_KEY: record})
        return Member(name=name, role=role)

    async def remove(self, name: str) -> None:
        """Remove a member (`MemberError` when there is no such member)."""
        if await self.get(name) is None:
            raise MemberError(f"no member {name!r}")
        await self._store.delete_session(_session_id(name))

    async def list(self) -> list[Member]:
        """Every member, oldest first."""
        return [_member(s.metadata) for s in await self._store.list_sessions(MEMBER_AGENT)]

    async def authenticate(self, token: str) -> Member:
        """The member a token belongs to, compared in constant time (`MemberError`
        when none)."""
        digest = _hash(token) if isinstance(token, str) else ""
        found = None
        for session in await self._store.list_sessions(MEMBER_AGENT):
            stored = str(session.metadata[_KEY].get("tokenHash", ""))
            if hmac.compare_digest(stored, digest) and digest:
                found = _member(session.metadata)
        if found is None:
            raise MemberError("no member has this token")
        return found


def _member(metadata: dict[str, Any]) -> Member:
    record = metadata[_KEY]
    return Member(name=record["name"], role=record["role"])
