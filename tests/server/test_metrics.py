"""`agentkit serve --metrics`: `/metrics` in the Prometheus text format, read by the
Prometheus text parser from a real server on loopback, moves with the runs, the
requests, the streams, the store and the rooms; it is for owners, or for anyone on a
listener of its own (`--metrics-port`); without the library, `--metrics` is a usage error.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families  # the metrics extra

from agentkit.testing import conformance_provider
from support.http_api import bearer, sse_events
from support.paths import SRC
from support.served import Served, served

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape by its name and labels; each agentkit family has help."""
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        if family.name.startswith("agentkit_"):
            assert family.documentation, family.name
        for sample in family.samples:
            found[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return found


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples called `name` that have all of `labels`."""
    wanted = set(labels.items())
    return sum(value for (n, have), value in samples.items() if n == name and wanted <= have)


def labels_of(samples: Samples, name: str) -> list[dict[str, str]]:
    return [dict(have) for (n, have) in samples if n == name]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("metrics")
    with served(folder, "--metrics", "--extension", "examples.rooms.extension:setup") as running:
        yield running


@pytest.fixture(scope="module")
def owner(server: Served) -> str:
    return server.add_member("ada", "owner")


@pytest.fixture
def http(server: Served, owner: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, headers=bearer(owner), timeout=30) as client:
        yield client


def scrape(http: httpx.Client) -> Samples:
    answer = http.get("/metrics")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain")
    return parse(answer.text)


def run_to_end(http: httpx.Client, conversation: str, prompt: str) -> str:
    """Prompt, follow the run to its final event; the final event's name."""
    started = http.post(f"/v1/conversations/{conversation}/runs", json={"prompt": prompt})
    assert started.status_code == 202, started.text
    url = f"/v1/conversations/{conversation}/runs/{started.json()['runId']}/events"
    with http.stream("GET", url) as response:
        events = [event["event"] for event in sse_events(response)]
    return events[-1]


def test_metrics_are_for_owners(server: Served, http: httpx.Client) -> None:
    anonymous = httpx.get(f"{server.url}/metrics")
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    editor = server.add_member("eve", "editor")
    refused = httpx.get(f"{server.url}/metrics", headers=bearer(editor))
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "access_denied"
    openmetrics = http.get("/metrics", headers={"Accept": "application/openmetrics-text"})
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    assert openmetrics.text.endswith("# EOF\n")
    samples = scrape(http)
    families = {name for name, _ in samples}
    assert "agentkit_runs_active" in families
    assert {labels["status"] for labels in labels_of(samples, "agentkit_runs_active")} == {
        "running",
        "waiting",
        "queued",
    }


def test_run_counters_and_gauges_move_with_the_runs(http: httpx.Client) -> None:
    before = scrape(http)
    conversation = http.post("/v1/conversations", json={}).json()["id"]
    assert run_to_end(http, conversation, "say hello") == "completed"
    assert run_to_end(http, conversation, "fail") == "error"
    after = scrape(http)
    started = "agentkit_runs_started_total"
    assert total(after, started) - total(before, started) == 2
    ended = "agentkit_runs_ended_total"
    assert total(after, ended, status="completed") - total(before, ended, status="completed") == 1
    assert total(after, ended, status="error") - total(before, ended, status="error") == 1
    agents = {labels["agent"] for labels in labels_of(after, started)}
    assert agents and all(agent for agent in agents)  # an agent's id, never empty
    assert total(after, "agentkit_runs_active", status="running") == 0

    # A run that does not end by itself: running while it goes, its follower an open stream.
    hanging = http.post(f"/v1/conversations/{conversation}/runs", json={"prompt": "hang"})
    assert hanging.status_code == 202, hanging.text
    run_id = hanging.json()["runId"]
    assert total(scrape(http), "agentkit_runs_active", status="running") == 1
    url = f"/v1/conversations/{conversation}/runs/{run_id}/events"
    with http.stream("GET", url) as response:
        events = sse_events(response)
        assert next(events)["event"] == "text_delta"  # the stream is open and live
        during = scrape(http)
        assert total(during, "agentkit_sse_streams_open", kind="follow") == 1
        cancelled = http.post(f"/v1/conversations/{conversation}/runs/{run_id}/cancel")
        assert cancelled.status_code == 202, cancelled.text  # answered once the run ended
        assert cancelled.json() == {"cancelled": True}
        assert [event["event"] for event in events][-1] == "cancelled"
    ended_now = scrape(http)
    assert total(ended_now, "agentkit_runs_active", status="running") == 0
    assert total(ended_now, "agentkit_sse_streams_open") == 0
    interrupted = total(ended_now, ended, status="interrupted")
    assert interrupted - total(during, ended, status="interrupted") == 1


def test_http_requests_by_route_template(http: httpx.Client) -> None:
    before = scrape(http)
    missing = [uuid.uuid4().hex for _ in range(3)]
    for conversation in missing:
        assert http.get(f"/v1/conversations/{conversation}").status_code == 404
    for _ in range(2):
        assert http.get("/v1/me").status_code == 200
    assert http.get("/no/such/route").status_code == 404
    after = scrape(http)
    requests = "agentkit_http_requests_total"

    def moved(route: str, status: str) -> float:
        labels = {"method": "GET", "route": route, "status": status}
        return total(after, requests, **labels) - total(before, requests, **labels)

    assert moved("/v1/conversations/{id}", "404") == 3
    assert moved("/v1/me", "200") == 2
    assert moved("unmatched", "404") == 1
    seconds = "agentkit_http_request_duration_seconds_count"
    me = {"method": "GET", "route": "/v1/me"}
    assert total(after, seconds, **me) - total(before, seconds, **me) == 2
    # The route's template, never the path: no request's id is a label value.
    values = {value for (_, labels) in after for _, value in labels}
    assert not values & set(missing)


def test_store_latency_and_room_metrics(http: httpx.Client) -> None:
    before = scrape(http)
    published = http.post(
        "/v1/rooms/lobby/events", json={"type": "chat.message", "payload": {"text": "hi"}}
    )
    assert published.status_code == 201, published.text
    after = scrape(http)
    events = "agentkit_room_events_published_total"
    assert total(after, events) - total(before, events) >= 1
    store = "agentkit_store_operation_duration_seconds_count"
    append = {"operation": "append_room_events"}
    assert total(after, store, **append) - total(before, store, **append) >= 1
    assert total(after, store, operation="member_by_token") >= 1
    workers = labels_of(after, "agentkit_room_worker_lag")
    assert {labels["room"] for labels in workers} == {"lobby"}
    assert len(workers) == 2  # the example's two room agents
    assert total(after, "agentkit_room_worker_failures_total") == 0
    assert total(after, "agentkit_room_worker_degraded") == 0


def test_a_metrics_listener_of_its_own_needs_no_token(tmp_path: Path) -> None:
    with served(tmp_path, "--metrics-port", "0") as running:
        assert running.process.stdout is not None
        url = running.process.stdout.readline().strip()  # the second line: the metrics' URL
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics"), url
        assert not url.startswith(running.url + "/")
        answer = httpx.get(url)
        assert answer.status_code == 200
        assert "agentkit_runs_active" in {name for name, _ in parse(answer.text)}
        assert httpx.get(url.removesuffix("/metrics") + "/v1/me").status_code == 404
        owner = running.add_member("ada", "owner")
        on_the_api = httpx.get(f"{running.url}/metrics", headers=bearer(owner))
        assert on_the_api.status_code == 404
        assert on_the_api.json()["error"]["code"] == "not_found"
        assert running.stop(timeout=10) == 0  # both listeners close on SIGTERM


def test_without_metrics_the_library_is_never_imported() -> None:
    """(Without `--metrics`, `/metrics` answers 404: test_openapi_conformance.py.)"""
    script = (
        "import sys, agentkit, agentkit.cli._serve\n"
        "from agentkit.conversations import Machine\n"
        "from agentkit.server import create_app\n"
        "create_app(Machine(store=':memory:'))\n"
        "assert 'prometheus_client' not in sys.modules\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--metrics"], "pip install 'typed-agentkit[metrics]'"),
        (["--metrics-port", "0"], "pip install 'typed-agentkit[metrics]'"),
        (["--metrics-port", "70000"], "--metrics-port 70000 is not a TCP port"),
    ],
    ids=["metrics", "metrics-port", "bad-port"],
)
def test_metrics_usage_errors_exit_2(tmp_path: Path, flags: list[str], said: str) -> None:
    """Without the library (hidden here), `--metrics` is a usage error naming the extra."""
    hidden = tmp_path / "hidden"
    (hidden / "prometheus_client").mkdir(parents=True)
    (hidden / "prometheus_client" / "__init__.py").write_text("raise ImportError('hidden')\n")
    path = [str(hidden), str(SRC)] if "pip" in said else [str(SRC)]
    serve = [sys.executable, "-m", "agentkit", "serve", "--port", "0", "--provider", "test"]
    done = subprocess.run(
        [*serve, "--db", str(tmp_path / "m.db"), *flags],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(path)},
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


