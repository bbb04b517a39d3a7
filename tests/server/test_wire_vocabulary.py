"""One wire vocabulary: every property the served OpenAPI document describes, and every key
of every answer, stream event and error of a real `agentkit serve`, is camelCase (`runId`,
`isRunning`, `toolCallId`), as the core's events are (`toolUseId`). The Python API stays
snake_case; user data (tool inputs and outputs, structured output, room payloads, tasks
and results) is never renamed; requests name fields the wire's way only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.http_api import bearer, sse_events
from support.served import Served, served

LOBBY = "/v1/rooms/lobby"


def _user_data(container: dict[str, Any], key: str) -> bool:
    """Whether `container[key]` is the user's (its keys are not the API's to name)."""
    kind = container.get("type")
    return (
        key in ("payload", "task", "result", "input")
        or (key == "output" and kind == "tool_result")
        or (key == "value" and kind == "json")
    )


def _snake_keys(value: Any, where: str = "$") -> list[str]:
    """Every key with an underscore in a JSON value, by its path (user data skipped)."""
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if "_" in key:
                found.append(f"{where}.{key}")
            if not _user_data(value, key):
                found.extend(_snake_keys(item, f"{where}.{key}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_snake_keys(item, f"{where}[{index}]"))
    return found


def _snake_properties(schema: Any, where: str = "#") -> list[str]:
    """Every property name (in `properties` and `required`) with an underscore, anywhere
    in an OpenAPI document's schemas."""
    found: list[str] = []
    if isinstance(schema, dict):
        for name in (
            schema.get("properties", {}) if isinstance(schema.get("properties"), dict) else {}
        ):
            if "_" in name:
                found.append(f"{where}/properties/{name}")
        required = schema.get("required")
        if isinstance(required, list):
            found.extend(
                f"{where}/required/{n}" for n in required if isinstance(n, str) and "_" in n
            )
        for key, item in schema.items():
            found.extend(_snake_properties(item, f"{where}/{key}"))
    elif isinstance(schema, list):
        for index, item in enumerate(schema):
            found.extend(_snake_properties(item, f"{where}/{index}"))
    return found


def test_the_walkers_catch_snake_case_and_spare_user_data() -> None:
    assert _snake_keys({"run_id": 1, "parts": [{"type": "x", "is_error": False}]}) == [
        "$.run_id",
        "$.parts[0].is_error",
    ]
    user = {"type": "tool_result", "output": {"exit_code": 0}, "payload": {"reply_to": 1}}
    assert _snake_keys(user) == []
    assert _snake_keys({"output": [{"type": "text", "tool_call_id": "x"}]}) == [
        "$.output[0].tool_call_id"
    ]
    schema = {
        "components": {"X": {"properties": {"runId": {}, "is_running": {}}, "required": ["a_b"]}}
    }
    assert _snake_properties(schema) == [
        "#/components/X/properties/is_running",
        "#/components/X/required/a_b",
    ]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    with served(tmp_path / "conversations") as running:
        yield running


@pytest.fixture
def rooms_server(tmp_path: Path) -> Iterator[Served]:
    with served(
        tmp_path / "rooms", "--extension", "examples.rooms.extension:setup", provider="test"
    ) as running:
        yield running


def test_the_openapi_document_has_no_snake_case_property(server: Served) -> None:
    document = httpx.get(f"{server.url}/openapi.json", timeout=30).json()
    assert document["components"]["schemas"]  # there are schemas to walk
    assert _snake_properties(document) == []
    turn = document["components"]["schemas"]["Turn"]
    assert {"runId", "createdAt"} <= set(turn["properties"])
    prompt = document["components"]["schemas"]["PromptRequest"]
    assert {"outputSchema", "replaceTurn"} <= set(prompt["properties"])


def _stream(http: httpx.Client, url: str, token: str, count: int | None = None) -> list[Any]:
    events: list[Any] = []
    with http.stream("GET", url, headers=bearer(token)) as response:
        assert response.status_code == 200, response.read()
        for event in sse_events(response):
            events.append(event["data"])
            if count is not None and len(events) >= count:
                break
    return events


def _until(http: httpx.Client, url: str, token: str, done: Any) -> Any:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        body = http.get(url, headers=bearer(token)).json()
        if done(body):
            return body
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting on {url}")


