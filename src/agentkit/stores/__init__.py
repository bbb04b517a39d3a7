"""Stores: where sessions, transcripts, run events and rooms live.

[`Store`][agentkit.stores.Store] is the one interface every backend implements, made of
three parts a consumer can ask for alone: [`SessionStore`][agentkit.stores.SessionStore]
(sessions and transcripts), [`RunStore`][agentkit.stores.RunStore] (runs and their event
logs) and [`RoomStore`][agentkit.stores.RoomStore] (rooms). `MemoryStore` keeps everything in
process; `SQLiteStore` is the embedded default (a file path, or `:memory:`);
`PostgresStore` is the scale-out backend shared by several processes and hosts.
`open_store` picks one from a path or URL. The SQL backends (and their drivers) load on
first use, so importing this package stays cheap.
"""

from typing import TYPE_CHECKING

from agentkit._internal.lazy import lazy_exports

if TYPE_CHECKING:
    from agentkit.errors import (
        DelegationStateError,
        OffsetError,
        StoreLocationError,
        StoreUnavailableError,
    )
    from agentkit.stores._base import (
        AgentRecord,
        ConversationRecord,
        DelegationRecord,
        DelegationStatus,
        EventEntry,
        MemberRecord,
        NewRoomEvent,
        PageKey,
        RecordExistsError,
        RecordNotFoundError,
        RecordStore,
        RoomEvent,
        RoomExistsError,
        RoomGrant,
        RoomNotFoundError,
        RoomRecord,
        RoomStore,
        RunEndedError,
        RunRecord,
        RunStatus,
        RunStore,
        SessionBusyError,
        SessionExistsError,
        SessionNotFoundError,
        SessionRecord,
        SessionStore,
        Store,
        StoreError,
        WaitingRecord,
    )
    from agentkit.stores._memory import MemoryStore
    from agentkit.stores._notify import Notifications, Subscription, notifications_of
    from agentkit.stores._open import open_store
    from agentkit.stores._postgres import PostgresStore
    from agentkit.stores._queue import QueuedRecord, QueuedStatus, QueueStore
    from agentkit.stores._rooms import DELEGATION_ENDED, DELEGATION_STATUSES
    from agentkit.stores._sqlite import SQLiteStore

_EXPORTS: dict[str, str] = {
    "RecordStore": "agentkit.stores._base",
    "QueueStore": "agentkit.stores._queue",
    "QueuedRecord": "agentkit.stores._queue",
    "QueuedStatus": "agentkit.stores._queue",
    "RecordNotFoundError": "agentkit.stores._base",
    "RecordExistsError": "agentkit.stores._base",
    "PageKey": "agentkit.stores._base",
    "MemberRecord": "agentkit.stores._base",
    "ConversationRecord": "agentkit.stores._base",
    "AgentRecord": "agentkit.stores._base",
    "DELEGATION_ENDED": "agentkit.stores._rooms",
    "DELEGATION_STATUSES": "agentkit.stores._rooms",
    "DelegationRecord": "agentkit.stores._base",
    "DelegationStateError": "agentkit.errors",
    "DelegationStatus": "agentkit.stores._base",
    "EventEntry": "agentkit.stores._base",
    "MemoryStore": "agentkit.stores._memory",
    "NewRoomEvent": "agentkit.stores._base",
    "Notifications": "agentkit.stores._notify",
    "OffsetError": "agentkit.errors",
    "PostgresStore": "agentkit.stores._postgres",
    "RoomEvent": "agentkit.stores._base",
    "RoomExistsError": "agentkit.stores._base",
    "RoomGrant": "agentkit.stores._base",
    "RoomNotFoundError": "agentkit.stores._base",
    "RoomRecord": "agentkit.stores._base",
    "RoomStore": "agentkit.stores._base",
    "RunEndedError": "agentkit.stores._base",
    "RunRecord": "agentkit.stores._base",
    "RunStatus": "agentkit.stores._base",
    "RunStore": "agentkit.stores._base",
    "SQLiteStore": "agentkit.stores._sqlite",
    "SessionBusyError": "agentkit.stores._base",
    "SessionExistsError": "agentkit.stores._base",
    "SessionNotFoundError": "agentkit.stores._base",
    "SessionRecord": "agentkit.stores._base",
    "SessionStore": "agentkit.stores._base",
    "Store": "agentkit.stores._base",
    "StoreError": "agentkit.stores._base",
    "StoreLocationError": "agentkit.errors",
    "StoreUnavailableError": "agentkit.errors",
    "Subscription": "agentkit.stores._notify",
    "WaitingRecord": "agentkit.stores._base",
    "notifications_of": "agentkit.stores._notify",
    "open_store": "agentkit.stores._open",
}

__all__ = [
    "DELEGATION_ENDED",
    "DELEGATION_STATUSES",
    "AgentRecord",
    "ConversationRecord",
    "DelegationRecord",
    "DelegationStateError",
    "DelegationStatus",
    "EventEntry",
    "MemberRecord",
    "MemoryStore",
    "NewRoomEvent",
    "Notifications",
    "OffsetError",
    "PageKey",
    "PostgresStore",
    "QueueStore",
    "QueuedRecord",
    "QueuedStatus",
    "RecordExistsError",
    "RecordNotFoundError",
    "RecordStore",
    "RoomEvent",
    "RoomExistsError",
    "RoomGrant",
    "RoomNotFoundError",
    "RoomRecord",
    "RoomStore",
    "RunEndedError",
    "RunRecord",
    "RunStatus",
    "RunStore",
    "SQLiteStore",
    "SessionBusyError",
    "SessionExistsError",
    "SessionNotFoundError",
    "SessionRecord",
    "SessionStore",
    "Store",
    "StoreError",
    "StoreLocationError",
    "StoreUnavailableError",
    "Subscription",
    "WaitingRecord",
    "notifications_of",
    "open_store",
]

# Hidden from type checkers: a module `__getattr__` would make every misspelt name
# imported from this package type as `Any` instead of an error.
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
