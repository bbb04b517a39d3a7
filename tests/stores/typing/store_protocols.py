"""Every store backend is each part of the store interface, as `mypy --strict` sees it: a
function taking only a `RoomStore` (or a `SessionStore`, a `RunStore`) accepts any backend."""

from agentkit.stores import (
    MemoryStore,
    PostgresStore,
    RoomStore,
    RunStore,
    SessionStore,
    SQLiteStore,
    Store,
)


def memory(store: MemoryStore) -> tuple[SessionStore, RunStore, RoomStore, Store]:
    return store, store, store, store


def sqlite(store: SQLiteStore) -> tuple[SessionStore, RunStore, RoomStore, Store]:
    return store, store, store, store


def postgres(store: PostgresStore) -> tuple[SessionStore, RunStore, RoomStore, Store]:
    return store, store, store, store


def parts(store: Store) -> tuple[SessionStore, RunStore, RoomStore]:
    return store, store, store
