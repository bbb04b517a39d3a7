"""Rooms over HTTP, against a real `agentkit serve` with the rooms example's extension."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.http_api import bearer, sse_events
from support.served import Served, served

LOBBY = "/v1/rooms/lobby"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    with served(
        tmp_path, "--extension", "examples.rooms.extension:setup", provider="test"
    ) as running:
        yield running


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _until(http: httpx.Client, url: str, token: str, check: Any) -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = http.get(url, headers=bearer(token)).json()
        if check(body):
            return body
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting on {url}: {body}")


def test_rooms_grants_and_publishing(server: Served, http: httpx.Client) -> None:
    ada = server.add_member("ada", "editor")
    bob = server.add_member("bob", "editor")
    ada_id = http.get("/v1/me", headers=bearer(ada)).json()["id"]
    bob_id = http.get("/v1/me", headers=bearer(bob)).json()["id"]
    created = http.post("/v1/rooms", json={"name": "lab"}, headers=bearer(ada))
    assert created.status_code == 201
    room = created.json()
    # Members own and are granted by id: a later member named "bob" is someone else.
    assert room["owners"] == [ada_id] and room["head"] == 0
    url = f"/v1/rooms/{room['id']}"
    # bob sees the lobby (a grant to every member) but not ada's room.
    listed = [r["id"] for r in http.get("/v1/rooms", headers=bearer(bob)).json()["rooms"]]
    assert listed == ["lobby"]
    hidden = http.get(url, headers=bearer(bob))
    assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "room_not_found"
    granted = http.put(
        f"{url}/grants/member:bob",
        json={"read": ["chat.*"], "publish": ["chat.message"]},
        headers=bearer(ada),
    )
    assert granted.status_code == 200
    assert granted.json() == {
        "participant": f"member:{bob_id}",
        "read": ["chat.*"],
        "publish": ["chat.message"],
    }
    denied = http.put(f"{url}/grants/member:bob", json={"read": ["*"]}, headers=bearer(bob))
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "access_denied"
    message = {"type": "chat.message", "payload": {"text": "hi"}}
    one = http.post(f"{url}/events", json=message, headers=bearer(bob))
    assert one.status_code == 201 and one.json() == {"positions": [1]}
    batch = {"events": [{"type": "chat.message"}, {"type": "secret.plan", "payload": 1}]}
    refused = http.post(f"{url}/events", json=batch, headers=bearer(bob))
    assert refused.status_code == 403
    mixed = {"events": [{"type": "chat.message"}, {"type": "notes.x", "payload": [1]}]}
    assert http.post(f"{url}/events", json=mixed, headers=bearer(ada)).json() == {
        "positions": [2, 3]
    }
    page = http.get(f"{url}/events", params={"after": 1}, headers=bearer(bob)).json()["events"]
    assert [e["position"] for e in page] == [2]  # notes.x is not bob's to read
    typed = http.get(
        f"{url}/events", params={"types": "notes.*,chat.message"}, headers=bearer(ada)
    ).json()["events"]
    assert [e["type"] for e in typed] == ["chat.message", "chat.message", "notes.x"]
    bad = http.post(f"{url}/events", json={"type": "Not A Type"}, headers=bearer(ada))
    assert bad.status_code == 422
    assert http.get(f"{url}/events", params={"limit": 0}, headers=bearer(ada)).status_code == 422
    grants = http.get(f"{url}/grants", headers=bearer(ada)).json()["grants"]
    assert [g["participant"] for g in grants] == [f"member:{bob_id}"]
    nobody = http.put(f"{url}/grants/member:nobody", json={"read": ["*"]}, headers=bearer(ada))
    assert nobody.status_code == 422  # no member of that name: nothing a newcomer could take


def test_the_extensions_agents_and_a_stream(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "editor")
    said = http.post(
        f"{LOBBY}/events",
        json={"type": "chat.message", "payload": {"text": "count these four words"}},
        headers=bearer(token),
    )
    assert said.status_code == 201
    position = said.json()["positions"][0]
    events: list[dict[str, Any]] = []
    with http.stream(
        "GET", f"{LOBBY}/events/stream", params={"types": "measurements.*"}, headers=bearer(token)
    ) as response:
        assert response.status_code == 200
        for event in sse_events(response):
            events.append(event)
            break
    derived = events[0]
    assert derived["event"] == "measurements.word_count"
    assert derived["data"]["author"] == "agent:message-statistics"
    assert derived["data"]["payload"]["words"] == 4
    assert derived["data"]["payload"]["position"] == position
    assert derived["id"] == derived["data"]["position"]
    # Resuming after it with Last-Event-ID: the answer to a question comes next.
    asked = http.post(
        f"{LOBBY}/events",
        json={"type": "chat.question", "payload": {"text": "What is a room?"}},
        headers=bearer(token),
    )
    assert asked.status_code == 201
    with http.stream(
        "GET",
        f"{LOBBY}/events/stream",
        params={"types": "chat.answer"},
        headers={**bearer(token), "Last-Event-ID": str(derived["id"])},
    ) as response:
        answer = next(sse_events(response))
    assert answer["event"] == "chat.answer" and answer["data"]["author"] == "agent:answerer"
    assert answer["data"]["payload"]["reply_to"] == asked.json()["positions"][0]
    agents = http.get(f"{LOBBY}/agents", headers=bearer(token)).json()["agents"]
    assert {a["agent"] for a in agents} == {"message-statistics", "answerer"}


def test_delegations_over_http(server: Served, http: httpx.Client) -> None:
    owner = server.add_member("olga", "owner")  # machine owners own every room
    accepted = http.post(
        f"{LOBBY}/delegations",
        json={"agent": "answerer", "task": "Summarise the room."},
        headers=bearer(owner),
    )
    assert accepted.status_code == 202
    body = accepted.json()
    assert body["status"] == "pending" and accepted.headers["location"].endswith(body["id"])
    done = _until(
        http,
        f"{LOBBY}/delegations/{body['id']}",
        owner,
        lambda record: record["status"] in ("completed", "failed"),
    )
    assert done["status"] == "completed" and isinstance(done["result"], str)
    kinds = [
        e["type"]
        for e in http.get(
            f"{LOBBY}/events", params={"types": "delegation.*"}, headers=bearer(owner)
        ).json()["events"]
    ]
    assert kinds == ["delegation.requested", "delegation.running", "delegation.completed"]
    unknown = http.post(
        f"{LOBBY}/delegations", json={"agent": "nobody", "task": 1}, headers=bearer(owner)
    )
    assert unknown.status_code == 404
    member = server.add_member("bob", "editor")  # no grant to delegate in the lobby
    refused = http.post(
        f"{LOBBY}/delegations", json={"agent": "answerer", "task": 1}, headers=bearer(member)
    )
    assert refused.status_code == 403
    assert json.loads(refused.content)["error"]["code"] == "access_denied"


def test_owners_govern_agents_through_the_stored_grant(server: Served, http: httpx.Client) -> None:
    owner = server.add_member("olga", "owner")
    grant_url = f"{LOBBY}/grants/agent:message-statistics"
    words = {"type": "chat.message", "payload": {"text": "two words"}}

    def measured() -> list[dict[str, Any]]:
        page = http.get(
            f"{LOBBY}/events",
            params={"types": "measurements.*,agent.failed"},
            headers=bearer(owner),
        ).json()
        return list(page["events"])

    # Revoked: the agent reads nothing, so it answers nothing.
    revoked = http.put(grant_url, json={"read": [], "publish": []}, headers=bearer(owner))
    assert revoked.status_code == 200
    http.post(f"{LOBBY}/events", json=words, headers=bearer(owner))
    time.sleep(1.0)
    assert measured() == []
    grants = {
        g["participant"]: g
        for g in http.get(f"{LOBBY}/grants", headers=bearer(owner)).json()["grants"]
    }
    assert grants["agent:message-statistics"]["read"] == []  # kept, not dropped

    # Narrowed: it reads again but may not publish its measurement: agent.failed says so.
    narrowed = {"read": ["chat.*"], "publish": []}
    assert http.put(grant_url, json=narrowed, headers=bearer(owner)).status_code == 200
    http.post(f"{LOBBY}/events", json=words, headers=bearer(owner))
    failed = _until(http, f"{LOBBY}/events?types=agent.failed", owner, lambda body: body["events"])[
        "events"
    ]
    assert "outside the agent's grants" in failed[0]["payload"]["error"]
    assert not any(e["type"].startswith("measurements.") for e in measured())


def test_delegation_lifecycle_over_http(server: Served, http: httpx.Client) -> None:
    owner = server.add_member("olga", "owner")
    bob = server.add_member("bob", "editor")
    asked = http.post(
        f"{LOBBY}/delegations",
        json={"agent": "answerer", "task": "Summarise.", "deadline": 30},
        headers=bearer(owner),
    )
    assert asked.status_code == 202
    record = asked.json()
    assert round(record["deadline"] - record["createdAt"]) == 30 and record["attempts"] == 0
    url = f"{LOBBY}/delegations/{record['id']}"
    done = _until(http, url, owner, lambda r: r["status"] == "completed")
    assert done["attempts"] == 1
    ended = http.post(f"{url}/cancel", headers=bearer(owner))
    assert ended.status_code == 409 and ended.json()["error"]["code"] == "delegation_ended"
    missing = http.post(f"{LOBBY}/delegations/nope/cancel", headers=bearer(owner))
    assert missing.status_code == 404
    hidden = http.post(f"{url}/cancel", headers=bearer(bob))  # not bob's, not visible to him
    assert hidden.status_code == 404
    bad = http.post(
        f"{LOBBY}/delegations", json={"agent": "answerer", "deadline": 0}, headers=bearer(owner)
    )
    assert bad.status_code == 422
    listed = http.get(
        f"{LOBBY}/delegations", params={"status": "completed,failed"}, headers=bearer(owner)
    ).json()
    assert [d["id"] for d in listed["delegations"]] == [record["id"]]
    after = http.get(
        f"{LOBBY}/delegations", params={"after": record["id"]}, headers=bearer(owner)
    ).json()
    assert after["delegations"] == []
    wrong = http.get(f"{LOBBY}/delegations", params={"status": "done"}, headers=bearer(owner))
    assert wrong.status_code == 422
    agents = http.get(f"{LOBBY}/agents", headers=bearer(owner)).json()["agents"]
    assert {(a["agent"], a["state"], a["fault"]) for a in agents} == {
        ("message-statistics", "running", None),
        ("answerer", "running", None),
    }


def test_the_run_behind_an_answer_is_read_through_the_room(
    server: Served, http: httpx.Client
) -> None:
    ada = server.add_member("ada", "editor")
    owner = server.add_member("olga", "owner")
    asked = http.post(
        f"{LOBBY}/events",
        json={"type": "chat.question", "payload": {"text": "What is a room?"}},
        headers=bearer(ada),
    )
    question = asked.json()["positions"][0]
    answers = _until(
        http,
        f"{LOBBY}/events?types=chat.answer",
        ada,
        lambda body: body["events"],
    )["events"]
    answer = answers[0]
    assert answer["causedBy"] == question and answer["runId"]
    run = http.get(f"{LOBBY}/events/{answer['position']}/run", headers=bearer(ada))
    assert run.status_code == 200
    body = run.json()
    assert body["position"] == answer["position"] and body["run"]["id"] == answer["runId"]
    assert body["events"][0]["event"]["type"] == "turn_start"
    # The question was a member's: no run behind it.
    none = http.get(f"{LOBBY}/events/{question}/run", headers=bearer(ada))
    assert none.status_code == 404 and none.json()["error"]["code"] == "run_not_found"
    # A member who may read the answers but not all the agent reads: not for them.
    carl = server.add_member("carl", "editor")
    http.put(
        f"{LOBBY}/grants/member:carl",
        json={"read": ["chat.answer"], "publish": []},
        headers=bearer(owner),
    )
    narrow = http.get(f"{LOBBY}/events/{answer['position']}/run", headers=bearer(carl))
    assert narrow.status_code == 404
    assert http.get(f"{LOBBY}/events/0/run", headers=bearer(ada)).status_code == 422


def test_a_full_disk_answers_a_storage_error_not_a_traceback(tmp_path: Path) -> None:
    from support.full_disk import small_filesystem

    with (
        small_filesystem("8m") as disk,
        served(
            tmp_path,
            "--extension",
            "examples.rooms.extension:setup",
            provider="test",
            db=disk.path / "machine.db",
        ) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
    ):
        ada = server.add_member("ada", "editor")
        said = {"type": "chat.message", "payload": {"text": "x " * 2000}}
        assert http.post(f"{LOBBY}/events", json=said, headers=bearer(ada)).status_code == 201
        disk.fill()
        full = http.post(f"{LOBBY}/events", json={"events": [said] * 50}, headers=bearer(ada))
        assert full.status_code == 503, full.text
        assert full.json()["error"]["code"] == "store_unavailable"
        disk.free()
        again = http.post(f"{LOBBY}/events", json=said, headers=bearer(ada))
        assert again.status_code == 201
        server.stop()
        assert server.process.stderr is not None
        log = server.process.stderr.read()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