def test_conversation_answers_and_streams_are_camel_case(server: Served) -> None:
    owner = server.add_member("olga", "owner")
    answers: dict[str, Any] = {}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        answers["me"] = http.get("/v1/me", headers=bearer(owner)).json()
        server.add_member("bob", "editor")
        answers["members"] = http.get("/v1/members", headers=bearer(owner)).json()
        rotated = http.post("/v1/members/bob/token", headers=bearer(owner))
        assert rotated.status_code in (200, 201), rotated.text
        answers["rotated"] = rotated.json()
        shell = {"tools": ["Bash"], "permissionMode": "bypassPermissions"}
        put = http.put("/v1/agents/shell", json=shell, headers=bearer(owner))
        assert put.status_code == 201, put.text
        answers["agent"] = put.json()
        assert answers["agent"]["updatedAt"] is not None
        answers["agents"] = http.get("/v1/agents", headers=bearer(owner)).json()
        created = http.post("/v1/conversations", json={"agent": "shell"}, headers=bearer(owner))
        assert created.status_code == 201, created.text
        conversation = created.json()["id"]
        answers["created"] = created.json()
        base = f"/v1/conversations/{conversation}"
        # A tool call and its result: the Bash tool echoes.
        accepted = http.post(f"{base}/runs", json={"prompt": "bash echo hi"}, headers=bearer(owner))
        assert accepted.status_code == 202, accepted.text
        answers["accepted"] = accepted.json()
        run_id = answers["accepted"]["runId"]
        follow = _stream(http, f"{base}/runs/{run_id}/events", owner)
        answers["follow"] = follow
        parts = [event["part"] for event in follow if event["type"] == "output"]
        assert [p["type"] for p in parts if p["type"] != "text_delta"] == [
            "tool_call",
            "tool_result",
            "text",
        ]
        result = next(p for p in parts if p["type"] == "tool_result")
        assert result["toolCallId"] == parts[0]["id"] and result["isError"] is False
        # Structured output, asked for with the wire's name of the schema.
        schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
        structured = http.post(
            f"{base}/runs", json={"prompt": "json", "outputSchema": schema}, headers=bearer(owner)
        )
        assert structured.status_code == 202, structured.text
        answers["json"] = _stream(http, f"{base}/runs/{structured.json()['runId']}/events", owner)
        json_part = next(
            e["part"] for e in answers["json"] if e.get("part", {}).get("type") == "json"
        )
        assert json_part["value"] == {"answer": "forty-two"}
        answers["details"] = http.get(base, headers=bearer(owner)).json()
        assert answers["details"]["isRunning"] is False and "createdAt" in answers["details"]
        answers["turns"] = http.get(f"{base}/turns", headers=bearer(owner)).json()
        answers["list"] = http.get("/v1/conversations", headers=bearer(owner)).json()
        answers["view"] = _stream(http, f"{base}/watch", owner, count=1)
        answers["cancel"] = http.post(f"{base}/cancel", headers=bearer(owner)).json()
        answers["runs"] = http.get("/v1/runs", headers=bearer(owner)).json()
        assert answers["runs"]["runs"][0]["sessionId"] == conversation
        answers["run"] = http.get(f"/v1/runs/{run_id}", headers=bearer(owner)).json()
        answers["error"] = http.post(
            f"{base}/runs", json={"prompt": 1}, headers=bearer(owner)
        ).json()
    assert _snake_keys(answers) == []


def test_requests_take_the_wire_names_only(server: Served) -> None:
    owner = server.add_member("olga", "owner")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        created = http.post("/v1/conversations", json={}, headers=bearer(owner)).json()
        snake = http.post(
            f"/v1/conversations/{created['id']}/runs",
            json={"prompt": "hi", "output_schema": {"type": "object"}},
            headers=bearer(owner),
        )
        assert snake.status_code == 422
        error = snake.json()["error"]
        assert error["field"] == "output_schema" and "'outputSchema'" in error["message"]
        agent = http.put(
            "/v1/agents/shell", json={"permission_mode": "default"}, headers=bearer(owner)
        )
        assert agent.status_code == 422
        assert agent.json()["error"]["field"] == "permission_mode"
        bad = http.put(
            "/v1/agents/shell", json={"permissionMode": "sometimes"}, headers=bearer(owner)
        )
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "permissionMode"


