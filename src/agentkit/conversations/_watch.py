"""`watch()`: a conversation's view, delivered at once and after every change.

One task per watch, in the machine's task group. It reads the saved turns; while a run is
going it follows the run's log (live from the runtime, or from the store when another
process executes it or its process died), and otherwise waits for a change made through
this machine (a prompt, a cancel, a rename, a deletion) or for `poll_interval` to pass
(changes made by another process sharing the store). It goes on across runs, by itself,
until it is stopped or the machine closes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from agentkit.conversations._client import WatchCallback, call_watch_callback
from agentkit.conversations._errors import AccessDeniedError, ConversationNotFoundError
from agentkit.conversations._models import ConversationView, Member, Turn, TurnPart
from agentkit.conversations._turns import OutputBuffer, build_turns, part_of
from agentkit.events import TurnEnd

if TYPE_CHECKING:
    from agentkit.conversations._machine import Machine

__all__ = ["Watch"]

_logger = logging.getLogger("agentkit.conversations")


class Watch:
    """One watch of one conversation for one member."""

    def __init__(
        self, machine: Machine, member: Member, conversation_id: str, callback: WatchCallback
    ) -> None:
        self._machine = machine
        self._member = member
        self._id = conversation_id
        self._callback = callback
        self._scope = anyio.CancelScope()
        self._last: ConversationView | None = None
        self._turns: tuple[Turn, ...] = ()

    def stop(self) -> None:
        """Stop the watch: no view is delivered once this has returned."""
        self._scope.cancel()

    async def run(self) -> None:
        with self._scope:
            await self._deliver(ConversationView(loading=True))
            while True:
                if not await self._round():
                    return

    async def _round(self) -> bool:
        """Read, deliver, and wait for the next change; `False` once the watch is over."""
        machine = self._machine
        signal = machine._change_signal(self._id)  # taken first: no change is missed
        try:
            _, _, meta = await machine._visible(self._member, self._id)
            turns, active = await build_turns(machine.store, self._id, meta)
        except (ConversationNotFoundError, AccessDeniedError) as exc:
            await self._deliver(ConversationView(error=str(exc)))
            return False
        except Exception as exc:  # the store failed: said in the view, then tried again
            await self._deliver(
                ConversationView(turns=self._turns, error=f"{type(exc).__name__}: {exc}")
            )
            await anyio.sleep(machine.poll_interval)
            return True
        self._turns = tuple(turns)
        if active is None:
            await self._deliver(ConversationView(turns=self._turns))
            with anyio.move_on_after(machine.poll_interval):
                await signal.wait()
            return True
        await self._follow(active, signal)
        return True

    async def _follow(self, run_id: str, signal: anyio.Event) -> None:
        machine = self._machine
        buffer = OutputBuffer()
        await self._deliver(self._running(run_id, buffer.parts))
        live = machine.runtime.get_run(run_id)
        if live is not None:
            async for entry in live.entries():
                part = part_of(entry.event)
                if part is not None:
                    buffer.add(part)
                    await self._deliver(self._running(run_id, buffer.parts))
            return
        cursor = -1
        while True:
            for entry in await machine.store.read_events(run_id, cursor):
                cursor = entry.offset
                if isinstance(entry.event, TurnEnd):
                    return
                part = part_of(entry.event)
                if part is not None:
                    buffer.add(part)
            await self._deliver(self._running(run_id, buffer.parts))
            if signal.is_set():
                return  # changed through this machine (cancelled, deleted): read again
            with anyio.move_on_after(machine.poll_interval):
                await signal.wait()

    def _running(self, run_id: str, parts: list[TurnPart]) -> ConversationView:
        return ConversationView(
            turns=self._turns,
            output=tuple(parts),
            is_running=True,
            active_run_id=run_id,
        )

    async def _deliver(self, view: ConversationView) -> None:
        if view == self._last:
            return
        self._last = view
        await call_watch_callback(self._callback, view, self._id)
