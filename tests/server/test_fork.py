"""`POST /v1/conversations/{id}/fork` against real `agentkit serve` processes, on SQLite and
on PostgreSQL: the wire (201 with a Location, the errors and the field they name), the
copied runs read through the run routes, and `RemoteMachine.fork` under asyncio and trio.

What a fork holds and who may fork is checked for both clients by the conformance suite
(`check_fork*`); these tests check what only the HTTP API shows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentkit.client import RemoteMachine
from agentkit.conversations import ConversationError, OutputEvent, TextPart
from support.http_api import bearer, sse_events
from support.pg import postgres_url
from support.serve_process import ServeProcess


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServeProcess]:
    """One server for the module, on a SQLite file or a PostgreSQL schema of its own."""
    folder = tmp_path_factory.mktemp(f"fork-{request.param}")
    if request.param == "sqlite":
        process = ServeProcess(folder)
        yield process
        process.stop()
        return
    with postgres_url("fork") as url:
        process = ServeProcess(folder, db=url)
        yield process
        process.stop()


@pytest.fixture(scope="module")
def http(server: ServeProcess) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _member(server: ServeProcess, role: str) -> str:
    import anyio

    return anyio.run(server.add_member, f"{role}-{uuid.uuid4().hex[:8]}", role)


def _run(http: httpx.Client, token: str, conversation: str, prompt: str) -> str:
    """Prompt, follow the run to its end; its text."""
    started = http.post(
        f"/v1/conversations/{conversation}/runs", json={"prompt": prompt}, headers=bearer(token)
    )
    assert started.status_code == 202, started.text
    return _text(http, token, conversation, started.json()["runId"])


def _text(http: httpx.Client, token: str, conversation: str, run_id: str) -> str:
    url = f"/v1/conversations/{conversation}/runs/{run_id}/events"
    with http.stream("GET", url, headers=bearer(token)) as response:
        assert response.status_code == 200, response.read()
        events = list(sse_events(response))
    assert events[-1]["event"] == "completed", events
    return "".join(e["data"]["part"]["text"] for e in events if e["event"] == "text")


def _fork(http: httpx.Client, token: str, conversation: str, body: Any = None) -> httpx.Response:
    return http.post(
        f"/v1/conversations/{conversation}/fork",
        headers=bearer(token),
        **({} if body is None else {"json": body}),
    )


def _error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    return error


def test_fork_over_http(server: ServeProcess, http: httpx.Client) -> None:
    """201 with the fork's details and its Location; the copied runs are read by the run
    routes and followed; the fork's model sees the kept turns; the errors name `turn`."""
    ada = _member(server, "editor")
    made = http.post(
        "/v1/conversations",
        json={"name": "Plans", "visibility": "shared", "instructions": "Be brief."},
        headers=bearer(ada),
    )
    original = made.json()["id"]
    assert _run(http, ada, original, "say one") == "one"
    assert _run(http, ada, original, "say two") == "two"
    response = _fork(http, ada, original, {"turn": 1})
    assert response.status_code == 201, response.text
    fork = response.json()
    assert response.headers["location"] == f"/v1/conversations/{fork['id']}"
    assert http.get(response.headers["location"], headers=bearer(ada)).json() == fork
    assert (fork["name"], fork["visibility"], fork["instructions"]) == (
        "Plans (fork)",
        "private",
        "Be brief.",
    )
    assert [(t["role"], t["status"]) for t in fork["turns"]] == [
        ("user", "completed"),
        ("agent", "completed"),
    ]
    copied = fork["turns"][1]["runId"]
    stored = http.get(f"/v1/runs/{copied}", headers=bearer(ada)).json()
    assert stored["run"]["id"] == copied and stored["run"]["sessionId"] == fork["id"]
    assert stored["run"]["status"] == "completed"
    first = http.get(f"/v1/conversations/{original}", headers=bearer(ada)).json()["turns"]
    source = http.get(f"/v1/runs/{first[1]['runId']}", headers=bearer(ada)).json()
    assert stored["events"] == source["events"]  # the same log, under the new id
    runs = http.get("/v1/runs", params={"session": fork["id"]}, headers=bearer(ada)).json()
    assert [run["id"] for run in runs["runs"]] == [copied]
    assert _text(http, ada, fork["id"], copied) == "one"
    assert _run(http, ada, fork["id"], "history") == "u:say one | a:one | u:history"
    whole = _fork(http, ada, original)  # no body: every ended turn
    assert whole.status_code == 201 and len(whole.json()["turns"]) == 4
    named = _fork(http, ada, original, {"name": "Other plans", "turn": 0})
    assert named.json()["name"] == "Other plans" and named.json()["turns"] == []
    for body in ({"turn": 3}, {"turn": -1}, {"turn": "1"}, {"turn": 1.0}, {"turn": True}):
        error = _error(_fork(http, ada, original, body), 422)
        assert (error["code"], error["field"]) == ("invalid", "turn"), body
    error = _error(_fork(http, ada, original, {"name": "x" * 201}), 422)
    assert error["field"] == "name"
    assert _error(_fork(http, ada, original, {"turns": 1}), 422)["field"] == "turns"
    after = http.get(f"/v1/conversations/{original}", headers=bearer(ada)).json()["turns"]
    assert after == first  # the original is as it was


