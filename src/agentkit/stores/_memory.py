"""A store that keeps everything in process memory (tests, short-lived scripts)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from agentkit.providers._base import Message
from agentkit.stores._base import (
    EventEntry,
    RunRecord,
    RunStatus,
    SessionExistsError,
    SessionNotFoundError,
    SessionRecord,
    StoreError,
)

__all__ = ["MemoryStore"]


class MemoryStore:
    """Everything in dicts; nothing survives the process."""

    def __init__(self) -> None:
        self._sessions: dict[str, SessionRecord] = {}
        self._transcripts: dict[str, list[Message]] = {}
        self._runs: dict[str, RunRecord] = {}
        self._events: dict[str, list[EventEntry]] = {}

    async def create_session(
        self, session_id: str, agent_id: str, metadata: dict[str, Any] | None = None
    ) -> SessionRecord:
        if session_id in self._sessions:
            raise SessionExistsError(f"session {session_id!r} already exists")
        now = time.time()
        record = SessionRecord(session_id, agent_id, now, now, dict(metadata or {}))
        self._sessions[session_id] = record
        self._transcripts[session_id] = []
        return record

    async def get_session(self, session_id: str) -> SessionRecord | None:
        return self._sessions.get(session_id)

    def _session(self, session_id: str) -> SessionRecord:
        try:
            return self._sessions[session_id]
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r}") from None

    async def update_session(self, session_id: str, metadata: dict[str, Any]) -> SessionRecord:
        record = replace(
            self._session(session_id), metadata=dict(metadata), updated_at=time.time()
        )
        self._sessions[session_id] = record
        return record

    async def list_sessions(self, agent_id: str | None = None) -> list[SessionRecord]:
        return [s for s in self._sessions.values() if agent_id is None or s.agent_id == agent_id]

    async def delete_session(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._transcripts.pop(session_id, None)
        for run_id in [r.id for r in self._runs.values() if r.session_id == session_id]:
            del self._runs[run_id]
            self._events.pop(run_id, None)

    async def load_transcript(self, session_id: str) -> list[Message]:
        self._session(session_id)
        return list(self._transcripts[session_id])

    async def append_transcript(self, session_id: str, messages: Sequence[Message]) -> None:
        self._session(session_id)
        self._transcripts[session_id].extend(messages)
        old = self._sessions[session_id]
        # A direct constructor call: `dataclasses.replace` costs several times more.
        self._sessions[session_id] = SessionRecord(
            old.id, old.agent_id, old.created_at, time.time(), old.metadata
        )

    async def truncate_transcript(self, session_id: str, length: int) -> None:
        self._session(session_id)
        del self._transcripts[session_id][length:]

    async def create_run(self, run: RunRecord) -> None:
        self._session(run.session_id)
        if run.id in self._runs:
            raise StoreError(f"run {run.id!r} already exists")
        self._runs[run.id] = run
        self._events[run.id] = []

    async def finish_run(self, run_id: str, status: RunStatus, finished_at: float) -> None:
        run = self._runs.get(run_id)
        if run is not None:
            self._runs[run_id] = RunRecord(
                run.id, run.session_id, run.agent_id, status, run.created_at, finished_at
            )

    async def get_run(self, run_id: str) -> RunRecord | None:
        return self._runs.get(run_id)

    async def list_runs(self, session_id: str) -> list[RunRecord]:
        return [r for r in self._runs.values() if r.session_id == session_id]

    async def append_events(self, run_id: str, entries: Sequence[EventEntry]) -> None:
        log = self._events.setdefault(run_id, [])
        last = log[-1].offset if log else -1
        for entry in entries:
            if entry.offset <= last:
                raise ValueError(f"offset {entry.offset} does not follow {last} in run {run_id}")
            last = entry.offset
        log.extend(entries)

    async def read_events(self, run_id: str, after: int = -1) -> list[EventEntry]:
        return [e for e in self._events.get(run_id, []) if e.offset > after]

    async def aclose(self) -> None:
        return None
