"""The OpenAPI document says what the server answers, and bad input is a 422, never a
500: each answer below is checked against a real `agentkit serve` and against the
document it serves (its status is listed for the operation, its body fits the schema).

Schemathesis explores the same ground by generation (test_schemathesis.py); these are
the cases found by hand or by it, kept as plain regression tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from support.http_api import bearer, sse_events
from support.served import Served, served

_DOC = "urn:agentkit:openapi"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served(tmp_path_factory.mktemp("openapi")) as running:
        yield running


@pytest.fixture(scope="module")
def owner(server: Served) -> str:
    return server.add_member("ada", "owner")


@pytest.fixture(scope="module")
def document(server: Served) -> dict[str, Any]:
    document: dict[str, Any] = httpx.get(f"{server.url}/openapi.json").json()
    return document


@pytest.fixture
def http(server: Served, owner: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=bearer(owner), timeout=30) as client:
        yield client


def _validate(document: dict[str, Any], schema: dict[str, Any], value: Any) -> None:
    """`value` fits `schema`, a schema of `document` (its `$ref`s resolved in it)."""
    registry: Registry[Any] = Registry().with_resource(
        _DOC, Resource.from_contents(document, default_specification=DRAFT202012)
    )
    Draft202012Validator(_rebase(schema), registry=registry).validate(value)


def _rebase(schema: Any) -> Any:
    """`schema` with its `#/components/...` references made to point into the document."""
    if isinstance(schema, dict):
        return {
            key: (_DOC + value if key == "$ref" and value.startswith("#") else _rebase(value))
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_rebase(item) for item in schema]
    return schema


def assert_documented(
    document: dict[str, Any], method: str, template: str, response: httpx.Response
) -> None:
    """`response` is one the document lists for the operation, with a body that fits."""
    operation = document["paths"][template][method.lower()]
    status = str(response.status_code)
    assert status in operation["responses"], (
        f"{method} {template} answered an undocumented {status}: {response.text}"
    )
    content = operation["responses"][status].get("content", {})
    if "application/json" in content and "schema" in content["application/json"]:
        _validate(document, content["application/json"]["schema"], response.json())


def _room(http: httpx.Client) -> str:
    created = http.post("/v1/rooms", json={"name": "r"})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def _completed_run(http: httpx.Client) -> tuple[str, str]:
    conversation = http.post("/v1/conversations", json={}).json()["id"]
    started = http.post(f"/v1/conversations/{conversation}/runs", json={"prompt": "hi"})
    assert started.status_code == 202, started.text
    run_id = started.json()["runId"]
    url = f"/v1/conversations/{conversation}/runs/{run_id}/events"
    with http.stream("GET", url) as response:
        for _ in sse_events(response):
            pass
    return conversation, run_id


# --- bad numbers -----------------------------------------------------------------------------

BAD_INTEGERS = [
    pytest.param("²", id="superscript-two"),  # a digit to str.isdigit, not to int()
    pytest.param("٣", id="arabic-indic-three"),
    pytest.param("9" * 20, id="20-digits"),  # more than a 64-bit integer
    pytest.param("9" * 5000, id="5000-digits"),  # more than int() converts
    pytest.param("-5", id="negative"),
    pytest.param("1.5", id="fraction"),
    pytest.param("1e3", id="exponent"),
]


@pytest.mark.parametrize("value", BAD_INTEGERS)
@pytest.mark.parametrize("parameter", ["after", "limit"])
def test_a_bad_number_in_a_room_read_is_422(
    http: httpx.Client, document: dict[str, Any], parameter: str, value: str
) -> None:
    room = _room(http)
    answer = http.get(f"/v1/rooms/{room}/events", params={parameter: value})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == {
        # A page's `limit` is `invalid_page` (the clients raise `InvalidPageError` for it).
        "code": "invalid_page" if parameter == "limit" else "invalid",
        "message": answer.json()["error"]["message"],
        "field": parameter,
    }
    assert_documented(document, "GET", "/v1/rooms/{room}/events", answer)


@pytest.mark.parametrize("value", BAD_INTEGERS)
def test_a_bad_limit_of_the_runs_list_is_422(
    http: httpx.Client, document: dict[str, Any], value: str
) -> None:
    answer = http.get("/v1/runs", params={"limit": value})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == "limit"
    assert_documented(document, "GET", "/v1/runs", answer)


@pytest.mark.parametrize("value", [v for v in BAD_INTEGERS if v.id != "negative"])
def test_a_bad_offset_of_a_run_follow_is_422(
    http: httpx.Client, document: dict[str, Any], value: str
) -> None:
    conversation, run_id = _completed_run(http)
    url = f"/v1/conversations/{conversation}/runs/{run_id}/events"
    answers = [http.get(url, params={"after": value})]
    if value.isascii():
        answers.append(http.get(url, headers={"Last-Event-ID": value}))
        answers.append(http.get(url, params={"after": value}, headers={"Last-Event-ID": "-1"}))
    for answer in answers:
        assert answer.status_code == 422, answer.text
        assert_documented(document, "GET", "/v1/conversations/{id}/runs/{run_id}/events", answer)


@pytest.mark.parametrize("value", BAD_INTEGERS)
def test_a_bad_position_of_a_room_stream_is_422(
    http: httpx.Client, document: dict[str, Any], value: str
) -> None:
    room = _room(http)
    url = f"/v1/rooms/{room}/events/stream"
    answer = http.get(url, params={"after": value})
    assert answer.status_code == 422, answer.text
    assert_documented(document, "GET", "/v1/rooms/{room}/events/stream", answer)
    if value.isascii():
        answer = http.get(url, headers={"Last-Event-ID": value})
        assert answer.status_code == 422, answer.text
    answer = http.get(url, headers={"Last-Event-ID": ""})
    assert answer.status_code == 422, answer.text
    # The header wins, but a bad `after` beside it is still refused.
    answer = http.get(url, params={"after": value}, headers={"Last-Event-ID": "0"})
    assert answer.status_code == 422, answer.text


@pytest.mark.parametrize(
    ("path", "parameter"),
    [
        ("/v1/rooms/{room}/events", "after"),
        ("/v1/rooms/{room}/events", "limit"),
        ("/v1/rooms/{room}/events", "types"),
        ("/v1/runs", "limit"),
        ("/v1/runs", "session"),
    ],
)
def test_a_parameter_given_twice_is_422(http: httpx.Client, path: str, parameter: str) -> None:
    url = path.format(room=_room(http))
    answer = http.get(url, params=[(parameter, "1"), (parameter, "2")])
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["field"] == parameter


def test_blank_is_not_a_number(http: httpx.Client) -> None:
    room = _room(http)
    for value in ("", " ", " 1", "\x1d", "1 "):
        answer = http.get(f"/v1/rooms/{room}/events", params={"after": value})
        assert answer.status_code == 422, (value, answer.text)


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b"1e400", id="infinite-float"),
        pytest.param(b"-1e400", id="minus-infinite-float"),
        pytest.param(b"9" * 20, id="20-digit-integer"),
        pytest.param(b"9" * 5000, id="5000-digit-integer"),
    ],
)
def test_a_bad_number_in_a_body_is_422(
    http: httpx.Client, document: dict[str, Any], payload: bytes
) -> None:
    room = _room(http)
    answer = http.post(
        f"/v1/rooms/{room}/events",
        content=b'{"type": "chat.message", "payload": {"n": ' + payload + b"}}",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "invalid"
    assert_documented(document, "POST", "/v1/rooms/{room}/events", answer)


def test_numbers_a_store_holds_are_kept(http: httpx.Client) -> None:
    room = _room(http)
    payload = {"big": 2**63 - 1, "small": -(2**63), "float": 1.5e300}
    published = http.post(f"/v1/rooms/{room}/events", json={"type": "a.b", "payload": payload})
    assert published.status_code == 201, published.text
    events = http.get(f"/v1/rooms/{room}/events").json()["events"]
    assert events[0]["payload"] == payload


def test_not_json_constants_are_400(http: httpx.Client, document: dict[str, Any]) -> None:
    room = _room(http)
    answer = http.post(
        f"/v1/rooms/{room}/events",
        content=b'{"type": "a.b", "payload": NaN}',
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert_documented(document, "POST", "/v1/rooms/{room}/events", answer)


# --- lone surrogates -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "template", "body", "field"),
    [
        ("POST", "/v1/conversations", b'{"agent": "\\ud800"}', "agent"),
        ("POST", "/v1/conversations", b'{"name": "a\\udfffb"}', "name"),
        ("POST", "/v1/rooms", b'{"name": "\\udc00"}', "name"),
        (
            "POST",
            "/v1/rooms/{room}/events",
            b'{"type": "a.b", "payload": ["\\ud83d"]}',
            "payload.0",
        ),
        (
            "POST",
            "/v1/rooms/{room}/events",
            b'{"type": "a.b", "payload": {"\\ud83d": 1}}',
            "payload.\ud83d",
        ),
        ("PUT", "/v1/agents/{name}", b'{"description": "\\udbff"}', "description"),
        ("POST", "/v1/conversations/{id}/runs", b'{"prompt": "\\ud800"}', "prompt"),
        ("POST", "/v1/conversations/{id}/fork", b'{"name": "\\ud800"}', "name"),
    ],
)
def test_a_lone_surrogate_in_a_body_is_422(
    http: httpx.Client,
    document: dict[str, Any],
    method: str,
    template: str,
    body: bytes,
    field: str,
) -> None:
    values = {
        "room": _room(http),
        "name": "surrogates",
        "id": http.post("/v1/conversations", json={}).json()["id"],
    }
    path = template.format(**values)
    answer = http.request(method, path, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    assert error["code"] == "invalid"
    # A key with a lone surrogate is named escaped: an answer is UTF-8.
    assert error["field"] == field.encode("utf-8", "backslashreplace").decode()
    assert_documented(document, method, template, answer)


def test_every_answer_of_a_fork_is_documented(
    server: Served, http: httpx.Client, document: dict[str, Any]
) -> None:
    """201 (with a body, without one), 422 naming `turn` or `name`, 404, 403 and 409."""
    template = "/v1/conversations/{id}/fork"
    conversation, _ = _completed_run(http)
    http.patch(f"/v1/conversations/{conversation}", json={"visibility": "shared"})
    path = template.format(id=conversation)
    answers: list[tuple[httpx.Response, int, str | None]] = [
        (http.post(path), 201, None),
        (http.post(path, json={"turn": 1, "name": "One"}), 201, None),
        (http.post(path, json={"turn": 2}), 422, "turn"),
        (http.post(path, json={"turn": True}), 422, "turn"),
        (http.post(path, json={"name": 7}), 422, "name"),
        (http.post(template.format(id="nope")), 404, None),
    ]
    viewer = server.add_member("fork-viewer", "viewer")
    answers.append((http.post(path, headers=bearer(viewer)), 403, None))
    assert http.put("/v1/agents/forked", json={"instructions": "x"}).status_code == 201
    orphan = http.post("/v1/conversations", json={"agent": "forked"}).json()["id"]
    assert http.delete("/v1/agents/forked").status_code == 204
    answers.append((http.post(template.format(id=orphan)), 409, None))
    for answer, status, field in answers:
        assert answer.status_code == status, answer.text
        if field is not None:
            assert answer.json()["error"]["field"] == field
        assert_documented(document, "POST", template, answer)
    assert answers[1][0].headers["location"] == f"/v1/conversations/{answers[1][0].json()['id']}"


def test_a_valid_surrogate_pair_is_text(http: httpx.Client) -> None:
    created = http.post(
        "/v1/rooms",
        content=b'{"name": "\\ud83d\\ude00"}',
        headers={"Content-Type": "application/json"},
    )
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "\U0001f600"


# --- statuses and headers the document lists -------------------------------------------------


def test_metrics_off_answer_a_documented_404(http: httpx.Client, document: dict[str, Any]) -> None:
    """`/metrics` is described (a server started with `--metrics` serves it as
    `text/plain`); this one runs without, and says so as the document does."""
    answer = http.get("/metrics")
    assert answer.status_code == 404
    assert_documented(document, "GET", "/metrics", answer)
    content = document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert list(content) == ["text/plain", "application/openmetrics-text"]


def test_every_route_with_a_body_documents_400(document: dict[str, Any]) -> None:
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if "requestBody" in operation:
                # An upload takes a body of any media type: it never answers 415.
                any_type = path == "/v1/files"
                for status in ("400", "413", "422") if any_type else ("400", "413", "415", "422"):
                    assert status in operation["responses"], (method, path, status)


def test_room_agents_document_their_404_and_body(
    http: httpx.Client, document: dict[str, Any]
) -> None:
    missing = http.get("/v1/rooms/nope/agents")
    assert missing.status_code == 404
    assert_documented(document, "GET", "/v1/rooms/{room}/agents", missing)
    room = _room(http)
    found = http.get(f"/v1/rooms/{room}/agents")
    assert found.status_code == 200
    assert found.json() == {"agents": []}
    assert_documented(document, "GET", "/v1/rooms/{room}/agents", found)
    schema = document["paths"]["/v1/rooms/{room}/agents"]["get"]["responses"]["200"]
    item = schema["content"]["application/json"]["schema"]["properties"]["agents"]["items"]
    status = document["components"]["schemas"][item["$ref"].rsplit("/", 1)[1]]
    assert {"agent", "cursor", "lag", "standby"} <= set(status["required"])


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/conversations", {"GET", "HEAD", "POST"}),
        ("DELETE", "/v1/me", {"GET", "HEAD"}),
        ("POST", "/v1/conversations/x", {"GET", "HEAD", "PATCH", "DELETE"}),
        ("TRACE", "/v1/rooms/x/events", {"GET", "HEAD", "POST"}),
        ("PATCH", "/healthz", {"GET", "HEAD"}),
    ],
)
def test_a_405_names_the_routes_methods_in_allow(
    http: httpx.Client, method: str, path: str, allowed: set[str]
) -> None:
    answer = http.request(method, path)
    assert answer.status_code == 405, answer.text
    assert {part.strip() for part in answer.headers["allow"].split(",")} == allowed
    assert answer.json()["error"]["code"] == "method_not_allowed"


def test_sse_events_fit_their_documented_object_schemas(
    http: httpx.Client, document: dict[str, Any]
) -> None:
    """Each event of the three streams is `{event, id, data}` with `data` one JSON object
    that fits the schema the document gives it (not a string)."""

    def checked(template: str, url: str, count: int) -> list[dict[str, Any]]:
        content = document["paths"][template]["get"]["responses"]["200"]["content"]
        schema = content["text/event-stream"]["schema"]
        options = schema.get("anyOf", [schema])
        events = []
        with http.stream("GET", url) as response:
            assert response.status_code == 200
            for event in sse_events(response):
                named = [
                    option
                    for option in options
                    if event["event"] in option["properties"]["event"].get("enum", ())
                ]
                # An event whose name no option lists is the open one's (a room event).
                matching = named or [
                    option for option in options if "enum" not in option["properties"]["event"]
                ]
                assert len(matching) == 1, (template, event)
                data = matching[0]["properties"]["data"]
                assert data["contentMediaType"] == "application/json"
                _validate(document, data["contentSchema"], event["data"])
                events.append(event)
                if len(events) >= count:
                    break
        return events

    conversation, run_id = _completed_run(http)
    follow = checked(
        "/v1/conversations/{id}/runs/{run_id}/events",
        f"/v1/conversations/{conversation}/runs/{run_id}/events",
        1000,
    )
    assert follow[-1]["event"] == "completed"
    watch = checked("/v1/conversations/{id}/watch", f"/v1/conversations/{conversation}/watch", 1)
    assert watch[0]["event"] == "view"
    room = _room(http)
    http.post(f"/v1/rooms/{room}/events", json={"type": "chat.message", "payload": {"t": 1}})
    stream = checked("/v1/rooms/{room}/events/stream", f"/v1/rooms/{room}/events/stream", 1)
    assert stream[0]["event"] == "chat.message"


def test_every_secured_operation_answers_a_documented_401_without_a_token(
    server: Served, document: dict[str, Any]
) -> None:
    """Streams included: their non-200 answers are JSON errors the document lists."""
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        for template, operations in document["paths"].items():
            for method, operation in operations.items():
                if not operation.get("security"):
                    continue
                path = template
                for parameter in operation.get("parameters", []):
                    if parameter["in"] == "path":
                        path = path.replace("{" + parameter["name"] + "}", "x")
                answer = anonymous.request(method.upper(), path)
                assert answer.status_code == 401, (method, template, answer.text)
                assert answer.headers["www-authenticate"] == "Bearer"
                assert_documented(document, method, template, answer)


# --- the answers of the routes that start a run ------------------------------------------------


def test_every_answer_of_the_routes_that_start_a_run_is_documented(
    http: httpx.Client, document: dict[str, Any]
) -> None:
    """Accepted (202, 201), ended (200 JSON with `?wait=`), streamed (200 event stream),
    a bad `wait` (422): each listed with its content type, its body fitting its schema
    and the run's headers it documents."""

    def fresh() -> str:  # a conversation of its own for each run: none is ever busy
        conversation = http.post("/v1/conversations", json={}).json()["id"]
        return f"/v1/conversations/{conversation}/runs"

    for template, url_of in (
        ("/v1/conversations/{id}/runs", fresh),
        ("/v1/runs", lambda: "/v1/runs"),
    ):
        answers = [
            http.post(url_of(), json={"prompt": "say x"}),
            http.post(f"{url_of()}?wait=30", json={"prompt": "say x"}),
            http.post(f"{url_of()}?wait=0", json={"prompt": "say x"}),
        ]
        assert [a.status_code for a in answers] == [202 if "{id}" in template else 201, 200, 422]
        for answer in answers:
            assert_documented(document, "POST", template, answer)
            documented = document["paths"][template]["post"]["responses"][str(answer.status_code)]
            named = {name.lower() for name in documented.get("headers", {})}
            assert named <= set(answer.headers), (answer.status_code, answer.headers)
        headers = {"Accept": "text/event-stream"}
        with http.stream("POST", url_of(), json={"prompt": "say x"}, headers=headers) as streamed:
            assert streamed.status_code == 200
            content = document["paths"][template]["post"]["responses"]["200"]["content"]
            assert streamed.headers["content-type"].split(";")[0] in content
            events = list(sse_events(streamed))
        schema = content["text/event-stream"]["schema"]
        for event in events:
            option = next(
                o for o in schema["anyOf"] if event["event"] in o["properties"]["event"]["enum"]
            )
            _validate(document, option["properties"]["data"]["contentSchema"], event["data"])
        assert events[-1]["event"] == "completed"


