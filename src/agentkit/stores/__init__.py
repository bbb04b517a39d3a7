"""Stores: where sessions, transcripts and run events live.

[`Store`][agentkit.stores.Store] is the one interface. `MemoryStore` keeps everything in
process; `SQLiteStore` is the embedded default (a file path, or `:memory:`);
`PostgresStore` is the scale-out backend shared by several processes and hosts (psycopg is
imported only when it first connects). `open_store` picks one from a path or URL.
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
from agentkit.stores._open import open_store
from agentkit.stores._postgres import PostgresStore
from agentkit.stores._sqlite import SQLiteStore

__all__ = [
    "EventEntry",
    "MemoryStore",
    "PostgresStore",
    "RunRecord",
    "RunStatus",
    "SQLiteStore",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "Store",
    "StoreError",
    "open_store",
]
