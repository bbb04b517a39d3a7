"""Transcript messages: what a session's model sees again when it resumes.

A session's transcript is a list of [`Message`][agentkit.messages.Message]s: what the user
said, each model response (thinking, text, tool calls) and each tool's result. Providers
translate them to their wire formats; stores keep them as JSON and give back equal ones.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "AssistantMessage",
    "Message",
    "ThinkingBlock",
    "ToolCall",
    "ToolResultMessage",
    "UserMessage",
]


class _Msg(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class UserMessage(_Msg):
    """What the user (or the engine, for reminders) said."""

    role: Literal["user"] = "user"
    content: str


class ThinkingBlock(_Msg):
    """Reasoning the model produced; `signature` is kept so providers can verify it.

    `redacted` holds reasoning the provider returned only in encrypted form (Anthropic's
    `redacted_thinking` `data`): nothing readable, but it must be sent back unchanged for
    the conversation to go on; `content` is then empty.
    """

    content: str
    signature: str | None = None
    redacted: str | None = None


class ToolCall(_Msg):
    """A complete tool call. `arguments` is the parsed object, or the raw text the model sent
    when it was not a JSON object (the engine reports that back as a tool error)."""

    id: str
    name: str
    arguments: dict[str, Any] | str


class AssistantMessage(_Msg):
    """One model response: thinking, text and tool calls, in that order."""

    role: Literal["assistant"] = "assistant"
    thinking: tuple[ThinkingBlock, ...] = ()
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()


class ToolResultMessage(_Msg):
    """The result of one tool call, sent back to the model."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


Message: TypeAlias = Annotated[
    UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")
]
"""One entry of a session transcript."""