def test_busy_prompts_and_the_queue_answer_what_the_document_says(
    http: httpx.Client, document: dict[str, Any]
) -> None:
    conversation = http.post("/v1/conversations", json={}).json()["id"]
    runs, template = f"/v1/conversations/{conversation}/runs", "/v1/conversations/{id}/runs"
    queue = "/v1/conversations/{id}/queue/{queued_id}"

    def answered(method: str, path: str, template: str, status: int, **kwargs: Any) -> Any:
        answer = http.request(method, path, **kwargs)
        assert answer.status_code == status, answer.text
        assert_documented(document, method, template, answer)
        return answer.json() if answer.content else None

    running = answered("POST", runs, template, 202, json={"prompt": "hang"})
    assert running["status"] == "running"
    refused = answered("POST", runs, template, 409, json={"prompt": "say no"})
    assert refused["error"]["code"] == "conversation_busy"
    queued = answered("POST", runs, template, 202, json={"prompt": "say a", "ifBusy": "enqueue"})
    dropped = answered("POST", runs, template, 202, json={"prompt": "say b", "ifBusy": "enqueue"})
    assert queued["status"] == dropped["status"] == "queued"
    bad = answered("POST", runs, template, 422, json={"prompt": "x", "ifBusy": "later"})
    assert bad["error"]["field"] == "ifBusy"
    details = answered("GET", f"/v1/conversations/{conversation}", "/v1/conversations/{id}", 200)
    assert [q["id"] for q in details["queued"]] == [queued["runId"], dropped["runId"]]
    assert details["queued"][0]["prompt"] == "say a" and details["queued"][0]["member"] == "ada"
    base = f"/v1/conversations/{conversation}/queue"
    assert answered("DELETE", f"{base}/{dropped['runId']}", queue, 204) is None
    missing = answered("DELETE", f"{base}/{dropped['runId']}", queue, 404)
    assert missing["error"]["code"] == "queued_prompt_not_found"
    started = answered("DELETE", f"{base}/{running['runId']}", queue, 409)
    assert started["error"]["code"] == "queued_prompt_started"
    hidden = answered("DELETE", f"/v1/conversations/nope/queue/{queued['runId']}", queue, 404)
    assert hidden["error"]["code"] == "conversation_not_found"
    now = answered("POST", runs, template, 202, json={"prompt": "say now", "ifBusy": "interrupt"})
    assert now["status"] == "running"


