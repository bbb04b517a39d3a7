"""What a conversation keeps in its session's metadata (the Store protocol has no other
place for it): name, visibility, creator, instructions, and per run the attachments and
where its messages start in the transcript; runs dropped by `replace_turn`; text streamed
by a cancelled run.

Members and machine agents are sessions of reserved agent ids, one session each, with
their record in the metadata (see `agentkit.conversations._members` and
`agentkit.conversations._agent_service`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentkit.conversations._models import Visibility
from agentkit.stores import SessionRecord, Store

__all__ = ["KEY", "ConversationMeta", "RunEntry", "is_conversation", "save_meta"]

KEY = "agentkit.conversation"
"""The metadata key that marks a session as a conversation (and holds its record)."""


@dataclass
class RunEntry:
    """What a conversation remembers of one of its runs."""

    id: str
    transcript_start: int
    attachments: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "t": self.transcript_start}
        if self.attachments:
            data["a"] = list(self.attachments)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunEntry:
        return cls(str(data["id"]), int(data["t"]), tuple(data.get("a", ())))


@dataclass
class ConversationMeta:
    """A conversation's record, as kept in its session's metadata."""

    name: str
    visibility: Visibility
    creator: str
    instructions: str | None = None
    created_at: float = 0.0
    runs: dict[str, RunEntry] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    partials: dict[str, str] = field(default_factory=dict)

    def to_metadata(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.name,
            "visibility": self.visibility,
            "creator": self.creator,
            "createdAt": self.created_at,
            "runs": [entry.to_json() for entry in self.runs.values()],
        }
        if self.instructions is not None:
            record["instructions"] = self.instructions
        if self.dropped:
            record["dropped"] = list(self.dropped)
        if self.partials:
            record["partials"] = dict(self.partials)
        return {KEY: record}

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> ConversationMeta:
        record = metadata[KEY]
        runs = [RunEntry.from_json(item) for item in record.get("runs", ())]
        return cls(
            name=str(record["name"]),
            visibility="shared" if record.get("visibility") == "shared" else "private",
            creator=str(record["creator"]),
            instructions=record.get("instructions"),
            created_at=float(record.get("createdAt", 0.0)),
            runs={entry.id: entry for entry in runs},
            dropped=list(record.get("dropped", ())),
            partials=dict(record.get("partials", {})),
        )


def is_conversation(metadata: dict[str, Any]) -> bool:
    return isinstance(metadata.get(KEY), dict)


async def save_meta(store: Store, session: SessionRecord, meta: ConversationMeta) -> None:
    """Keep a conversation's record in its session's metadata."""
    await store.update_session(session.id, {**session.metadata, **meta.to_metadata()})
