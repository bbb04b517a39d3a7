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
store now (a removed member is refused, a changed role applies at once).
"""

from __future__ import annotations

from typing import NamedTuple

from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import AccessDeniedError, ConversationNotFoundError
from agentkit.conversations._members import Members
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


class Access:
    """The checks of a machine's services, each against the store as it is now."""

    def __init__(self, context: MachineContext, members: Members) -> None:
        self._context = context
        self._members = members

    async def member(self, member: Member) -> Member:
        """The member as it is now (its current role); `AccessDeniedError` when it is no
        longer a member, `RuntimeError` when the machine is not open."""
        if not self._context.is_open:
            raise RuntimeError("use the machine inside 'async with Machine(...) as machine:'")
        current = await self._members.get_by_id(member.id)
        if current is None:
            raise AccessDeniedError(f"{member.name!r} is not a member of this machine")
        return current

    async def visible(self, member: Member, conversation_id: str) -> VisibleConversation:
        """The conversation, when `member` may see it (`ConversationNotFoundError`, the
        same as for a missing one, when not)."""
        current = await self.member(member)
        store = self._context.store
        if not isinstance(conversation_id, str) or len(conversation_id) > 200:
            raise ConversationNotFoundError(str(conversation_id)[:200])
        record = await store.get_conversation(conversation_id)
        if record is None or not can_see(current, record):
            raise ConversationNotFoundError(conversation_id)
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
        self, member: Member, conversation_id: str, what: str
    ) -> VisibleConversation:
        """The conversation, when `member` may see it and change it (`what` names the
        change in the refusal)."""
        found = await self.visible(member, conversation_id)
        require_writer(found.member, what)
        return found
