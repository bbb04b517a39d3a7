"""What a conversation keeps in its session's metadata, beside its record (name,
visibility, creator, agent: see `agentkit.stores.ConversationRecord`): per run, the
attachments and where its messages start in the transcript; the runs dropped by
`replace_turn`; the text streamed by a cancelled run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentkit.stores import SessionRecord, Store

__all__ = ["KEY", "ConversationMeta", "RunEntry", "save_meta"]

KEY = "agentkit.conversation"
"""The metadata key that holds a conversation's run bookkeeping."""


@dataclass
class RunEntry:
    """What a conversation remembers of one of its runs."""

    id: str
    transcript_start: int
    attachments: tuple[str, ...] = ()
    fingerprint: str | None = None
    """The v2 fingerprint of the definition file the run's agent was bound from."""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "t": self.transcript_start}
        if self.attachments:
            data["a"] = list(self.attachments)
        if self.fingerprint is not None:
            data["f"] = self.fingerprint
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunEntry:
        fingerprint = data.get("f")
        return cls(
            str(data["id"]),
            int(data["t"]),
            tuple(data.get("a", ())),
            fingerprint if isinstance(fingerprint, str) else None,
        )


@dataclass
class ConversationMeta:
    """A conversation's run bookkeeping, as kept in its session's metadata. Older
    databases also hold the record's fields here (name, visibility, creator): they are
    kept as they are and read from the record."""

    runs: dict[str, RunEntry] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    partials: dict[str, str] = field(default_factory=dict)
    other: dict[str, Any] = field(default_factory=dict)

    def to_metadata(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            **self.other,
            "runs": [entry.to_json() for entry in self.runs.values()],
        }
        record.pop("dropped", None)
        record.pop("partials", None)
        if self.dropped:
            record["dropped"] = list(self.dropped)
        if self.partials:
            record["partials"] = dict(self.partials)
        return {KEY: record}

    @classmethod
    def from_metadata(cls, metadata: dict[str, Any]) -> ConversationMeta:
        record = metadata.get(KEY)
        if not isinstance(record, dict):
            return cls()
        runs = [RunEntry.from_json(item) for item in record.get("runs", ())]
        other = {k: v for k, v in record.items() if k not in ("runs", "dropped", "partials")}
        return cls(
            runs={entry.id: entry for entry in runs},
            dropped=list(record.get("dropped", ())),
            partials=dict(record.get("partials", {})),
            other=other,
        )


async def save_meta(store: Store, session: SessionRecord, meta: ConversationMeta) -> None:
    """Keep a conversation's run bookkeeping in its session's metadata."""
    await store.update_session(session.id, {**session.metadata, **meta.to_metadata()})
