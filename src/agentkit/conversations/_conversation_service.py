"""`machine.conversations`: create, read, change, delete and watch conversations, each call
acting as a member and checked once against its current role and the conversation's
visibility."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from agentkit.conversations._access import Access, require_writer
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._agents import ROOL
from agentkit.conversations._client import StopWatch, WatchCallback
from agentkit.conversations._context import MachineContext
from agentkit.conversations._decisions import pending_requests
from agentkit.conversations._errors import ConversationError, InvalidPageError
from agentkit.conversations._fork import fork_conversation
from agentkit.conversations._models import (
    ConversationDetails,
    ConversationSummary,
    Member,
    Turn,
    Visibility,
)
from agentkit.conversations._queue import queued_prompts
from agentkit.conversations._turns import active_run, build_turns
from agentkit.conversations._watch import Watch
from agentkit.paging import Page, check_limit, decode_cursor, decode_key, page_of, record_key
from agentkit.stores import ConversationRecord

__all__ = ["ConversationService"]

_VISIBILITIES = ("private", "shared")
_PAGES = "conversations"


class ConversationService:
    """The conversations of a machine: `machine.conversations`.

    Every method takes the acting `member`; what it may not see does not exist for it
    (`ConversationNotFoundError`), and viewers only read (`AccessDeniedError`).
    """

    def __init__(self, context: MachineContext, access: Access, agents: AgentService) -> None:
        self._context = context
        self._access = access
        self._agents = agents

    async def create(
        self,
        member: Member,
        *,
        agent: str = ROOL,
        name: str = "",
        visibility: Visibility = "private",
        instructions: str | None = None,
    ) -> str:
        """Create a conversation with `agent` as `member`; returns its id."""
        current = await self._access.member(member)
        require_writer(current, "create conversations")
        if visibility not in _VISIBILITIES:
            raise ConversationError(f"visibility {visibility!r} is not 'private' or 'shared'")
        found = await self._agents.find(agent)  # the agent must exist
        conversation_id = str(uuid.uuid4())
        now = time.time()
        record = ConversationRecord(
            id=conversation_id,
            agent_id=found.id,
            creator_id=current.id,
            visibility=visibility,
            name=_name(name),
            created_at=now,
            updated_at=now,
            instructions=instructions or None,
        )
        await self._context.store.create_conversation(record, found.name)
        return conversation_id

    async def fork(
        self,
        member: Member,
        conversation_id: str,
        *,
        turn: int | None = None,
        name: str | None = None,
    ) -> ConversationDetails:
        """Fork the conversation as `member`: a new private conversation holding its first
        `turn` ended turns (see `ConversationClient.fork`); returns the new one."""
        fork_id = await fork_conversation(
            self._context, self._access, self._agents, member, conversation_id, turn=turn, name=name
        )
        return await self.get(member, fork_id)

    async def get(self, member: Member, conversation_id: str) -> ConversationDetails:
        """The conversation and its turns, as `member` sees it."""
        _, session, record, meta = await self._access.visible(member, conversation_id)
        store = self._context.store
        turns, active = await build_turns(store, conversation_id, meta)
        agent = await store.get_agent(record.agent_id)
        creator = await store.get_member(record.creator_id)
        return ConversationDetails(
            id=session.id,
            name=record.name,
            agent=agent.name if agent is not None else session.agent_id,
            agent_id=record.agent_id,
            agent_deleted=agent is not None and agent.deleted_at is not None,
            visibility=record.visibility,
            creator=creator.name if creator is not None else "",
            creator_id=record.creator_id,
            instructions=record.instructions,
            created_at=record.created_at,
            updated_at=max(record.updated_at, session.updated_at),
            is_running=active is not None,
            active_run_id=active,
            turns=tuple(turns),
            queued=await queued_prompts(store, conversation_id),
            pending_requests=await pending_requests(self._context.runtime, active),
        )

    async def turns(
        self,
        member: Member,
        conversation_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page[Turn]:
        """A page of the conversation's saved turns, oldest first, as `member` sees them."""
        size = check_limit(limit)
        after = None if cursor is None else decode_cursor(cursor, "turns", str, str)
        if after is not None and after[0] != conversation_id:
            raise InvalidPageError("cursor is not one this list gave")
        _, _, _, meta = await self._access.visible(member, conversation_id)
        turns, _ = await build_turns(
            self._context.store,
            conversation_id,
            meta,
            after=None if after is None else after[1],
            count=size + 1,
        )
        return page_of(turns, size, "turns", lambda t: (conversation_id, t.id), lambda t: t)

    async def update(
        self,
        member: Member,
        conversation_id: str,
        *,
        name: str | None = None,
        visibility: Visibility | None = None,
    ) -> None:
        """Rename the conversation and/or change its visibility as `member`."""
        if visibility is not None and visibility not in _VISIBILITIES:
            raise ConversationError(f"visibility {visibility!r} is not 'private' or 'shared'")
        changes = self._context.changes
        async with changes.lock(conversation_id):
            await self._access.writable(member, conversation_id, "change conversations")
            await self._context.store.update_conversation(
                conversation_id,
                updated_at=time.time(),
                name=None if name is None else _name(name),
                visibility=visibility,
            )
        changes.access_changed(conversation_id)

    async def delete(self, member: Member, conversation_id: str) -> None:
        """Delete the conversation as `member`, its running run stopped first."""
        context = self._context
        async with context.changes.lock(conversation_id):  # no prompt starts a run meanwhile
            await self._access.writable(member, conversation_id, "delete conversations")
            active = await active_run(context.store, conversation_id)
            run = context.runtime.get_run(active.id) if active is not None else None
            if run is not None:
                run.cancel()
                await run.wait()
            await context.store.delete_session(conversation_id)
        context.changes.access_changed(conversation_id)

    async def watch(
        self, member: Member, conversation_id: str, callback: WatchCallback
    ) -> StopWatch:
        """Deliver the conversation's view to `callback` now and after every change, as
        `member` sees it, until the returned function is called or the machine closes."""
        await self._access.visible(member, conversation_id)
        group = self._context.task_group()

        async def read() -> ConversationDetails:
            return await self.get(member, conversation_id)

        watch = Watch(
            runtime=self._context.runtime,
            poll_interval=self._context.poll_interval,
            conversation_id=conversation_id,
            read=read,
            signal=lambda: self._context.changes.signal(conversation_id),
            callback=callback,
        )
        group.start_soon(watch.run, name=f"agentkit watch {conversation_id}")
        return watch.stop

    async def list(
        self, member: Member, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[ConversationSummary]:
        """A page of the conversations `member` sees, newest first (by creation: a page's
        boundary never moves, whatever is created or updated meanwhile)."""
        current = await self._access.member(member)
        size = check_limit(limit)
        store = self._context.store
        records = await store.list_conversations(current.id, decode_key(cursor, _PAGES), size + 1)
        page = page_of(records, size, _PAGES, record_key, lambda record: record)
        running = await store.running_sessions([record.id for record in page])
        names = await self._agent_names(record.agent_id for record in page)
        return Page(
            [
                ConversationSummary(
                    id=record.id,
                    name=record.name,
                    agent=names.get(record.agent_id, ""),
                    agent_id=record.agent_id,
                    visibility=record.visibility,
                    created_at=record.created_at,
                    updated_at=record.updated_at,
                    is_running=record.id in running,
                )
                for record in page
            ],
            page.next,
        )

    async def _agent_names(self, agent_ids: Iterable[str]) -> dict[str, str]:
        names: dict[str, str] = {}
        for agent_id in set(agent_ids):
            found = await self._context.store.get_agent(agent_id)
            if found is not None:
                names[agent_id] = found.name
        return names


def _name(name: str) -> str:
    if not isinstance(name, str):
        raise ConversationError("a conversation's name must be a string")
    name = name.strip()
    if len(name) > 200:
        raise ConversationError("a conversation's name is at most 200 characters")
    return name or "New conversation"