# --- in process: what the runtime, the stores and the rooms tell ---------------------------


@pytest.mark.anyio
async def test_the_runtime_store_and_rooms_tell_the_observer(tmp_path: Path) -> None:
    from prometheus_client import generate_latest

    from agentkit._internal import observe
    from agentkit.conversations import Machine
    from agentkit.rooms import EventInput
    from agentkit.server._metrics import Metrics

    metrics = Metrics()
    root = tmp_path / "space"
    root.mkdir()
    machine = Machine(
        store=str(tmp_path / "machine.db"), provider=conformance_provider(), attachment_roots=[root]
    )
    with observe.observing(metrics):
        async with machine:
            await machine.add_member("ada", "owner")
            client = machine.client(await machine.member("ada"))
            conversation = await client.create_conversation()
            for prompt in ("say hi", "fail"):
                accepted = await client.prompt(conversation.id, prompt)
                _ = [event async for event in client.follow(conversation.id, accepted.run_id)]
            rooms = machine.rooms_client(await machine.member("ada"))
            room = await rooms.create_room("r")
            await rooms.publish(room.id, [EventInput(type="a.b"), EventInput(type="a.c")])
    assert observe.current() is None  # the one before, again
    samples = parse(generate_latest(metrics.registry).decode())
    assert total(samples, "agentkit_runs_started_total") == 2
    assert total(samples, "agentkit_runs_ended_total", status="completed") == 1
    assert total(samples, "agentkit_runs_ended_total", status="error") == 1
    assert total(samples, "agentkit_room_events_published_total") == 2
    created = total(
        samples, "agentkit_store_operation_duration_seconds_count", operation="create_run"
    )
    assert created == 2


def test_agent_labels_are_bounded() -> None:
    from prometheus_client import generate_latest

    from agentkit.server._metrics import MAX_AGENT_LABELS, Metrics

    metrics = Metrics()
    for i in range(MAX_AGENT_LABELS + 5):
        metrics.run_started(f"agent-{i}")
    metrics.run_started("agent-0")
    samples = parse(generate_latest(metrics.registry).decode())
    agents = labels_of(samples, "agentkit_runs_started_total")
    assert len(agents) == MAX_AGENT_LABELS + 1
    assert total(samples, "agentkit_runs_started_total", agent="other") == 5
    assert total(samples, "agentkit_runs_started_total", agent="agent-0") == 2
