"""How the routes that start a run answer, against a real `agentkit serve` on loopback,
spoken in HTTP: the run's event stream on create (`Accept: text/event-stream`), the ended
run with `?wait=`, and `POST /v1/runs` (a run without a conversation made first).

The server runs on asyncio only (uvicorn); the clients' side of the same routes, under
asyncio and trio, is in the conformance suite and tests/client/test_remote_runs.py.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from support.http_api import bearer, sse_events
from support.served import Served, served

SSE = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("run-answers")) as running:
        yield running


@pytest.fixture(scope="module")
def editor(server: Served) -> str:
    return server.add_member("ed", "editor")


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _conversation(http: httpx.Client, token: str) -> str:
    created = http.post("/v1/conversations", json={}, headers=bearer(token))
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _events_url(conversation_id: str, run_id: str) -> str:
    return f"/v1/conversations/{conversation_id}/runs/{run_id}/events"


def _read(response: httpx.Response, limit: int | None = None) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for event in sse_events(response):
        events.append(event)
        if limit is not None and len(events) >= limit:
            break
    return events


def _follow(
    http: httpx.Client, token: str, url: str, headers: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    with http.stream("GET", url, headers={**bearer(token), **(headers or {})}) as response:
        assert response.status_code == 200, response.read()
        return _read(response)


def _ids_of(response: httpx.Response) -> tuple[str, str]:
    """The started run's conversation and run, from the answer's head."""
    conversation_id = response.headers["agentkit-conversation-id"]
    run_id = response.headers["agentkit-run-id"]
    assert response.headers["location"] == _events_url(conversation_id, run_id)
    return conversation_id, run_id


def _deltas(events: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["part"]["text"] for e in events if e["event"] == "text_delta"]


def _conversation_ids(http: httpx.Client, token: str) -> set[str]:
    listed = http.get("/v1/conversations", headers=bearer(token))
    return {row["id"] for row in listed.json()["conversations"]}


# --- stream on create ----------------------------------------------------------------------


def test_stream_on_create_shows_a_fast_models_every_delta(http: httpx.Client, editor: str) -> None:
    """The model answers in three chunks at once: the run has ended long before a client
    could open its events route, and the stream on create still has each delta."""
    cid = _conversation(http, editor)
    body = {"prompt": "say abcdefghi"}
    url = f"/v1/conversations/{cid}/runs"
    with http.stream("POST", url, json=body, headers={**bearer(editor), **SSE}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        conversation_id, run_id = _ids_of(response)
        events = _read(response)
    assert conversation_id == cid
    assert _deltas(events) == ["abc", "def", "ghi"]
    assert [e["event"] for e in events] == [*["text_delta"] * 3, "text", "completed"]
    ids = [e["id"] for e in events]
    assert ids == sorted(set(ids)) and all(e["data"]["offset"] == e["id"] for e in events)
    # The events route gives the same events at the same offsets (the stored ones, now
    # that the run has ended), and resumes after each.
    stored = _follow(http, editor, _events_url(cid, run_id))
    assert stored == [e for e in events if e["event"] != "text_delta"]
    for seen in events:
        rest = _follow(http, editor, _events_url(cid, run_id), {"Last-Event-ID": str(seen["id"])})
        assert rest == [e for e in stored if e["id"] > seen["id"]]


def test_stream_on_create_is_the_events_route_while_the_run_goes(
    http: httpx.Client, editor: str
) -> None:
    cid = _conversation(http, editor)
    url = f"/v1/conversations/{cid}/runs"
    body = {"prompt": "slow 20"}
    with http.stream("POST", url, json=body, headers={**bearer(editor), **SSE}) as response:
        _, run_id = _ids_of(response)
        events = sse_events(response)
        first = list(itertools.islice(events, 3))
        followed = _follow(http, editor, _events_url(cid, run_id))  # opened mid-run
        streamed = first + list(events)
    assert streamed == followed
    assert len(_deltas(streamed)) == 20 and streamed[-1]["event"] == "completed"


def test_a_dropped_stream_on_create_resumes_on_the_events_route(
    http: httpx.Client, editor: str
) -> None:
    cid = _conversation(http, editor)
    url = f"/v1/conversations/{cid}/runs"
    body = {"prompt": "slow 40"}
    with http.stream("POST", url, json=body, headers={**bearer(editor), **SSE}) as response:
        _, run_id = _ids_of(response)
        first = _read(response, limit=5)  # then the connection is closed
    last = str(first[-1]["id"])
    rest = _follow(http, editor, _events_url(cid, run_id), {"Last-Event-ID": last})
    ids = [e["id"] for e in first + rest]
    assert ids == sorted(set(ids)) and rest[-1]["event"] == "completed"
    if rest[0]["id"] == first[-1]["id"] + 1:  # still streaming when it came back: no gap
        assert "".join(_deltas(first + rest)) == "".join(f"w{i} " for i in range(40))
    assert [t["text"] for t in _turns(http, editor, cid)][-1].startswith("w0 w1")


def _turns(http: httpx.Client, token: str, cid: str) -> list[dict[str, Any]]:
    parts = http.get(f"/v1/conversations/{cid}/turns", headers=bearer(token)).json()["turns"]
    return [{"text": "".join(p.get("text", "") for p in turn["parts"])} for turn in parts]


def test_a_refused_stream_on_create_is_a_json_error(http: httpx.Client, editor: str) -> None:
    cid = _conversation(http, editor)
    url = f"/v1/conversations/{cid}/runs"
    headers = {**bearer(editor), **SSE}
    empty = http.post(url, json={"prompt": " "}, headers=headers)
    assert empty.status_code == 422 and empty.headers["content-type"] == "application/json"
    missing = http.post("/v1/conversations/nope/runs", json={"prompt": "x"}, headers=headers)
    assert missing.status_code == 404
    both = http.post(f"{url}?wait=5", json={"prompt": "say x"}, headers=headers)
    assert both.status_code == 422 and both.json()["error"]["field"] == "wait"
    # A quality of 0 refuses the stream: JSON, as without the header.
    plain = http.post(
        url, json={"prompt": "say x"}, headers={**bearer(editor), "Accept": "text/event-stream;q=0"}
    )
    assert plain.status_code == 202 and plain.headers["content-type"] == "application/json"


# --- wait ----------------------------------------------------------------------------------


def test_wait_answers_the_ended_run(http: httpx.Client, editor: str) -> None:
    cid = _conversation(http, editor)
    answer = http.post(
        f"/v1/conversations/{cid}/runs?wait=30", json={"prompt": "say done"}, headers=bearer(editor)
    )
    assert answer.status_code == 200, answer.text
    _, run_id = _ids_of(answer)
    ended = answer.json()
    assert ended["runId"] == run_id and ended["conversationId"] == cid
    assert (ended["status"], ended["text"], ended["error"]) == ("completed", "done", None)
    assert ended["turnId"] == f"u-{run_id}" and ended["structuredOutput"] is None
    assert ended["accounting"]["modelCalls"] == 1


def test_wait_answers_202_after_its_bound(http: httpx.Client, editor: str) -> None:
    cid = _conversation(http, editor)
    started = time.monotonic()
    answer = http.post(
        f"/v1/conversations/{cid}/runs?wait=0.5", json={"prompt": "hang"}, headers=bearer(editor)
    )
    assert answer.status_code == 202, answer.text
    assert time.monotonic() - started >= 0.5
    _, run_id = _ids_of(answer)
    assert answer.json() == {
        "conversationId": cid,
        "runId": run_id,
        "turnId": f"u-{run_id}",
        "status": "running",
    }
    cancelled = http.post(f"/v1/conversations/{cid}/cancel", headers=bearer(editor))
    assert cancelled.json() == {"cancelled": True}


@pytest.mark.parametrize("wait", ["0", "-1", "300.5", "1e3", "abc", "", "nan", "inf", "0x10"])
def test_a_bad_wait_is_422_and_starts_nothing(http: httpx.Client, editor: str, wait: str) -> None:
    cid = _conversation(http, editor)
    answer = http.post(
        f"/v1/conversations/{cid}/runs",
        params={"wait": wait},
        json={"prompt": "say x"},
        headers=bearer(editor),
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "wait"
    assert _turns(http, editor, cid) == []


# --- runs without a conversation -----------------------------------------------------------


def test_post_runs_makes_a_private_conversation_and_its_run(
    server: Served, http: httpx.Client, editor: str
) -> None:
    answer = http.post(
        "/v1/runs", json={"agent": "rool", "prompt": "say one"}, headers=bearer(editor)
    )
    assert answer.status_code == 201, answer.text
    cid, run_id = _ids_of(answer)
    assert answer.json() == {
        "conversationId": cid,
        "runId": run_id,
        "turnId": f"u-{run_id}",
        "status": "running",
    }
    events = _follow(http, editor, answer.headers["location"])
    assert events[-1]["event"] == "completed"
    details = http.get(f"/v1/conversations/{cid}", headers=bearer(editor)).json()
    assert (details["visibility"], details["creator"], details["agent"]) == (
        "private",
        "ed",
        "rool",
    )
    other = server.add_member("olga", "owner")  # private: not even an owner sees it
    assert http.get(f"/v1/conversations/{cid}", headers=bearer(other)).status_code == 404
    waited = http.post("/v1/runs?wait=30", json={"prompt": "say two"}, headers=bearer(editor))
    assert waited.status_code == 200 and waited.json()["text"] == "two"
    body = {"prompt": "say abcdefghi"}
    with http.stream("POST", "/v1/runs", json=body, headers={**bearer(editor), **SSE}) as response:
        assert response.status_code == 200
        streamed_cid, _ = _ids_of(response)
        assert _deltas(_read(response)) == ["abc", "def", "ghi"]
    assert {cid, waited.json()["conversationId"], streamed_cid} <= _conversation_ids(http, editor)


def test_a_refused_run_leaves_no_conversation(
    server: Served, http: httpx.Client, editor: str
) -> None:
    before = _conversation_ids(http, editor)
    outside = str(server.root.parent / "outside.txt")
    refused = [
        ({"agent": "nobody", "prompt": "say x"}, {}, 404, "agent_not_found"),
        ({"prompt": "say x", "attachments": [outside]}, {}, 422, "attachment_error"),
        ({"prompt": "say x", "attachments": [outside]}, SSE, 422, "attachment_error"),
        ({"prompt": "say x", "effort": "loud"}, {}, 422, "invalid"),
        ({"prompt": "say x", "outputSchema": {"type": "nonsense"}}, {}, 422, "invalid"),
        ({"prompt": "  "}, {}, 422, "invalid"),
        ({"prompt": "say x", "replaceTurn": "u-x"}, {}, 422, "invalid"),  # not a field here
    ]
    for body, headers, status, code in refused:
        answer = http.post("/v1/runs", json=body, headers={**bearer(editor), **headers})
        assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), body
    assert _conversation_ids(http, editor) == before
    viewer = server.add_member("vic", "viewer")
    for headers in ({}, SSE):
        answer = http.post(
            "/v1/runs", json={"prompt": "say x"}, headers={**bearer(viewer), **headers}
        )
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "access_denied"
    assert _conversation_ids(http, viewer) == set()
