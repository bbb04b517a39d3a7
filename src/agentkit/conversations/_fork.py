"""Forking a conversation: a new conversation, private to the member who forks, of the same
agent and instructions, holding a copy of the original's first ended turns.

What `turn` counts: the prompts kept, each with its answer (a run: one user turn and one
agent turn), 1-based and oldest first, among the conversation's saved turns (runs dropped
by `replace_turn` are not turns any more). `turn=n` keeps prompts 1..n; `turn=0` keeps
none (a fresh conversation with the same agent and instructions); no `turn` keeps every
ended one. A run still going is never copied, nor counted.

The copy is complete: the new conversation's transcript (what its model sees next) is the
original's up to the end of turn `n`, and its runs are copies of the original's under new
ids, with their stored events, so its turns, `follow` and the run routes read as the
original's did. Attachments are paths on the machine: the copied turns name the same
files (shared, not copied). The store writes the copy in one transaction
(`Store.fork_conversation`), inside the database for the SQL stores.
"""

from __future__ import annotations

import itertools
import time
import uuid

from agentkit.conversations._access import Access, require_writer
from agentkit.conversations._agent_service import AgentService
from agentkit.conversations._context import MachineContext
from agentkit.conversations._errors import (
    ConversationBusyError,
    ConversationError,
    ConversationNotFoundError,
)
from agentkit.conversations._meta import ConversationMeta, RunEntry
from agentkit.conversations._models import Member
from agentkit.stores import ConversationRecord

__all__ = ["FORK_SUFFIX", "fork_conversation"]

FORK_SUFFIX = " (fork)"
"""Added to the original's name when a fork is given none."""

_MAX_NAME = 200  # a conversation's longest name (see `ConversationService`)


class _FieldError(ConversationError):
    """A caller's mistake in one field (`field`: what the server's answer names)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _checked(turn: int | None, name: str | None) -> None:
    if turn is not None and (isinstance(turn, bool) or not isinstance(turn, int)):
        raise _FieldError("turn", f"turn must be a number of turns (an integer), not {turn!r}")
    if name is not None and not isinstance(name, str):
        raise _FieldError("name", "a conversation's name must be a string")
    if name is not None and len(name.strip()) > _MAX_NAME:
        raise _FieldError("name", f"a conversation's name is at most {_MAX_NAME} characters")


async def fork_conversation(
    context: MachineContext,
    access: Access,
    agents: AgentService,
    member: Member,
    conversation_id: str,
    *,
    turn: int | None = None,
    name: str | None = None,
) -> str:
    """Fork the conversation as `member` (who may see it and create conversations);
    returns the new conversation's id.

    Raises:
        ConversationNotFoundError: `member` cannot see the conversation.
        AccessDeniedError: `member` is a viewer (viewers create no conversation).
        AgentDeletedError: The conversation's agent was deleted.
        ConversationError: `turn` is not from 0 to the number of ended turns, or `name`
            is not a name (the error's `field` says which).
        ConversationBusyError: A run was starting in another process; try again.
    """
    _checked(turn, name)
    store = context.store
    # The conversation's lock: no prompt, replacement or cancel of this process changes
    # its runs or transcript between what is read here and the copy.
    async with context.changes.lock(conversation_id):
        # A store that reads the session, its runs and its transcript's length in one
        # statement (PostgreSQL) gives them as one snapshot: what the fork copies is the
        # conversation at one moment, whatever another process does meanwhile.
        read_state = getattr(store, "conversation_state", None)
        current, session, record, meta = await access.visible(
            member, conversation_id, fresh_session=read_state is None
        )
        require_writer(current, "fork conversations (a fork is a new conversation)")
        await agents.spec_of(record.agent_id)  # a deleted agent takes no new conversation
        snapshot: int | None = None  # the transcript's length, read with the runs
        if read_state is not None:
            state = await read_state(conversation_id)
            if state is None:  # deleted meanwhile
                raise ConversationNotFoundError(conversation_id)
            session, stored, snapshot, _ = state
            meta = ConversationMeta.from_metadata(session.metadata)
        else:
            stored = await store.list_runs(conversation_id)
        dropped = set(meta.dropped)
        runs = [run for run in stored if run.id not in dropped]
        ended = list(
            itertools.takewhile(lambda run: run.status not in ("running", "waiting"), runs)
        )
        kept = len(ended) if turn is None else turn
        if not 0 <= kept <= len(ended):
            raise _FieldError(
                "turn",
                f"turn must be from 0 to {len(ended)} (the conversation's ended turns), not {turn}",
            )
        length = snapshot  # the whole transcript (when `None`, as the copy finds it)
        if kept < len(runs):
            following = meta.runs.get(runs[kept].id)
            if following is None:  # started by another process a moment ago
                raise ConversationBusyError(
                    f"conversation {conversation_id!r} has a run starting: try again"
                )
            length = following.transcript_start
        pairs = [(run.id, str(uuid.uuid4())) for run in ended[:kept]]
        copied = ConversationMeta()
        for old, new in pairs:
            entry = meta.runs.get(old)
            if entry is not None:
                copied.runs[new] = RunEntry(
                    new, entry.transcript_start, entry.attachments, entry.fingerprint
                )
            if old in meta.partials:
                copied.partials[new] = meta.partials[old]
        now = time.time()
        fork = ConversationRecord(
            id=str(uuid.uuid4()),
            agent_id=record.agent_id,
            creator_id=current.id,
            visibility="private",
            name=_name(record.name if name is None else name, fallback=name is None),
            created_at=now,
            updated_at=now,
            instructions=record.instructions,
        )
        await store.fork_conversation(
            conversation_id,
            fork,
            session.agent_id,
            copied.to_metadata(),
            pairs,
            length,
        )
    return fork.id


def _name(name: str, *, fallback: bool) -> str:
    """The fork's name: the one given, or the original's with `FORK_SUFFIX`."""
    name = name.strip()
    if not fallback:
        return name or "New conversation"
    return name[: _MAX_NAME - len(FORK_SUFFIX)].rstrip() + FORK_SUFFIX
