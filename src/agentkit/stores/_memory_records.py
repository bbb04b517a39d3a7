"""The records part of `MemoryStore`: members, agents and conversations in dicts, read a
page at a time as the SQL stores read them."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from agentkit.stores._base import (
    AgentRecord,
    ConversationRecord,
    MemberRecord,
    PageKey,
    RecordExistsError,
    RecordNotFoundError,
    RunRecord,
    SessionExistsError,
    SessionRecord,
)
from agentkit.stores._records import check_page

__all__ = ["MemoryRecords"]

_R = TypeVar("_R", MemberRecord, AgentRecord, ConversationRecord, RunRecord)


def _page(
    records: Iterable[_R],
    key: Callable[[_R], PageKey],
    after: PageKey | None,
    limit: int,
    newest_first: bool,
) -> list[_R]:
    check_page(after, limit)
    ordered = sorted(records, key=key, reverse=newest_first)
    if after is not None:
        ordered = [r for r in ordered if (key(r) < after if newest_first else key(r) > after)]
    return ordered[:limit]


def _copy(agent: AgentRecord) -> AgentRecord:
    """An agent with a definition of its own: what a caller changes in the record it gave
    or got does not change the stored one (as in the SQL stores)."""
    return dataclasses.replace(agent, definition=copy.deepcopy(agent.definition))


def _created(record: MemberRecord | AgentRecord | ConversationRecord) -> PageKey:
    return (record.created_at, record.id)


class MemoryRecords:
    """Members, agents and conversations kept in process memory (see `MemoryStore`)."""

    _members: dict[str, MemberRecord]
    _agents: dict[str, AgentRecord]
    _conversations: dict[str, ConversationRecord]

    def _init_records(self) -> None:
        self._members = {}
        self._agents = {}
        self._conversations = {}

    # What the store around this provides.
    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        raise NotImplementedError

    def _session_ids(self) -> Iterable[str]:
        raise NotImplementedError

    def _all_runs(self) -> Iterable[RunRecord]:
        raise NotImplementedError

    def _has_running(self, session_id: str) -> bool:
        raise NotImplementedError

    # --- members ----------------------------------------------------------------------

    async def create_member(self, member: MemberRecord) -> None:
        for other in self._members.values():
            if other.id == member.id or other.token_hash == member.token_hash:
                raise RecordExistsError(f"a member has id {member.id!r} or this token")
            if other.removed_at is None and other.name == member.name:
                raise RecordExistsError(f"member {member.name!r} exists already")
        self._members[member.id] = member

    async def get_member(self, member_id: str) -> MemberRecord | None:
        return self._members.get(member_id)

    async def find_member(self, name: str) -> MemberRecord | None:
        return next(
            (m for m in self._members.values() if m.name == name and m.removed_at is None), None
        )

    async def member_by_token(self, token_hash: str) -> MemberRecord | None:
        return next(
            (
                m
                for m in self._members.values()
                if m.token_hash == token_hash and m.removed_at is None
            ),
            None,
        )

    def _live_member(self, member_id: str) -> MemberRecord:
        found = self._members.get(member_id)
        if found is None or found.removed_at is not None:
            raise RecordNotFoundError(f"no member {member_id!r}")
        return found

    async def update_member(
        self, member_id: str, *, role: str | None = None, token_hash: str | None = None
    ) -> MemberRecord:
        found = self._live_member(member_id)
        if token_hash is not None and any(
            m.token_hash == token_hash and m.id != member_id for m in self._members.values()
        ):
            raise RecordExistsError("another member has this token")
        changes: dict[str, Any] = {}
        if role is not None:
            changes["role"] = role
        if token_hash is not None:
            changes["token_hash"] = token_hash
        updated = self._members[member_id] = dataclasses.replace(found, **changes)
        return updated

    async def remove_member(self, member_id: str, removed_at: float) -> None:
        found = self._live_member(member_id)
        self._members[member_id] = dataclasses.replace(found, removed_at=removed_at)

    async def list_members(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[MemberRecord]:
        live = (m for m in self._members.values() if m.removed_at is None)
        return _page(live, _created, after, limit, newest_first=False)

    # --- agents -----------------------------------------------------------------------

    async def create_agent(self, agent: AgentRecord) -> None:
        for other in self._agents.values():
            if other.id == agent.id:
                raise RecordExistsError(f"an agent has id {agent.id!r}")
            if other.deleted_at is None and other.name == agent.name:
                raise RecordExistsError(f"agent {agent.name!r} exists already")
        self._agents[agent.id] = _copy(agent)

    async def get_agent(self, agent_id: str) -> AgentRecord | None:
        found = self._agents.get(agent_id)
        return None if found is None else _copy(found)

    async def find_agent(self, name: str) -> AgentRecord | None:
        found = next(
            (a for a in self._agents.values() if a.name == name and a.deleted_at is None), None
        )
        return None if found is None else _copy(found)

    def _live_agent(self, agent_id: str) -> AgentRecord:
        found = self._agents.get(agent_id)
        if found is None or found.deleted_at is not None:
            raise RecordNotFoundError(f"no agent {agent_id!r}")
        return found

    async def replace_agent(
        self, agent_id: str, definition: dict[str, Any], updated_at: float
    ) -> AgentRecord:
        found = self._live_agent(agent_id)
        updated = self._agents[agent_id] = dataclasses.replace(
            found,
            definition=copy.deepcopy(definition),
            version=found.version + 1,
            updated_at=updated_at,
        )
        return _copy(updated)

    async def delete_agent(self, agent_id: str, deleted_at: float) -> None:
        found = self._live_agent(agent_id)
        self._agents[agent_id] = dataclasses.replace(found, deleted_at=deleted_at)

    async def list_agents(
        self, after: PageKey | None = None, limit: int = 1001
    ) -> list[AgentRecord]:
        live = (a for a in self._agents.values() if a.deleted_at is None)
        return [_copy(a) for a in _page(live, _created, after, limit, newest_first=False)]

    # --- conversations ----------------------------------------------------------------

    async def create_conversation(
        self,
        conversation: ConversationRecord,
        session_agent: str,
        metadata: dict[str, Any] | None = None,
    ) -> SessionRecord:
        if conversation.id in self._conversations:
            raise SessionExistsError(f"session {conversation.id!r} already exists")
        session = await self.create_session(conversation.id, session_agent, metadata)
        self._conversations[conversation.id] = conversation
        return session

    def _live_conversations(self) -> dict[str, ConversationRecord]:
        """The conversations whose session is still here (deleted or evicted sessions
        take their conversation with them)."""
        sessions = set(self._session_ids())
        gone = [key for key in self._conversations if key not in sessions]
        for key in gone:
            del self._conversations[key]
        return self._conversations

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        return self._live_conversations().get(conversation_id)

    async def update_conversation(
        self,
        conversation_id: str,
        *,
        updated_at: float,
        name: str | None = None,
        visibility: str | None = None,
    ) -> ConversationRecord:
        found = self._live_conversations().get(conversation_id)
        if found is None:
            raise RecordNotFoundError(f"no conversation {conversation_id!r}")
        changes: dict[str, Any] = {"updated_at": updated_at}
        if name is not None:
            changes["name"] = name
        if visibility is not None:
            changes["visibility"] = visibility
        updated = self._conversations[conversation_id] = dataclasses.replace(found, **changes)
        return updated

    async def list_conversations(
        self, viewer_id: str, after: PageKey | None = None, limit: int = 1001
    ) -> list[ConversationRecord]:
        visible = (
            c
            for c in self._live_conversations().values()
            if c.visibility == "shared" or c.creator_id == viewer_id
        )
        return _page(visible, _created, after, limit, newest_first=True)

    async def list_readable_runs(
        self,
        viewer_id: str,
        *,
        others: bool,
        session_id: str | None = None,
        after: PageKey | None = None,
        limit: int = 1001,
    ) -> list[RunRecord]:
        conversations = self._live_conversations()

        def readable(run: RunRecord) -> bool:
            if session_id is not None and run.session_id != session_id:
                return False
            found = conversations.get(run.session_id)
            if found is None:
                return others
            return found.visibility == "shared" or found.creator_id == viewer_id

        runs = (run for run in self._all_runs() if readable(run))
        return _page(runs, lambda r: (r.created_at, r.id), after, limit, newest_first=True)

    async def running_sessions(self, session_ids: Sequence[str]) -> set[str]:
        return {session_id for session_id in session_ids if self._has_running(session_id)}
