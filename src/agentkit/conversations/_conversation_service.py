"""`machine.conversations`: create, read, change, delete and watch conversations, each call
acting as a member and checked once against its current role and the conversation's
visibility."""

from __future__ import annotations

import time
import uuid

from agentkit.conversations._access import Access, can_see, require_writer
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._agents import ROOL
from agentkit.conversations._client import StopWatch, WatchCallback
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import ConversationError
from agentkit.conversations._meta import ConversationMeta, is_conversation, save_meta
from agentkit.conversations._models import (
    ConversationDetails,
    ConversationSummary,
    Member,
    Turn,
    Visibility,
)
from agentkit.conversations._turns import active_run, build_turns
from agentkit.conversations._watch import Watch

__all__ = ["ConversationService"]

_VISIBILITIES = ("private", "shared")


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
        await self._agents.spec(agent)  # the agent must exist
        conversation_id = str(uuid.uuid4())
        meta = ConversationMeta(
            name=_name(name),
            visibility=visibility,
            creator=current.name,
            instructions=instructions or None,
            created_at=time.time(),
        )
        await self._context.store.create_session(conversation_id, agent, meta.to_metadata())
        return conversation_id

    async def get(self, member: Member, conversation_id: str) -> ConversationDetails:
        """The conversation and its turns, as `member` sees it."""
        _, session, meta = await self._access.visible(member, conversation_id)
        turns, active = await build_turns(self._context.store, conversation_id, meta)
        return ConversationDetails(
            id=session.id,
            name=meta.name,
            agent=session.agent_id,
            visibility=meta.visibility,
            creator=meta.creator,
            instructions=meta.instructions,
            created_at=meta.created_at,
            updated_at=session.updated_at,
            is_running=active is not None,
            active_run_id=active,
            turns=tuple(turns),
        )

    async def turns(self, member: Member, conversation_id: str) -> list[Turn]:
        """The conversation's saved turns, as `member` sees them."""
        _, _, meta = await self._access.visible(member, conversation_id)
        turns, _ = await build_turns(self._context.store, conversation_id, meta)
        return turns

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
            _, session, meta = await self._access.writable(
                member, conversation_id, "change conversations"
            )
            if name is not None:
                meta.name = _name(name)
            if visibility is not None:
                meta.visibility = visibility
            await save_meta(self._context.store, session, meta)
        changes.changed(conversation_id)

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
        context.changes.changed(conversation_id)

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

    async def list(self, member: Member) -> list[ConversationSummary]:
        """The conversations `member` sees, most recently updated first."""
        current = await self._access.member(member)
        store = self._context.store
        rows = []
        for session in await store.list_sessions():
            if not is_conversation(session.metadata):
                continue
            meta = ConversationMeta.from_metadata(session.metadata)
            if not can_see(current, meta):
                continue
            rows.append(
                ConversationSummary(
                    id=session.id,
                    name=meta.name,
                    agent=session.agent_id,
                    visibility=meta.visibility,
                    updated_at=session.updated_at,
                    is_running=await active_run(store, session.id) is not None,
                )
            )
        rows.sort(key=lambda row: row.updated_at, reverse=True)
        return rows


def _name(name: str) -> str:
    if not isinstance(name, str):
        raise ConversationError("a conversation's name must be a string")
    name = name.strip()
    if len(name) > 200:
        raise ConversationError("a conversation's name is at most 200 characters")
    return name or "New conversation"
