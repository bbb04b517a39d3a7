"""A stream whose reader loses access ends with an `ended` event that says why, against a
real `agentkit serve`: no cut body, no traceback in the server's log."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import httpx

from support.http_api import bearer, sse_events
from support.served import Served, served


def _read_until_ended(http: httpx.Client, url: str, token: str, out: list[dict[str, Any]]) -> None:
    with http.stream("GET", url, headers=bearer(token)) as response:
        assert response.status_code == 200, response.read()
        for event in sse_events(response):
            out.append(event)


def _stderr_after_stop(server: Served) -> str:
    server.stop()
    assert server.process.stderr is not None
    return server.process.stderr.read()


def _wait_for(events: list[dict[str, Any]], count: int) -> None:
    deadline = time.monotonic() + 20
    while len(events) < count and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_room_stream_ends_with_why_when_the_grant_is_revoked(tmp_path: Path) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        ada = server.add_member("ada", "editor")
        bob = server.add_member("bob", "editor")
        room = http.post("/v1/rooms", json={"name": "lab"}, headers=bearer(ada)).json()["id"]
        grant = {"read": ["chat.*"], "publish": ["chat.message"]}
        assert (
            http.put(
                f"/v1/rooms/{room}/grants/member:bob", json=grant, headers=bearer(ada)
            ).status_code
            == 200
        )
        http.post(f"/v1/rooms/{room}/events", json={"type": "chat.message"}, headers=bearer(ada))
        events: list[dict[str, Any]] = []
        reader = threading.Thread(
            target=_read_until_ended,
            args=(
                httpx.Client(base_url=server.url, timeout=30),
                f"/v1/rooms/{room}/events/stream",
                bob,
                events,
            ),
        )
        reader.start()
        _wait_for(events, 1)
        revoke = {"read": [], "publish": []}
        http.put(f"/v1/rooms/{room}/grants/member:bob", json=revoke, headers=bearer(ada))
        http.post(f"/v1/rooms/{room}/events", json={"type": "chat.message"}, headers=bearer(ada))
        reader.join(20)
        assert not reader.is_alive()
        assert events[0]["event"] == "chat.message"
        assert events[-1]["event"] == "ended"
        assert events[-1]["data"]["error"]["code"] == "room_not_found"
        log = _stderr_after_stop(server)
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_a_follow_ends_with_why_when_the_conversation_turns_private(tmp_path: Path) -> None:
    with served(tmp_path) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        ada = server.add_member("ada", "editor")
        vic = server.add_member("vic", "viewer")
        conversation = http.post(
            "/v1/conversations", json={"visibility": "shared"}, headers=bearer(ada)
        ).json()["id"]
        accepted = http.post(
            f"/v1/conversations/{conversation}/runs",
            json={"prompt": "slow 400"},
            headers=bearer(ada),
        ).json()
        url = f"/v1/conversations/{conversation}/runs/{accepted['runId']}/events"
        events: list[dict[str, Any]] = []
        reader = threading.Thread(
            target=_read_until_ended,
            args=(httpx.Client(base_url=server.url, timeout=30), url, vic, events),
        )
        reader.start()
        _wait_for(events, 2)
        private = http.patch(
            f"/v1/conversations/{conversation}",
            json={"visibility": "private"},
            headers=bearer(ada),
        )
        assert private.status_code == 200
        reader.join(20)
        assert not reader.is_alive()
        assert events[-1]["event"] == "ended"
        assert events[-1]["data"]["error"]["code"] == "conversation_not_found"
        assert not any(event["event"] == "completed" for event in events)
        log = _stderr_after_stop(server)
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