def test_every_answer_of_decisions_and_answers_is_documented(
    server: Served, http: httpx.Client, document: dict[str, Any]
) -> None:
    """202, 403, 404, 409 and 422 (an unknown request, a bad field) of `.../decisions` and
    `.../answers`; the details' `pendingRequests` and the follow's request parts fit their
    schemas."""
    gate = {"tools": ["Bash", "AskUserQuestion"], "permissionMode": "default"}
    assert http.put("/v1/agents/gate", json=gate).status_code in (200, 201)
    conversation = http.post(
        "/v1/conversations", json={"agent": "gate", "visibility": "shared"}
    ).json()["id"]
    runs = f"/v1/conversations/{conversation}/runs"
    decisions = "/v1/conversations/{id}/runs/{run_id}/decisions"
    answers_route = "/v1/conversations/{id}/runs/{run_id}/answers"
    follow = "/v1/conversations/{id}/runs/{run_id}/events"

    def asked(prompt: str) -> tuple[str, dict[str, Any]]:
        run_id = http.post(runs, json={"prompt": prompt}).json()["runId"]
        path = f"{runs}/{run_id}/events"
        with http.stream("GET", path) as stream:
            schema = document["paths"][follow]["get"]["responses"]["200"]["content"]
            for event in sse_events(stream):
                option = next(
                    o
                    for o in schema["text/event-stream"]["schema"]["anyOf"]
                    if event["event"] in o["properties"]["event"]["enum"]
                )
                _validate(document, option["properties"]["data"]["contentSchema"], event["data"])
                if event["event"] in ("permission_request", "question"):
                    return run_id, event["data"]["part"]
        raise AssertionError("the run ended without asking")

    run_id, request = asked("bash echo documented")
    details = http.get(f"/v1/conversations/{conversation}")
    assert_documented(document, "GET", "/v1/conversations/{id}", details)
    assert details.json()["pendingRequests"][0]["requestId"] == request["requestId"]
    path = decisions.format(id=conversation, run_id=run_id)
    allow = {"requestId": request["requestId"], "decision": "allow"}
    viewer = server.add_member("decision-viewer", "viewer")
    checked: list[tuple[httpx.Response, int, str | None]] = [
        (http.post(path, json={**allow, "decision": "later"}), 422, "invalid"),
        (http.post(path, json={**allow, "requestId": "nope"}), 422, "request_not_found"),
        (http.post(path, json=allow, headers=bearer(viewer)), 403, "access_denied"),
        (http.post(decisions.format(id="nope", run_id=run_id), json=allow), 404, None),
        (http.post(decisions.format(id=conversation, run_id="nope"), json=allow), 404, None),
        (http.post(path, json=allow), 202, None),
        (http.post(path, json=allow), 409, "request_decided"),
    ]
    with http.stream("GET", f"{runs}/{run_id}/events") as stream:  # to its end
        assert list(sse_events(stream))[-1]["event"] == "completed"
    question_run, question = asked("ask Documented?")
    answer_path = answers_route.format(id=conversation, run_id=question_run)
    body = {"requestId": question["requestId"], "answers": {"q1": "yes"}}
    checked += [
        (http.post(answer_path, json={"answers": {}}), 422, "invalid"),
        (http.post(answer_path, json=body, headers=bearer(viewer)), 403, "access_denied"),
        (http.post(answer_path, json=body), 202, None),
        (http.post(answer_path, json=body), 409, "request_decided"),
    ]
    for answer, status, code in checked:
        assert answer.status_code == status, answer.text
        if code is not None:
            assert answer.json()["error"]["code"] == code
        template = answers_route if "/answers" in str(answer.url) else decisions
        assert_documented(document, "POST", template, answer)
