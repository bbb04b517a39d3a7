"""The in-process client: the machine's services bound to one member."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import anyio

from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._agents import ROOL
from agentkit.conversations._client import (
    Conversation,
    ConversationClient,
    StopWatch,
    WatchCallback,
)
from agentkit.conversations._conversation_service import ConversationService
from agentkit.conversations._models import (
    AgentDefinition,
    AgentInfo,
    ConversationDetails,
    ConversationSummary,
    FollowEvent,
    IfBusy,
    Member,
    PromptAccepted,
    Turn,
    UploadedFile,
    Visibility,
)
from agentkit.conversations._private_runs import in_new_conversation
from agentkit.conversations._results import check_wait
from agentkit.conversations._run_service import RunService
from agentkit.conversations._stream import RunStream
from agentkit.conversations._uploads import UploadService, local_source
from agentkit.paging import Page
from agentkit.spec import ReasoningEffort

__all__ = ["LocalClient"]


class LocalClient(ConversationClient):
    """The in-process client: the conversations API acting as one member of a
    [`Machine`][agentkit.conversations.Machine]. Get one from `machine.client(member)`.

    Each method is one call of the machine's services (`machine.agents`,
    `machine.conversations`, `machine.runs`, `machine.uploads`) as this member.
    """

    def __init__(
        self,
        member: Member,
        *,
        agents: AgentService,
        conversations: ConversationService,
        runs: RunService,
        uploads: UploadService,
    ) -> None:
        self._member = member
        self._agents = agents
        self._conversations = conversations
        self._runs = runs
        self._uploads = uploads

    def __repr__(self) -> str:
        return f"<LocalClient {self._member.name} ({self._member.role})>"

    @property
    def member(self) -> Member:
        return self._member

    async def list_agents(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[AgentInfo]:
        return await self._agents.list(self._member, limit=limit, cursor=cursor)

    async def create_agent(self, definition: AgentDefinition) -> AgentInfo:
        return await self._agents.create(self._member, definition)

    async def replace_agent(self, definition: AgentDefinition) -> AgentInfo:
        return await self._agents.replace(self._member, definition)

    async def delete_agent(self, name: str) -> None:
        await self._agents.delete(self._member, name)

    async def create_conversation(
        self,
        *,
        agent: str = ROOL,
        name: str = "",
        visibility: Visibility = "private",
        instructions: str | None = None,
    ) -> Conversation:
        conversation_id = await self._conversations.create(
            self._member, agent=agent, name=name, visibility=visibility, instructions=instructions
        )
        return self.conversation(conversation_id)

    async def list_conversations(
        self, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[ConversationSummary]:
        return await self._conversations.list(self._member, limit=limit, cursor=cursor)

    async def get_conversation(self, conversation_id: str) -> ConversationDetails:
        return await self._conversations.get(self._member, conversation_id)

    async def fork(
        self, conversation_id: str, *, turn: int | None = None, name: str | None = None
    ) -> ConversationDetails:
        return await self._conversations.fork(self._member, conversation_id, turn=turn, name=name)

    async def list_turns(
        self, conversation_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> Page[Turn]:
        return await self._conversations.turns(
            self._member, conversation_id, limit=limit, cursor=cursor
        )

    async def rename_conversation(self, conversation_id: str, name: str) -> None:
        await self._conversations.update(self._member, conversation_id, name=name)

    async def set_visibility(self, conversation_id: str, visibility: Visibility) -> None:
        await self._conversations.update(self._member, conversation_id, visibility=visibility)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._conversations.delete(self._member, conversation_id)

    async def prompt(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
        wait: float | None = None,
        if_busy: IfBusy = "reject",
    ) -> PromptAccepted:
        check_wait(wait)
        accepted = await self._runs.prompt(
            self._member,
            conversation_id,
            text,
            attachments=attachments,
            effort=effort,
            output_schema=output_schema,
            replace_turn=replace_turn,
            if_busy=if_busy,
        )
        return await self._waited(accepted, wait)

    async def stream(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
    ) -> RunStream:
        return await self._runs.stream(
            self._member,
            conversation_id,
            text,
            attachments=attachments,
            effort=effort,
            output_schema=output_schema,
            replace_turn=replace_turn,
        )

    async def run(
        self,
        agent: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        wait: float | None = None,
    ) -> PromptAccepted:
        check_wait(wait)
        accepted = await in_new_conversation(
            self._conversations,
            self._member,
            agent,
            functools.partial(
                self._runs.prompt,
                self._member,
                text=text,
                attachments=attachments,
                effort=effort,
                output_schema=output_schema,
            ),
        )
        return await self._waited(accepted, wait)

    async def stream_run(
        self,
        agent: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
    ) -> RunStream:
        return await in_new_conversation(
            self._conversations,
            self._member,
            agent,
            functools.partial(
                self._runs.stream,
                self._member,
                text=text,
                attachments=attachments,
                effort=effort,
                output_schema=output_schema,
            ),
        )

    async def _waited(self, accepted: PromptAccepted, wait: float | None) -> PromptAccepted:
        """The run's result once it has ended within `wait` seconds, else `accepted`."""
        if wait is None:
            return accepted
        result = await self._runs.wait(
            self._member, accepted.conversation_id, accepted.run_id, within=wait
        )
        return accepted if result is None else result

    async def cancel_queued(self, conversation_id: str, queued_id: str) -> None:
        await self._runs.cancel_queued(self._member, conversation_id, queued_id)

    async def follow(
        self, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        # A generator, as the remote client's: its checks run at the first event asked.
        events = await self._runs.follow(self._member, conversation_id, run_id, after=after)
        async with contextlib.aclosing(events):
            async for event in events:
                yield event

    async def cancel(self, conversation_id: str) -> bool:
        return await self._runs.cancel(self._member, conversation_id)

    async def watch(self, conversation_id: str, callback: WatchCallback) -> StopWatch:
        return await self._conversations.watch(self._member, conversation_id, callback)

    async def decide(
        self,
        conversation_id: str,
        run_id: str,
        request_id: str,
        *,
        allow: bool,
        message: str | None = None,
        updated_input: dict[str, Any] | None = None,
        remember: bool = False,
    ) -> None:
        await self._runs.decisions.decide(
            self._member,
            conversation_id,
            run_id,
            request_id,
            allow=allow,
            message=message,
            updated_input=updated_input,
            remember=remember,
        )

    async def answer(
        self, conversation_id: str, run_id: str, request_id: str, answers: Any
    ) -> None:
        await self._runs.decisions.answer(
            self._member, conversation_id, run_id, request_id, answers
        )

    async def upload(
        self, file: str | os.PathLike[str] | bytes, *, filename: str | None = None
    ) -> UploadedFile:
        # A local file's size is read in a worker thread (a slow disk does not stall others).
        name, size, chunks = await anyio.to_thread.run_sync(local_source, file, filename)
        return await self._uploads.save(self._member, name, chunks, declared_size=size)
