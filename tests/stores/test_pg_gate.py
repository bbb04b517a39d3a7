"""The PostgreSQL pool's gate: callers served in arrival order, those that accept work
(`first`) ahead of the others, but never more than `_FIRST_AHEAD` of them at once."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from agentkit.stores._pg_connections import _FIRST_AHEAD, _Gate

pytestmark = pytest.mark.anyio


async def _order(arrivals: list[tuple[str, bool]]) -> list[str]:
    """The order in which callers arriving (name, first) at a full gate of one place get
    it, each holding it a moment."""
    gate = _Gate(1)
    await gate.acquire()
    served: list[str] = []

    async def caller(name: str, first: bool) -> None:
        await gate.acquire(first)
        served.append(name)
        await anyio.lowlevel.checkpoint()
        gate.release()

    async with anyio.create_task_group() as group:
        for name, first in arrivals:
            group.start_soon(caller, name, first)
            await anyio.sleep(0.001)  # they arrive in this order
        gate.release()
    return served


async def test_callers_that_go_first_are_served_ahead_in_their_own_order() -> None:
    arrivals = [("a", False), ("b", False), ("c", True), ("d", True), ("e", False)]
    assert await _order(arrivals) == ["c", "d", "a", "b", "e"]


async def test_a_stream_of_first_callers_does_not_starve_the_others() -> None:
    firsts = [(f"f{i}", True) for i in range(_FIRST_AHEAD + 3)]
    served = await _order([("a", False), *firsts])
    assert served.index("a") == _FIRST_AHEAD
    assert [name for name in served if name != "a"] == [name for name, _ in firsts]


async def test_a_cancelled_waiter_leaves_its_place() -> None:
    gate = _Gate(1)
    await gate.acquire()
    with anyio.move_on_after(0.01):
        await gate.acquire(True)
    gate.release()
    with anyio.fail_after(1):
        await gate.acquire()  # the place was not lost to the cancelled waiter
