"""LLM room agents: an `AgentSpec` (Python, app YAML or a Markdown definition) answering
room events through the core's runtime and engine. No second agent loop: each selected
event is one run of the core, in a session kept per agent and room, so the agent
remembers what it has seen of the room."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from agentkit.rooms._models import (
    EventInput,
    RoomAgentDescriptor,
    RoomAgentRequest,
    StartPolicy,
)
from agentkit.runtime import Run
from agentkit.spec import AgentSpec
from agentkit.stores import RoomEvent, SessionExistsError

__all__ = ["SpecRoomAgent", "default_prompt"]


def default_prompt(event: RoomEvent) -> str:
    """`<author> (<type>): <text>`; the payload's `text` when it has one, else its JSON."""
    payload = event.payload
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        body = payload["text"]
    else:
        body = json.dumps(payload, ensure_ascii=False)
    return f"{event.author} ({event.type}): {body}"


class SpecRoomAgent:
    """A room agent backed by an `AgentSpec`: for each selected event it runs the spec
    on the host's runtime and publishes the answer as one `publish_type` event
    (`{"text": ..., "reply_to": <position>}`, or the structured output when the spec has
    an output schema). It takes delegations too: the task is the prompt (JSON when it is
    not text) and the result is the answer.

    Args:
        spec: The agent.
        id: Its id in rooms (default: the spec's id made lowercase, other characters `-`).
        selects: Type patterns that trigger it.
        read: Type patterns it may read (default: `selects`).
        publish_type: The type of its answers.
        include_agent_events: Whether other agents' events trigger it.
        start: `current` or `persisted`.
        handler_timeout: Seconds one answer may take.
        prompt: Turns an event into the prompt (default: `default_prompt`).
    """

    def __init__(
        self,
        spec: AgentSpec,
        *,
        id: str | None = None,
        selects: Sequence[str] = ("chat.message",),
        read: Sequence[str] | None = None,
        publish_type: str = "chat.message",
        include_agent_events: bool = False,
        start: StartPolicy = "current",
        handler_timeout: float = 300.0,
        prompt: Callable[[RoomEvent], str] = default_prompt,
    ) -> None:
        self.spec = spec
        self.publish_type = publish_type
        self.prompt = prompt
        self.descriptor = RoomAgentDescriptor(
            id=id or re.sub(r"[^a-z0-9_.-]+", "-", spec.id.lower()).strip("-.")[:100] or "agent",
            description=spec.description or "",
            read=tuple(read if read is not None else selects),
            publish=(publish_type,),
            selects=tuple(selects),
            include_agent_events=include_agent_events,
            start=start,
            handler_timeout=handler_timeout,
        )

    def __repr__(self) -> str:
        return f"<SpecRoomAgent {self.descriptor.id} ({self.spec.id})>"

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        value = await self._answer(request, self.prompt(request.event))
        payload = (
            value
            if self.spec.output_schema
            else {
                "text": value,
                "reply_to": request.event.position,
            }
        )
        return [EventInput(type=self.publish_type, payload=payload)]

    async def delegate(self, request: RoomAgentRequest) -> Any:
        task = request.task
        prompt = task if isinstance(task, str) else json.dumps(task, ensure_ascii=False)
        return await self._answer(request, prompt)

    async def _answer(self, request: RoomAgentRequest, prompt: str) -> Any:
        runtime = request.runtime
        if runtime is None:
            raise RuntimeError("an LLM room agent needs a host with a runtime (Rooms(runtime=...))")
        session_id = f"room-agent:{request.room_id}:{self.descriptor.id}"
        if await runtime.store.get_session(session_id) is None:
            # Another process's worker of this agent may make it first.
            with contextlib.suppress(SessionExistsError):
                await runtime.create_session(self.spec, session_id=session_id)
        run: Run = await runtime.start(self.spec, prompt, session_id=session_id)
        try:
            outcome = await run.wait()
        finally:
            if not run.done:
                run.cancel()  # the handler timed out or the worker stopped
        if not outcome.ok:
            raise RuntimeError(f"the agent's run {run.id} ended {outcome.status}: {outcome.error}")
        return outcome.payload if self.spec.output_schema else outcome.text
