"""`agentkit serve`: the HTTP API of a machine, against a real server process on loopback.

The server runs on asyncio only (uvicorn); what is asynchronous on the client side (the
remote client) is tested under asyncio and trio in test_remote_client.py. These tests
speak HTTP themselves, so that the wire format other languages rely on is what is checked.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.http_api import bearer, sse_events
from support.served import Served, served

INTERRUPTED = "interrupted: its process stopped"


def _follow(
    client: httpx.Client,
    url: str,
    token: str,
    *,
    headers: dict[str, str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    with client.stream("GET", url, headers={**bearer(token), **(headers or {})}) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for event in sse_events(response):
            events.append(event)
            if limit is not None and len(events) >= limit:
                break
    return events


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    with served(tmp_path) as running:
        yield running


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _conversation(http: httpx.Client, token: str, **body: Any) -> str:
    response = http.post("/v1/conversations", json=body, headers=bearer(token))
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _prompt(http: httpx.Client, token: str, conversation: str, prompt: str) -> str:
    response = http.post(
        f"/v1/conversations/{conversation}/runs", json={"prompt": prompt}, headers=bearer(token)
    )
    assert response.status_code == 202, response.text
    return str(response.json()["runId"])


def _events_url(conversation: str, run_id: str) -> str:
    return f"/v1/conversations/{conversation}/runs/{run_id}/events"


# --- open routes and the API's description ---------------------------------------------------


def test_healthz_and_openapi_describe_every_route(http: httpx.Client) -> None:
    from openapi_spec_validator import validate

    assert http.get("/healthz").json() == {"status": "ok"}
    document = http.get("/openapi.json").json()
    validate(document)  # raises on anything that is not valid OpenAPI 3.1
    assert document["openapi"].startswith("3.1")
    from agentkit.conversations import Machine
    from agentkit.server import create_app

    app = create_app(Machine(store=":memory:"))
    served_routes = {
        (method.lower(), route.path)
        for route in app.routes
        for method in (getattr(route, "methods", None) or ())
        if method != "HEAD" and route.path != "/"  # the web UI's page is not an API route
    }
    described = {(m, path) for path, ops in document["paths"].items() for m in ops}
    assert described == served_routes  # every route served is described, and no other
    assert ("post", "/v1/conversations/{id}/runs") in described
    assert ("get", "/v1/rooms/{room}/events/stream") in described
    schemas = document["components"]["schemas"]
    assert "runId" in schemas["PromptAccepted"]["properties"]  # camelCase on the wire


def test_every_route_but_two_needs_a_member_token(server: Served, http: httpx.Client) -> None:
    for method, path in [
        ("GET", "/v1/me"),
        ("GET", "/v1/agents"),
        ("GET", "/v1/conversations"),
        ("POST", "/v1/conversations"),
        ("GET", "/v1/conversations/x/watch"),
    ]:
        missing = http.request(method, path)
        assert missing.status_code == 401, (method, path)
        assert missing.json()["error"]["code"] == "unauthorized"
        assert missing.headers["www-authenticate"] == "Bearer"
        wrong = http.request(method, path, headers=bearer("not-a-token"))
        assert wrong.status_code == 401
    token = server.add_member("ada", "owner")
    me = http.get("/v1/me", headers=bearer(token)).json()
    assert me == {"id": me["id"], "name": "ada", "role": "owner"} and len(me["id"]) == 32


def test_conversation_routes(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "owner")
    created = http.post("/v1/conversations", json={"name": "Notes"}, headers=bearer(token))
    assert created.status_code == 201
    conversation = created.json()
    assert conversation["name"] == "Notes" and conversation["visibility"] == "private"
    assert created.headers["location"] == f"/v1/conversations/{conversation['id']}"
    cid = conversation["id"]
    listed = http.get("/v1/conversations", headers=bearer(token)).json()["conversations"]
    assert [row["id"] for row in listed] == [cid]
    patched = http.patch(
        f"/v1/conversations/{cid}",
        json={"name": "Renamed", "visibility": "shared"},
        headers=bearer(token),
    )
    assert patched.status_code == 200
    assert (patched.json()["name"], patched.json()["visibility"]) == ("Renamed", "shared")
    run_id = _prompt(http, token, cid, "say hello there")
    events = _follow(http, _events_url(cid, run_id), token)
    assert events[-1]["event"] == "completed"
    turns = http.get(f"/v1/conversations/{cid}/turns", headers=bearer(token)).json()["turns"]
    assert [turn["role"] for turn in turns] == ["user", "agent"]
    assert turns[1]["parts"] == [{"type": "text", "text": "hello there"}]
    details = http.get(f"/v1/conversations/{cid}", headers=bearer(token)).json()
    assert details["turns"] == turns and details["isRunning"] is False
    assert http.delete(f"/v1/conversations/{cid}", headers=bearer(token)).status_code == 204
    gone = http.get(f"/v1/conversations/{cid}", headers=bearer(token))
    assert gone.status_code == 404
    assert gone.json()["error"]["code"] == "conversation_not_found"


def test_invalid_input_names_the_field(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "owner")
    bad = http.post("/v1/conversations", json={"visibility": "public"}, headers=bearer(token))
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "invalid"
    assert bad.json()["error"]["field"] == "visibility"
    typo = http.post("/v1/conversations", json={"nmae": "x"}, headers=bearer(token))
    assert typo.status_code == 422 and typo.json()["error"]["field"] == "nmae"
    not_json = http.post(
        "/v1/conversations",
        content=b"{nope",
        headers={**bearer(token), "content-type": "application/json"},
    )
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "bad_request"
    text = http.post(
        "/v1/conversations",
        content=b"name=x",
        headers={**bearer(token), "content-type": "text/plain"},
    )
    assert text.status_code == 415
    cid = _conversation(http, token)
    huge = http.post(
        f"/v1/conversations/{cid}/runs",
        json={"prompt": "x" * 1_100_000},
        headers=bearer(token),
    )
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "body_too_large"
    after = http.get(_events_url(cid, "r"), params={"after": "soon"}, headers=bearer(token))
    assert after.status_code in (404, 422)
    unknown = http.get("/v1/nothing-here", headers=bearer(token))
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"


def test_hidden_and_missing_conversations_look_the_same(server: Served, http: httpx.Client) -> None:
    ada = server.add_member("ada", "owner")
    bob = server.add_member("bob", "editor")
    viewer = server.add_member("vic", "viewer")
    cid = _conversation(http, ada)  # private to ada
    hidden = [
        http.get(f"/v1/conversations/{cid}", headers=bearer(bob)),
        http.get(f"/v1/conversations/{cid}/turns", headers=bearer(bob)),
        http.patch(f"/v1/conversations/{cid}", json={"name": "x"}, headers=bearer(bob)),
        http.post(f"/v1/conversations/{cid}/runs", json={"prompt": "hi"}, headers=bearer(bob)),
        http.get(f"/v1/conversations/{cid}/watch", headers=bearer(bob)),
    ]
    http.delete(f"/v1/conversations/{cid}", headers=bearer(ada))
    missing = http.get(f"/v1/conversations/{cid}", headers=bearer(ada))
    for response in hidden:
        assert response.status_code == 404
        assert response.content == missing.content
    shared = _conversation(http, ada, visibility="shared")
    assert http.get(f"/v1/conversations/{shared}", headers=bearer(viewer)).status_code == 200
    denied = http.patch(f"/v1/conversations/{shared}", json={"name": "x"}, headers=bearer(viewer))
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "access_denied"
    denied = http.post(f"/v1/conversations/{shared}/cancel", headers=bearer(viewer))
    assert denied.status_code == 403


def test_agents_routes(server: Served, http: httpx.Client) -> None:
    owner = server.add_member("ada", "owner")
    editor = server.add_member("bob", "editor")
    names = [a["name"] for a in http.get("/v1/agents", headers=bearer(owner)).json()["agents"]]
    assert names[0] == "rool"
    body = {"description": "Reviews", "instructions": "Be brief."}
    assert http.put("/v1/agents/reviewer", json=body, headers=bearer(editor)).status_code == 403
    created = http.put(
        "/v1/agents/reviewer", json=body, headers={**bearer(owner), "If-None-Match": "*"}
    )
    assert created.status_code == 201 and created.json()["source"] == "machine"
    again = http.put(
        "/v1/agents/reviewer", json=body, headers={**bearer(owner), "If-None-Match": "*"}
    )
    assert again.status_code == 409 and again.json()["error"]["code"] == "agent_exists"
    replaced = http.put(
        "/v1/agents/reviewer", json={**body, "description": "R2"}, headers=bearer(owner)
    )
    assert replaced.status_code == 200 and replaced.json()["description"] == "R2"
    absent = http.put("/v1/agents/nobody", json=body, headers={**bearer(owner), "If-Match": "*"})
    assert absent.status_code == 404 and absent.json()["error"]["code"] == "agent_not_found"
    rool = http.delete("/v1/agents/rool", headers=bearer(owner))
    assert rool.status_code == 409 and rool.json()["error"]["code"] == "agent_protected"
    assert http.delete("/v1/agents/reviewer", headers=bearer(owner)).status_code == 204
    assert http.delete("/v1/agents/reviewer", headers=bearer(owner)).status_code == 404


# --- runs and their streams ------------------------------------------------------------------


def test_sse_stream_format_and_resume(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "owner")
    cid = _conversation(http, token)
    run_id = _prompt(http, token, cid, "slow 6")
    url = _events_url(cid, run_id)
    live = _follow(http, url, token)
    ids = [event["id"] for event in live]
    assert ids == sorted(set(ids)), "ids are strictly increasing offsets"
    assert {event["event"] for event in live[:-1]} <= {"text_delta", "text"}
    assert live[-1]["event"] == "completed"
    assert live[-1]["data"] == {
        "type": "final",
        "offset": live[-1]["id"],
        "status": "completed",
        "error": None,
    }
    for event in live[:-1]:
        assert event["data"]["type"] == "output" and event["data"]["offset"] == event["id"]
    # After the run: a replay from the store (no deltas), resumable at every offset.
    stored = _follow(http, url, token)
    assert [e["event"] for e in stored] == ["text", "completed"]
    for resume in stored[:-1]:
        by_header = _follow(http, url, token, headers={"Last-Event-ID": str(resume["id"])})
        by_query = _follow(http, f"{url}?after={resume['id']}", token)
        expected = [e for e in stored if e["id"] > resume["id"]]
        assert by_header == expected and by_query == expected


def test_a_follower_that_drops_mid_run_gets_the_rest_once(
    server: Served, http: httpx.Client
) -> None:
    token = server.add_member("ada", "owner")
    cid = _conversation(http, token)
    run_id = _prompt(http, token, cid, "slow 40")
    url = _events_url(cid, run_id)
    first = _follow(http, url, token, limit=5)  # then the connection is closed
    assert len(first) == 5
    rest = _follow(http, url, token, headers={"Last-Event-ID": str(first[-1]["id"])})
    ids = [e["id"] for e in first + rest]
    assert ids == sorted(set(ids)) and rest[0]["id"] > first[-1]["id"]
    assert rest[-1]["event"] == "completed"
    words = "".join(e["data"]["part"]["text"] for e in first + rest if e["event"] == "text_delta")
    if rest[0]["id"] == first[-1]["id"] + 1:  # still streaming when it came back: no gap
        assert words == "".join(f"w{i} " for i in range(40))


def test_cancel_busy_and_the_cancelled_stream(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "owner")
    cid = _conversation(http, token)
    run_id = _prompt(http, token, cid, "hang")
    busy = http.post(f"/v1/conversations/{cid}/runs", json={"prompt": "hi"}, headers=bearer(token))
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "conversation_busy"
    other = http.post(f"/v1/conversations/{cid}/runs/nope/cancel", headers=bearer(token))
    assert other.status_code == 404 and other.json()["error"]["code"] == "run_not_found"
    cancelled = http.post(f"/v1/conversations/{cid}/runs/{run_id}/cancel", headers=bearer(token))
    assert cancelled.status_code == 202 and cancelled.json() == {"cancelled": True}
    events = _follow(http, _events_url(cid, run_id), token)
    assert events[-1]["event"] == "cancelled"
    again = http.post(f"/v1/conversations/{cid}/runs/{run_id}/cancel", headers=bearer(token))
    assert again.json() == {"cancelled": False}
    turns = http.get(f"/v1/conversations/{cid}/turns", headers=bearer(token)).json()["turns"]
    assert turns[1]["status"] == "cancelled"
    assert turns[1]["parts"] == [{"type": "text", "text": "partial answer"}]


def test_watch_streams_views(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "owner")
    cid = _conversation(http, token)
    views: list[dict[str, Any]] = []
    with http.stream("GET", f"/v1/conversations/{cid}/watch", headers=bearer(token)) as response:
        assert response.status_code == 200
        prompted = False
        for event in sse_events(response):
            assert event["event"] == "view"
            views.append(event["data"])
            if not prompted and not event["data"]["loading"]:
                _prompt(http, token, cid, "say watched")
                prompted = True
            if len(event["data"]["turns"]) == 2:
                break
    assert views[-1]["turns"][1]["parts"] == [{"type": "text", "text": "watched"}]
    assert views[-1]["isRunning"] is False


def test_keepalive_comments_on_an_idle_stream(tmp_path: Path) -> None:
    with served(tmp_path, "--keepalive", "0.2") as server:
        token = server.add_member("ada", "owner")
        with httpx.Client(base_url=server.url, timeout=30) as http:
            cid = _conversation(http, token)
            run_id = _prompt(http, token, cid, "hang")
            lines: list[str] = []
            with http.stream("GET", _events_url(cid, run_id), headers=bearer(token)) as response:
                for line in response.iter_lines():
                    lines.append(line)
                    if lines.count(": keep-alive") >= 2:
                        break
            assert lines[0] == ": stream"
            http.post(f"/v1/conversations/{cid}/cancel", headers=bearer(token))


def test_no_cors_headers_unless_configured(tmp_path: Path) -> None:
    origin = {"Origin": "https://app.example", "Access-Control-Request-Method": "GET"}
    with served(tmp_path) as server, httpx.Client(base_url=server.url) as http:
        response = http.options("/v1/conversations", headers=origin)
        assert "access-control-allow-origin" not in response.headers
    with (
        served(tmp_path, "--cors-origin", "https://app.example") as server,
        httpx.Client(base_url=server.url) as http,
    ):
        response = http.options("/v1/conversations", headers=origin)
        assert response.headers["access-control-allow-origin"] == "https://app.example"


# --- stopping and crashing ---------------------------------------------------------------------


def test_sigterm_ends_runs_in_flight_as_interrupted(tmp_path: Path) -> None:
    with served(tmp_path) as server:
        token = server.add_member("ada", "owner")
        with httpx.Client(base_url=server.url, timeout=30) as http:
            cid = _conversation(http, token)
            run_id = _prompt(http, token, cid, "hang")
            events: list[dict[str, Any]] = []
            with http.stream("GET", _events_url(cid, run_id), headers=bearer(token)) as response:
                for event in sse_events(response):
                    events.append(event)
                    if len(events) == 1:
                        server.process.send_signal(signal.SIGTERM)
            assert events[-1]["event"] == "error"
            assert events[-1]["data"]["error"] == INTERRUPTED
        assert server.process.wait(30) == 0
        assert server.process.stdout is not None
    with served(tmp_path) as again, httpx.Client(base_url=again.url, timeout=30) as http:
        turns = http.get(f"/v1/conversations/{cid}/turns", headers=bearer(token)).json()["turns"]
        assert [t["role"] for t in turns] == ["user", "agent"]
        assert turns[0]["parts"] == [{"type": "text", "text": "hang"}]
        assert turns[1]["status"] == "interrupted" and turns[1]["error"] == INTERRUPTED
        assert turns[1]["parts"] == [{"type": "text", "text": "partial answer"}]


def test_sigkill_mid_run_then_restart(tmp_path: Path) -> None:
    lease = ("--lease-duration", "1", "--heartbeat-interval", "0.2")
    with served(tmp_path, *lease) as server:
        token = server.add_member("ada", "owner")
        with httpx.Client(base_url=server.url, timeout=30) as http:
            cid = _conversation(http, token)
            done = _prompt(http, token, cid, "say kept")
            _follow(http, _events_url(cid, done), token)
            run_id = _prompt(http, token, cid, "hang")
            seen = _follow(http, _events_url(cid, run_id), token, limit=1)
        server.process.kill()
        server.process.wait(10)
    with served(tmp_path, *lease) as again, httpx.Client(base_url=again.url, timeout=30) as http:
        # The follower reconnects after what it saw and gets the final event.
        rest = _follow(
            http, _events_url(cid, run_id), token, headers={"Last-Event-ID": str(seen[-1]["id"])}
        )
        assert rest[-1]["event"] == "error" and rest[-1]["data"]["error"] == INTERRUPTED
        turns = http.get(f"/v1/conversations/{cid}/turns", headers=bearer(token)).json()["turns"]
        assert [t["status"] for t in turns] == [
            "completed",
            "completed",
            "completed",
            "interrupted",
        ]
        assert turns[1]["parts"] == [{"type": "text", "text": "kept"}]


def test_port_in_use_and_bad_db_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentkit",
                "serve",
                "--db",
                str(tmp_path / "m.db"),
                "--port",
                str(port),
                "--provider",
                "test",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert f"127.0.0.1:{port}" in result.stderr and "in use" in result.stderr
    assert "Traceback" not in result.stderr
    for db in ("mysql://nowhere/x", str(tmp_path)):  # an unknown scheme; a folder
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentkit",
                "serve",
                "--db",
                db,
                "--port",
                "0",
                "--provider",
                "test",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2, (db, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert result.stderr.startswith("agentkit: error: ")


def test_the_server_prints_its_url_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    started = time.monotonic()
    with served(tmp_path) as server:
        with httpx.Client(base_url=server.url) as http:
            assert http.get("/healthz").status_code == 200
        assert server.stop(signal.SIGINT) == 0
    assert time.monotonic() - started < 30
