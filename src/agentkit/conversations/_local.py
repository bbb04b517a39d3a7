"""The in-process client: the conversations API acting as one member of a machine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from agentkit.conversations._agents import ROOL
from agentkit.conversations._client import (
    Conversation,
    ConversationClient,
    StopWatch,
    WatchCallback,
)
from agentkit.conversations._models import (
    AgentDefinition,
    AgentInfo,
    ConversationDetails,
    ConversationSummary,
    FollowEvent,
    Member,
    PromptAccepted,
    Turn,
    Visibility,
)
from agentkit.spec import ReasoningEffort

if TYPE_CHECKING:
    from agentkit.conversations._machine import Machine

__all__ = ["LocalClient"]


class LocalClient(ConversationClient):
    """The in-process client: the conversations API acting as one member of a
    [`Machine`][agentkit.conversations.Machine]. Get one from `machine.client(member)`."""

    def __init__(self, machine: Machine, member: Member) -> None:
        self._machine = machine
        self._member = member

    def __repr__(self) -> str:
        return f"<LocalClient {self._member.name} ({self._member.role})>"

    @property
    def member(self) -> Member:
        return self._member

    async def list_agents(self) -> list[AgentInfo]:
        return await self._machine._list_agents(self._member)

    async def create_agent(self, definition: AgentDefinition) -> AgentInfo:
        return await self._machine._put_agent(self._member, definition, replace=False)

    async def replace_agent(self, definition: AgentDefinition) -> AgentInfo:
        return await self._machine._put_agent(self._member, definition, replace=True)

    async def delete_agent(self, name: str) -> None:
        await self._machine._delete_agent(self._member, name)

    async def create_conversation(
        self,
        *,
        agent: str = ROOL,
        name: str = "",
        visibility: Visibility = "private",
        instructions: str | None = None,
    ) -> Conversation:
        conversation_id = await self._machine._create(
            self._member, agent, name, visibility, instructions
        )
        return self.conversation(conversation_id)

    async def list_conversations(self) -> list[ConversationSummary]:
        return await self._machine._list(self._member)

    async def get_conversation(self, conversation_id: str) -> ConversationDetails:
        return await self._machine._details(self._member, conversation_id)

    async def list_turns(self, conversation_id: str) -> list[Turn]:
        return await self._machine._turns(self._member, conversation_id)

    async def rename_conversation(self, conversation_id: str, name: str) -> None:
        await self._machine._update(self._member, conversation_id, name=name)

    async def set_visibility(self, conversation_id: str, visibility: Visibility) -> None:
        await self._machine._update(self._member, conversation_id, visibility=visibility)

    async def delete_conversation(self, conversation_id: str) -> None:
        await self._machine._delete(self._member, conversation_id)

    async def prompt(
        self,
        conversation_id: str,
        text: str,
        *,
        attachments: Sequence[str] = (),
        effort: ReasoningEffort | None = None,
        output_schema: dict[str, Any] | None = None,
        replace_turn: str | None = None,
    ) -> PromptAccepted:
        return await self._machine._prompt(
            self._member,
            conversation_id,
            text,
            attachments,
            effort,
            output_schema,
            replace_turn,
        )

    def follow(
        self, conversation_id: str, run_id: str, *, after: int | None = None
    ) -> AsyncIterator[FollowEvent]:
        return self._machine._follow(self._member, conversation_id, run_id, after)

    async def cancel(self, conversation_id: str) -> bool:
        return await self._machine._cancel(self._member, conversation_id)

    async def watch(self, conversation_id: str, callback: WatchCallback) -> StopWatch:
        return await self._machine._watch(self._member, conversation_id, callback)
