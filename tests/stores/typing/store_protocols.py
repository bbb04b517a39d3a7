"""Every store backend is each part of the store interface, as `mypy --strict` sees it: a
function taking only a `RoomStore` (or a `SessionStore`, a `RunStore`, a `RecordStore`, a
`QueueStore`) accepts any backend."""

from agentkit.stores import (
    MemoryStore,
    PostgresStore,
    QueueStore,
    RecordStore,
    RoomStore,
    RunStore,
    SessionStore,
    SQLiteStore,
    Store,
)

Parts = tuple[SessionStore, RunStore, RoomStore, RecordStore, QueueStore, Store]


def memory(store: MemoryStore) -> Parts:
    return store, store, store, store, store, store


def sqlite(store: SQLiteStore) -> Parts:
    return store, store, store, store, store, store


def postgres(store: PostgresStore) -> Parts:
    return store, store, store, store, store, store


def parts(store: Store) -> tuple[SessionStore, RunStore, RoomStore, RecordStore, QueueStore]:
    return store, store, store, store, store
