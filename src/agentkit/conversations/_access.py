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
from agentkit.conversations._meta import ConversationMeta, is_conversation
from agentkit.conversations._models import Member
from agentkit.stores import SessionRecord

__all__ = [
    "Access",
    "VisibleConversation",
    "can_see",
    "can_write",
    "require_owner",
    "require_writer",
]


def can_see(member: Member, meta: ConversationMeta) -> bool:
    return meta.visibility == "shared" or meta.creator == member.name


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
    session and its record."""

    member: Member
    session: SessionRecord
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
        current = await self._members.get(member.name)
        if current is None:
            raise AccessDeniedError(f"{member.name!r} is not a member of this machine")
        return current

    async def visible(self, member: Member, conversation_id: str) -> VisibleConversation:
        """The conversation, when `member` may see it (`ConversationNotFoundError`, the
        same as for a missing one, when not)."""
        current = await self.member(member)
        store = self._context.store
        session = (
            await store.get_session(conversation_id) if isinstance(conversation_id, str) else None
        )
        if session is None or not is_conversation(session.metadata):
            raise ConversationNotFoundError(str(conversation_id))
        meta = ConversationMeta.from_metadata(session.metadata)
        if not can_see(current, meta):
            raise ConversationNotFoundError(conversation_id)
        return VisibleConversation(current, session, meta)

    async def session_readable(self, member: Member, session_id: str) -> bool:
        """Whether `member` may read the runs of session `session_id` (see above)."""
        current = await self.member(member)
        session = await self._context.store.get_session(session_id)
        if session is None:
            return False
        return _reads(current, session)

    async def readable_sessions(self, member: Member) -> list[str]:
        """The sessions whose runs `member` may read."""
        current = await self.member(member)
        sessions = await self._context.store.list_sessions()
        return [session.id for session in sessions if _reads(current, session)]

    async def writable(
        self, member: Member, conversation_id: str, what: str
    ) -> VisibleConversation:
        """The conversation, when `member` may see it and change it (`what` names the
        change in the refusal)."""
        found = await self.visible(member, conversation_id)
        require_writer(found.member, what)
        return found


def _reads(member: Member, session: SessionRecord) -> bool:
    """Whether `member` (as it is now) may read the runs of `session`."""
    if is_conversation(session.metadata):
        return can_see(member, ConversationMeta.from_metadata(session.metadata))
    return member.role == "owner"
