"""Who may do what: a member's role and a conversation's visibility.

- A private conversation is visible only to its creator; a shared one to every member.
  What a member cannot see does not exist for it (`ConversationNotFoundError`).
- Owners and editors create conversations, prompt, cancel, rename, change visibility and
  delete the conversations they see; viewers only read.
- Only owners create, replace and delete agents.
"""

from __future__ import annotations

from agentkit.conversations._errors import AccessDeniedError
from agentkit.conversations._meta import ConversationMeta
from agentkit.conversations._models import Member

__all__ = ["can_see", "can_write", "require_owner", "require_writer"]


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