def test_room_answers_and_streams_are_camel_case(rooms_server: Served) -> None:
    owner = rooms_server.add_member("olga", "owner")
    answers: dict[str, Any] = {}
    with httpx.Client(base_url=rooms_server.url, timeout=30) as http:
        created = http.post("/v1/rooms", json={"name": "lab"}, headers=bearer(owner))
        assert created.status_code == 201
        answers["room"] = created.json()
        assert answers["room"]["createdBy"]  # the creator, by id
        room = f"/v1/rooms/{answers['room']['id']}"
        grant = {"read": ["chat.*"], "publish": ["chat.message"]}
        answers["grant"] = http.put(
            f"{room}/grants/member:bob", json=grant, headers=bearer(owner)
        ).json()
        answers["grants"] = http.get(f"{room}/grants", headers=bearer(owner)).json()
        answers["rooms"] = http.get("/v1/rooms", headers=bearer(owner)).json()
        said = http.post(
            f"{LOBBY}/events",
            json={
                "type": "chat.message",
                "payload": {"text": "four words in here", "snake_key": 1},
            },
            headers=bearer(owner),
        )
        assert said.status_code == 201
        answers["events"] = http.get(f"{LOBBY}/events", headers=bearer(owner)).json()
        first = answers["events"]["events"][0]
        assert first["roomId"] == "lobby" and "createdAt" in first
        assert first["payload"] == {"text": "four words in here", "snake_key": 1}  # the user's
        answers["stream"] = _stream(http, f"{LOBBY}/events/stream", owner, count=1)
        accepted = http.post(
            f"{LOBBY}/delegations",
            json={"agent": "answerer", "task": {"the_question": "What is a room?"}},
            headers=bearer(owner),
        )
        assert accepted.status_code == 202, accepted.text
        answers["delegation"] = accepted.json()
        assert answers["delegation"]["requestedBy"].startswith("member:")
        assert answers["delegation"]["task"] == {"the_question": "What is a room?"}
        url = f"{LOBBY}/delegations/{answers['delegation']['id']}"
        answers["done"] = _until(
            http, url, owner, lambda record: record["status"] in ("completed", "failed")
        )
        answers["delegations"] = http.get(f"{LOBBY}/delegations", headers=bearer(owner)).json()
        assert answers["delegations"]["delegations"][0]["roomId"] == "lobby"
        answers["agents"] = http.get(f"{LOBBY}/agents", headers=bearer(owner)).json()
        assert {"roomId", "lastError"} <= set(answers["agents"]["agents"][0])
        answers["missing"] = http.get("/v1/rooms/nowhere", headers=bearer(owner)).json()
    assert _snake_keys(answers) == []


def test_requests_to_a_person_and_their_decisions_are_camel_case(server: Served) -> None:
    owner = server.add_member("petra", "owner")
    answers: dict[str, Any] = {}
    gate = {"tools": ["Bash", "AskUserQuestion"], "permissionMode": "default"}
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.put("/v1/agents/gate", json=gate, headers=bearer(owner)).status_code in (
            200,
            201,
        )
        created = http.post("/v1/conversations", json={"agent": "gate"}, headers=bearer(owner))
        base = f"/v1/conversations/{created.json()['id']}"
        for prompt, route in (("bash echo wire", "decisions"), ("ask Wire?", "answers")):
            run = http.post(f"{base}/runs", json={"prompt": prompt}, headers=bearer(owner))
            run_id = run.json()["runId"]
            details = _until(http, base, owner, lambda body: bool(body.get("pendingRequests")))
            answers[f"{route}-details"] = details
            request_id = details["pendingRequests"][0]["requestId"]
            body: dict[str, Any] = {"requestId": request_id}
            body.update(
                {"decision": "allow"} if route == "decisions" else {"answers": {"q1": "yes"}}
            )
            path = f"{base}/runs/{run_id}/{route}"
            assert http.post(path, json=body, headers=bearer(owner)).status_code == 202
            answers[f"{route}-again"] = http.post(path, json=body, headers=bearer(owner)).json()
            answers[f"{route}-follow"] = _stream(http, f"{base}/runs/{run_id}/events", owner)
            kinds = {
                event["part"]["type"] for event in answers[f"{route}-follow"] if "part" in event
            }
            assert kinds >= (
                {"permission_request", "permission_decision"}
                if route == "decisions"
                else {"question", "answer"}
            )
        refused = http.post(
            f"{base}/runs/{run_id}/decisions", json={"request_id": "x"}, headers=bearer(owner)
        )
        assert refused.status_code == 422, refused.text  # the Python name is not the wire's
    assert _snake_keys(answers) == []
