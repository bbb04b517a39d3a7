"""`RunStream`: a run started by `stream()` or `stream_run()`, read from its first event."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType

from agentkit.conversations._models import FollowEvent, PromptAccepted

__all__ = ["RunStream"]


class RunStream:
    """A run a client started and is reading from its first event: the same events as
    `follow(conversation_id, run_id)` (live text deltas included, as the model writes
    them), then exactly one `FinalEvent`.

    The run's ids are known before any event (`accepted`), so a reader that stops early
    can `follow(..., after=<last offset seen>)` later. Leaving the stream never stops the
    run. Close it (`async with`, or `aclose()`) when not reading it to its end:

    ```python
    async with await client.stream(conversation.id, "Summarise the plan") as stream:
        print("run", stream.run_id)
        async for event in stream:
            ...
    ```

    Attributes:
        accepted: The accepted run: its conversation, run and user turn ids.
    """

    def __init__(
        self,
        accepted: PromptAccepted,
        events: AsyncIterator[FollowEvent],
        *,
        close: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.accepted = accepted
        self._events = events
        self._close = close  # what else `aclose` releases (a connection not read yet)

    def __repr__(self) -> str:
        return f"<RunStream run={self.accepted.run_id} conversation={self.conversation_id}>"

    @property
    def conversation_id(self) -> str:
        """The id of the run's conversation."""
        return self.accepted.conversation_id

    @property
    def run_id(self) -> str:
        """The run's id."""
        return self.accepted.run_id

    def __aiter__(self) -> RunStream:
        return self

    async def __anext__(self) -> FollowEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        """Stop reading (the run goes on)."""
        try:
            close = getattr(self._events, "aclose", None)
            if close is not None:
                await close()
        finally:
            if self._close is not None:
                await self._close()

    async def __aenter__(self) -> RunStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()