def test_fork_access_over_http(server: ServeProcess, http: httpx.Client) -> None:
    """Another member's fork is missing to the original's creator; a viewer gets 403; a
    conversation the caller cannot see, 404; a deleted agent's conversation, 409."""
    ada, bob = _member(server, "editor"), _member(server, "editor")
    vic, olga = _member(server, "viewer"), _member(server, "owner")
    shared = http.post(
        "/v1/conversations", json={"visibility": "shared"}, headers=bearer(ada)
    ).json()["id"]
    _run(http, ada, shared, "say hi")
    forked = _fork(http, bob, shared)
    assert forked.status_code == 201, forked.text
    fork = forked.json()
    assert _error(http.get(f"/v1/conversations/{fork['id']}", headers=bearer(ada)), 404)[
        "code"
    ] == ("conversation_not_found")
    copied = fork["turns"][1]["runId"]
    assert _error(http.get(f"/v1/runs/{copied}", headers=bearer(ada)), 404)["code"] == (
        "run_not_found"
    )
    assert _error(_fork(http, vic, shared), 403)["code"] == "access_denied"
    private = http.post("/v1/conversations", json={}, headers=bearer(ada)).json()["id"]
    for token in (bob, vic, olga):
        assert _error(_fork(http, token, private), 404)["code"] == "conversation_not_found"
    assert _error(_fork(http, ada, str(uuid.uuid4())), 404)["code"] == "conversation_not_found"
    name = f"gone-{uuid.uuid4().hex[:6]}"
    put = http.put(f"/v1/agents/{name}", json={"instructions": "x"}, headers=bearer(olga))
    assert put.status_code == 201, put.text
    mine = http.post("/v1/conversations", json={"agent": name}, headers=bearer(olga)).json()
    assert http.delete(f"/v1/agents/{name}", headers=bearer(olga)).status_code == 204
    assert _error(_fork(http, olga, mine["id"]), 409)["code"] == "agent_deleted"


@pytest.mark.anyio
async def test_remote_fork_while_a_run_goes(server: ServeProcess) -> None:
    """`RemoteMachine.fork` while the original's run goes: the fork holds the ended turns
    only and takes a prompt at once, whose model sees exactly those; the original's run
    is not disturbed (its end is the original's only)."""
    token = await server.add_member(f"ada-{uuid.uuid4().hex[:8]}", "editor")
    async with RemoteMachine(server.url, token) as client:
        conversation = await client.create_conversation()
        first = await conversation.prompt("say one")
        async for _ in client.follow(conversation.id, first.run_id):
            pass
        await conversation.prompt("hang")
        fork = await client.fork(conversation.id)
        assert [t.text for t in fork.turns] == ["say one", "one"] and not fork.is_running
        accepted = await client.prompt(fork.id, "history")
        text = "".join(
            [
                event.part.text
                async for event in client.follow(fork.id, accepted.run_id)
                if isinstance(event, OutputEvent) and isinstance(event.part, TextPart)
            ]
        )
        assert text == "u:say one | a:one | u:history"
        with pytest.raises(ConversationError, match="turn"):
            await client.fork(conversation.id, turn=2)
        assert (await conversation.get()).is_running
        assert await conversation.cancel()
        assert len((await conversation.get()).turns) == 4
        assert len((await client.get_conversation(fork.id)).turns) == 4
