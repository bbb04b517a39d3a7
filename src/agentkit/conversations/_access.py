"""Who may do what: a member's role and a conversation's visibility.

- A private conversation is visible only to its creator; a shared one to every member.
  What a member cannot see does not exist for it (`ConversationNotFoundError`).
- Owners and editors create conversations, prompt, cancel, rename, change visibility and
  delete the conversations they see; viewers only read.
- Only owners create, replace and delete agents.
- The runs of a conversation are read by those who see the conversation, owners no more
  than others (private means private); the runs of any other session (command-line runs,
  room agents') by owners only.

Every call of a service is checked once, by `Access`, against the member as it is in the
store now (a removed member is refused, a changed role applies at once): the member a
request authenticated stands for it during that request (`Members`), and a request to a
conversation's routes on PostgreSQL reads its member, the conversation and its session in
one statement (`authenticate`), which the request's check then uses once.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from typing import NamedTuple

from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import AccessDeniedError, ConversationNotFoundError
from agentkit.conversations._members import FRESH_SECONDS, Members
from agentkit.conversations._meta import ConversationMeta
from agentkit.conversations._models import Member
from agentkit.stores import ConversationRecord, SessionRecord

__all__ = [
    "Access",
    "VisibleConversation",
    "can_see",
    "can_write",
    "require_owner",
    "require_writer",
]


def can_see(member: Member, record: ConversationRecord) -> bool:
    return record.visibility == "shared" or record.creator_id == member.id


def can_write(member: Member) -> bool:
    return member.role in ("owner", "editor")


def require_writer(member: Member, what: str) -> None:
    if not can_write(member):
        raise AccessDeniedError(f"{member.name!r} is a {member.role}: viewers cannot {what}")


def require_owner(member: Member, what: str) -> None:
    if member.role != "owner":
        raise AccessDeniedError(f"{member.name!r} is a {member.role}: only owners {what}")


class VisibleConversation(NamedTuple):
    """A conversation a member may see: the member as it is now, the conversation's
    session, its record and its run bookkeeping."""

    member: Member
    session: SessionRecord
    record: ConversationRecord
    meta: ConversationMeta


_PREFETCHED = 256  # conversations read with a request's member, kept until its check


def _an_id(conversation_id: object) -> bool:
    return isinstance(conversation_id, str) and len(conversation_id) <= 200


class Access:
    """The checks of a machine's services, each against the store as it is now."""

    def __init__(self, context: MachineContext, members: Members) -> None:
        self._context = context
        self._members = members
        # (member id, conversation id) -> the conversation, its session, when they were
        # read and the conversation's change count then; each used once.
        self._prefetched: OrderedDict[
            tuple[str, str], tuple[ConversationRecord, SessionRecord, float, int]
        ] = OrderedDict()

    async def authenticate(self, token: str, conversation_id: str | None = None) -> Member:
        """The member a token belongs to (`MemberError` when none). With a
        `conversation_id`, on a store that reads both at once (PostgreSQL), the
        conversation and its session come along, for the request's check to use."""
        store = self._context.store
        if (
            conversation_id is None
            or not _an_id(conversation_id)
            or not hasattr(store, "member_and_conversation")
        ):
            return await self._members.authenticate(token)
        version = self._context.changes.version(conversation_id)
        member, record, session = await self._members.authenticate_reading(token, conversation_id)
        if record is not None and session is not None:
            key = (member.id, conversation_id)
            self._prefetched[key] = (record, session, time.monotonic(), version)
            self._prefetched.move_to_end(key)
            if len(self._prefetched) > _PREFETCHED:
                self._prefetched.popitem(last=False)
        return member

    def _take_prefetched(
        self, member_id: str, conversation_id: str
    ) -> tuple[ConversationRecord, SessionRecord] | None:
        """What `authenticate` read of the conversation for this member, if it still
        stands: read moments ago, and nothing changed the conversation here since."""
        found = self._prefetched.pop((member_id, conversation_id), None)
        if found is None:
            return None
        record, session, read_at, version = found
        if time.monotonic() - read_at > FRESH_SECONDS or version != self._context.changes.version(
            conversation_id
        ):
            return None
        return record, session

    @property
    def members(self) -> Members:
        """The machine's members."""
        return self._members

    async def member(self, member: Member) -> Member:
        """The member as it is now (its current role); `AccessDeniedError` when it is no
        longer a member, `RuntimeError` when the machine is not open."""
        if not self._context.is_open:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        current = await self._members.get_by_id(member.id)
        if current is None:
            raise AccessDeniedError(f"{member.name!r} is not a member of this machine")
        return current

    async def visible(
        self, member: Member, conversation_id: str, *, fresh_session: bool = False
    ) -> VisibleConversation:
        """The conversation, when `member` may see it (`ConversationNotFoundError`, the
        same as for a missing one, when not). With `fresh_session`, its session is read
        now, even when the request read it already (a change reads what it rewrites
        under the conversation's lock)."""
        current = await self.member(member)
        store = self._context.store
        if not _an_id(conversation_id):
            raise ConversationNotFoundError(str(conversation_id)[:200])
        prefetched = self._take_prefetched(current.id, conversation_id)
        if prefetched is not None:
            record, session_read = prefetched
        else:
            found = await store.get_conversation(conversation_id)
            if found is None:
                raise ConversationNotFoundError(conversation_id)
            record, session_read = found, None
        if not can_see(current, record):
            raise ConversationNotFoundError(conversation_id)
        session = session_read
        if session is None or fresh_session:
            session = await store.get_session(conversation_id)
        if session is None:  # deleted meanwhile
            raise ConversationNotFoundError(conversation_id)
        return VisibleConversation(
            current, session, record, ConversationMeta.from_metadata(session.metadata)
        )

    async def session_readable(self, member: Member, session_id: str) -> bool:
        """Whether `member` may read the runs of session `session_id` (see above)."""
        current = await self.member(member)
        store = self._context.store
        record = await store.get_conversation(session_id)
        if record is not None:
            return can_see(current, record)
        return current.role == "owner" and await store.get_session(session_id) is not None

    async def writable(
        self, member: Member, conversation_id: str, what: str, *, fresh_session: bool = True
    ) -> VisibleConversation:
        """The conversation, when `member` may see it and change it (`what` names the
        change in the refusal). Its session is read again when other processes may
        share the store (their changes take the conversation's lock too, so what is
        read under it is what the change rewrites); not with `fresh_session=False`, for a
        caller that reads it itself."""
        shared = self._context.runtime.notifications.shared
        found = await self.visible(member, conversation_id, fresh_session=fresh_session and shared)
        require_writer(found.member, what)
        return found
