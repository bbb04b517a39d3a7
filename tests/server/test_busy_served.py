"""Busy conversations against real `agentkit serve` processes: prompts queued with
`ifBusy: enqueue` survive a SIGKILL of the server and run, in order, once it is started
again (the killed run ended as interrupted by the lease sweep); two servers on one
PostgreSQL database start each queued prompt exactly once, in order.

The conformance suite covers the rest through both clients (order, cancel_queued,
interrupt); `test_openapi_conformance.py` the routes' documents.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from agentkit.client import RemoteMachine
from agentkit.conversations import ConversationView
from agentkit.stores import PostgresStore
from support.pg import postgres_url
from support.serve_process import ServeProcess
from support.views import view_where

# Short leases: a killed server's run ends about a second after the restart.
SERVE_ARGS = ["--lease-duration", "1", "--heartbeat-interval", "0.2", "--poll-interval", "0.2"]


def _settled(turns: int) -> Callable[[ConversationView], bool]:
    return lambda view: len(view.turns) == turns and not view.is_running and not view.queued


@pytest.mark.anyio
async def test_queued_prompts_run_after_a_sigkill_and_a_restart(tmp_path: Path) -> None:
    first = ServeProcess(tmp_path / "a", args=SERVE_ARGS)
    try:
        token = await first.add_member("ada", "editor")
        async with RemoteMachine(first.url, token) as ada:
            conversation = await ada.create_conversation()
            running = await conversation.prompt("hang")
            queued = [
                await conversation.prompt(text, if_busy="enqueue")
                for text in ("say one", "say two", "count")
            ]
            assert [q.status for q in queued] == ["queued"] * 3
            # reject is still the default
            async with httpx.AsyncClient(base_url=first.url) as http:
                refused = await http.post(
                    f"/v1/conversations/{conversation.id}/runs",
                    json={"prompt": "say no"},
                    headers={"Authorization": f"Bearer {token}"},
                )
            assert refused.status_code == 409
            assert refused.json()["error"]["code"] == "conversation_busy"
        first.process.kill()
        first.process.wait(10)
    finally:
        first.stop()
    second = ServeProcess(tmp_path / "b", db=str(first.db), args=SERVE_ARGS)
    try:
        async with RemoteMachine(second.url, token) as ada:
            view = await view_where(ada, conversation.id, _settled(8))
    finally:
        second.stop()
    assert [t.run_id for t in view.turns[::2]] == [running.run_id] + [q.run_id for q in queued]
    agent = view.turns[1::2]
    assert [t.status for t in agent] == ["interrupted", "completed", "completed", "completed"]
    # each one sees the turns before it: `count` is the fourth prompt
    assert [t.text for t in agent[1:]] == ["one", "two", "users=4"]


@pytest.mark.postgres
@pytest.mark.anyio
async def test_two_servers_start_each_queued_prompt_once(tmp_path: Path) -> None:
    with postgres_url("queue") as database:
        servers = [ServeProcess(tmp_path / name, db=database, args=SERVE_ARGS) for name in "ab"]
        try:
            token = await servers[0].add_member("ada", "editor")
            async with (
                RemoteMachine(servers[0].url, token) as via_a,
                RemoteMachine(servers[1].url, token) as via_b,
            ):
                clients = (via_a, via_b)
                conversation_id = (await via_a.create_conversation(visibility="shared")).id
                running = await via_a.prompt(conversation_id, "hang")
                queued = [
                    await clients[n % 2].prompt(conversation_id, f"say {n}", if_busy="enqueue")
                    for n in range(6)
                ]
                assert [q.status for q in queued] == ["queued"] * 6
                # cancelled through the other server: both drain from then on
                assert await via_b.cancel(conversation_id)
                view = await view_where(via_b, conversation_id, _settled(14))
        finally:
            for server in servers:
                server.stop()
        store = PostgresStore(database)
        try:
            runs = await store.list_runs(conversation_id)
            assert await store.list_queued(conversation_id) == []
        finally:
            await store.aclose()
    expected = [running.run_id] + [q.run_id for q in queued]
    assert [run.id for run in runs] == expected, "each queued prompt started once, in order"
    assert [t.run_id for t in view.turns[::2]] == expected
    assert [t.text for t in view.turns[3::2]] == [str(n) for n in range(6)]
