"""Run leases: who executes a run, and what happens to runs whose process died.

A runtime records itself (`Runtime.instance_id`) as the owner of every run it executes and
renews each run's lease every `heartbeat_interval` seconds. A run whose lease has expired
belongs to nobody: its process stopped (killed, crashed, its machine lost) or could not
reach the store for a whole lease. Every runtime sharing the store ends such runs when it
opens and then at each heartbeat, so no run stays `running` forever: the run gets
`status == "error"` with the reason `INTERRUPTED_REASON`, and its stored log gets the usual
final block (`error`, then `turn_end`), so every stored log still ends with exactly one.

Ending an expired run is one conditional transaction of the store (`finish_run` with
`expired_by`): two runtimes sweeping at once end it once, and an owner that renewed its
lease at the last moment keeps its run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

import anyio

from agentkit.events import ErrorEvent, TurnEnd, TurnStart
from agentkit.stores import EventEntry, RunRecord, Store, StoreError

__all__ = [
    "DEFAULT_HEARTBEAT_INTERVAL",
    "DEFAULT_LEASE_DURATION",
    "INTERRUPTED_REASON",
    "LeaseKeeper",
    "end_expired_runs",
]

_logger = logging.getLogger("agentkit.runtime")

DEFAULT_HEARTBEAT_INTERVAL = 5.0
"""Seconds between two renewals of a runtime's leases (and two sweeps of expired runs)."""

DEFAULT_LEASE_DURATION = 30.0
"""Seconds a run's lease lasts without renewal before any runtime may end the run."""

INTERRUPTED_REASON = "interrupted: its process stopped"
"""The `error` of a run ended because its lease expired."""


async def end_expired_runs(store: Store, now: float) -> list[str]:
    """End every run of `store` whose lease expired before `now`; returns their ids.

    A run whose stored log already ends with `turn_end` (its process died between writing
    its last events and recording its status, with older agentkit versions) gets that
    status and nothing more; any other gets `error` and `turn_end` appended.
    """
    ended = []
    for record in await store.expired_runs(now):
        try:
            if await _end_expired(store, record, now):
                ended.append(record.id)
        except StoreError as exc:
            # Another runtime ended it at the same moment (its events came first), or the
            # store failed: the next sweep looks again.
            _logger.warning("could not end expired run %s: %s", record.id, exc)
    return ended


async def _end_expired(store: Store, record: RunRecord, now: float) -> bool:
    entries = await store.read_events(record.id)
    last = entries[-1].offset if entries else -1
    final = entries[-1].event if entries else None
    if isinstance(final, TurnEnd):
        status = final.status
        errors = [entry.event for entry in entries if isinstance(entry.event, ErrorEvent)]
        error = errors[-1].error if errors and status != "completed" else None
        return await store.finish_run(record.id, status, now, error=error, expired_by=now)
    first = entries[0].event if entries else None
    turn_id = first.turn_id if isinstance(first, TurnStart) else record.id
    duration_ms = max(int((now - record.created_at) * 1000), 0)
    ending = [
        EventEntry(last + 1, ErrorEvent(error=INTERRUPTED_REASON)),
        EventEntry(last + 2, TurnEnd(turn_id=turn_id, status="error", duration_ms=duration_ms)),
    ]
    return await store.finish_run(
        record.id, "error", now, events=ending, error=INTERRUPTED_REASON, expired_by=now
    )


@dataclass
class LeaseKeeper:
    """Renews the leases of one runtime's runs and sweeps expired runs, every
    `interval` seconds, until cancelled.

    `running` gives the ids of the runs the runtime is executing; `lost` is called with
    the id of a run whose lease the runtime no longer holds (another runtime ended it),
    so that the runtime stops it.
    """

    store: Store
    owner: str
    interval: float
    duration: float
    running: Callable[[], Collection[str]]
    lost: Callable[[str], None]
    _failing: bool = False

    async def run(self) -> None:
        """Renew and sweep every `interval` seconds, forever (cancel to stop)."""
        while True:
            await anyio.sleep(self.interval)
            await self.tick()

    async def _still_held(self, run_id: str) -> bool:
        """Whether a run whose lease was not renewed is this owner's running run after
        all: it waited for a person while the renewal ran, and this runtime resumed it."""
        record = await self.store.get_run(run_id)
        return record is not None and record.status == "running" and record.owner == self.owner

    async def tick(self) -> None:
        """One renewal and one sweep. Store failures are logged (once until it recovers),
        never raised: leases are kept again as soon as the store answers."""
        try:
            ids = list(self.running())
            if ids:
                now = time.time()
                kept = await self.store.renew_leases(self.owner, ids, now, now + self.duration)
                for run_id in ids:
                    if run_id not in kept and not await self._still_held(run_id):
                        self.lost(run_id)
            await end_expired_runs(self.store, time.time())
        except Exception as exc:
            if not self._failing:
                _logger.warning("could not renew run leases: %s", exc)
            self._failing = True
        else:
            self._failing = False
