"""Stores: where sessions, transcripts and run events live.

[`Store`][agentkit.stores.Store] is the one interface. `MemoryStore` keeps everything in
process; `SQLiteStore` is the embedded default (a file path, or `:memory:`).
"""

from agentkit.stores._base import (
    EventEntry,
    RunRecord,
    RunStatus,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    Store,
    StoreError,
)
from agentkit.stores._memory import MemoryStore

__all__ = [
    "EventEntry",
    "MemoryStore",
    "RunRecord",
    "RunStatus",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "Store",
    "StoreError",
]
