"""A decision that meets a full disk: refused with a storage error, nothing half-written,
the run still waiting; once there is room again the same decision resumes it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from agentkit import Runtime
from agentkit.errors import StoreUnavailableError
from agentkit.events import PermissionRequestEvent
from agentkit.testing import assert_stream_invariants
from support.full_disk import small_filesystem
from support.hitl import RAN, SPEC, bash, provider, tools

pytestmark = pytest.mark.anyio


@pytest.fixture
async def disk() -> AsyncIterator[Any]:
    with small_filesystem("4m") as disk:
        yield disk


async def test_a_decision_on_a_full_disk_changes_nothing_and_is_taken_once_there_is_room(
    disk: Any,
) -> None:
    RAN.clear()
    model = provider(bash("git status"), "all clean")
    runtime = Runtime(
        provider=model,
        store=str(disk.path / "runs.db"),
        agents=[SPEC],
        tools=tools(),
        builtin_tools=False,
    )
    async with runtime:
        store = runtime.store
        run = await runtime.start(SPEC, "check")
        request = None
        async for event in run.events():
            if isinstance(event, PermissionRequestEvent):
                request = event
                break
        assert request is not None
        with anyio.fail_after(10):
            while not run.waiting:  # noqa: ASYNC110 - stored waiting just after the event
                await anyio.sleep(0.005)
        logged = len(await store.read_events(run.id))
        # An input big enough to need new pages of the database (and of its log).
        bigger = {"command": "git status", "note": "x" * 400_000}
        disk.fill()
        with pytest.raises(StoreUnavailableError):
            await runtime.decide(run.id, request.request_id, allow=True, updated_input=bigger)
        disk.free()
        record = await store.get_run(run.id)
        assert record is not None and record.status == "waiting"
        assert len(await store.read_events(run.id)) == logged, "nothing half-written"
        assert RAN == []
        resumed = await runtime.decide(run.id, request.request_id, allow=True, updated_input=bigger)
        with anyio.fail_after(20):
            outcome = await resumed.wait()
        assert outcome.ok and outcome.text == "all clean"
        assert RAN == ["git status"]
        events = [entry.event for entry in await store.read_events(run.id)]
        assert_stream_invariants(events)
        assert [e.type for e in events].count("permission_decision") == 1
