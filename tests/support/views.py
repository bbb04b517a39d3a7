"""Waiting for a conversation's watch to deliver a view that satisfies a condition."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from agentkit.conversations import ConversationClient, ConversationView

TIMEOUT = 30.0


async def view_where(
    client: ConversationClient,
    conversation_id: str,
    done: Callable[[ConversationView], bool],
) -> ConversationView:
    """The first view of the conversation's watch for which `done` holds (the initial
    loading view excluded); fails after `TIMEOUT` seconds."""
    found: list[ConversationView] = []
    reached = anyio.Event()

    def deliver(view: ConversationView) -> None:
        if not reached.is_set() and not view.loading and done(view):
            found.append(view)
            reached.set()

    stop = await client.watch(conversation_id, deliver)
    try:
        with anyio.fail_after(TIMEOUT):
            await reached.wait()
    finally:
        stop()
    return found[0]
