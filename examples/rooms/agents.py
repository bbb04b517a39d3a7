"""Two room agents: the rooms document's message-statistics agent, and an LLM agent
that answers the questions asked in chat."""

from __future__ import annotations

from agentkit import AgentSpec
from agentkit.rooms import (
    EventInput,
    RoomAgentDescriptor,
    RoomAgentRequest,
    RoomEvent,
    SpecRoomAgent,
)


class MessageStatistics:
    """Reads `chat.message` and publishes its word count to `measurements.word_count`."""

    descriptor = RoomAgentDescriptor(
        id="message-statistics",
        description="Counts the words of each chat message.",
        read=("chat.message",),
        publish=("measurements.word_count",),
        selects=("chat.message",),
    )

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        payload = request.event.payload if isinstance(request.event.payload, dict) else {}
        text = payload.get("text", "")
        words = len(text.split()) if isinstance(text, str) else 0
        measurement = {"message": request.event.id, "position": request.event.position}
        return [EventInput(type="measurements.word_count", payload={**measurement, "words": words})]


def question_prompt(event: RoomEvent) -> str:
    """The prompt for a `chat.question` event: who asks, and what."""
    text = event.payload.get("text", "") if isinstance(event.payload, dict) else ""
    return f"{event.author} asks: {text}"


def question_answerer() -> SpecRoomAgent:
    """An LLM agent (any provider; `test` offline) answering `chat.question` events with
    `chat.answer` events. Its memory is the room: each answer sees the last 20 events
    it may read (a bounded window, see `SpecRoomAgent`)."""
    spec = AgentSpec(
        id="rooms:answerer",
        description="Answers the questions asked in the room.",
        system_prompt="You answer questions asked in a chat room, briefly.",
    )
    return SpecRoomAgent(
        spec,
        id="answerer",
        selects=("chat.question",),
        publish_type="chat.answer",
        prompt=question_prompt,
    )
