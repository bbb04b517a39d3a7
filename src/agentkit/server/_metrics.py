"""The server's metrics in the Prometheus text format (`agentkit serve --metrics`), made
with the official client library, `prometheus_client` (the `metrics` extra), imported
only when metrics are asked for.

What a process counts as it goes (its own runs, requests, store calls and room
publications) is told by `agentkit._internal.observe` and by the HTTP middleware here;
what the store and the rooms hold (the runs not ended, whichever process runs them; the
room agents' lag) is read at scrape time. Every label has a bounded set of values: a route
is its template (`/v1/conversations/{id}`), never the path; an agent is its id, the first
`MAX_AGENT_LABELS` ids seen and `other` after them; a store operation is the backend's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentkit.conversations import Member
from agentkit.errors import StoreError
from agentkit.server._errors import HTTPError
from agentkit.server._http import State, state_of

if TYPE_CHECKING:
    from agentkit.rooms import WorkerStatus

__all__ = [
    "MAX_AGENT_LABELS",
    "MISSING_EXTRA",
    "RUN_STATES",
    "HTTPMetrics",
    "Metrics",
    "metrics",
]

_logger = logging.getLogger("agentkit.server")

MISSING_EXTRA = (
    "metrics need the 'metrics' extra (prometheus_client): pip install 'typed-agentkit[metrics]'"
)
"""What `--metrics` says when `prometheus_client` is not installed."""

MAX_AGENT_LABELS = 100
"""Distinct `agent` label values at most; the runs of agents beyond them count as `other`."""

RUN_STATES = ("running", "waiting", "queued")
"""The statuses of runs not ended, counted in the store at each scrape."""

_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_HTTP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_STORE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class Metrics:
    """The metrics of one server: its registry, what the process tells it (it is an
    `agentkit._internal.observe.Observer`) and what a scrape reads.

    Raises:
        ImportError: `prometheus_client` is not installed (`MISSING_EXTRA` says so).
    """

    def __init__(self, *, listener: bool = False) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Histogram
        except ImportError:
            raise ImportError(MISSING_EXTRA) from None
        self.listener = listener
        """Served on a listener of its own, without tokens (not on the API's port)."""
        self.registry = registry = CollectorRegistry()
        self._agents: set[str] = set()
        self._runs_started = Counter(
            "agentkit_runs_started",
            "Runs this process started, by agent id.",
            ["agent"],
            registry=registry,
        )
        self._runs_ended = Counter(
            "agentkit_runs_ended",
            "Runs this process ended, by agent id and status.",
            ["agent", "status"],
            registry=registry,
        )
        self._requests = Counter(
            "agentkit_http_requests",
            "HTTP requests answered, by method, route template and status.",
            ["method", "route", "status"],
            registry=registry,
        )
        self._latency = Histogram(
            "agentkit_http_request_duration_seconds",
            "Seconds from a request's arrival to its answer's start (an event stream's "
            "headers), by method and route template.",
            ["method", "route"],
            registry=registry,
            buckets=_HTTP_BUCKETS,
        )
        self._store = Histogram(
            "agentkit_store_operation_duration_seconds",
            "Seconds a store call of this process took (waits for a connection or a lock "
            "included), by the backend's operation; SQLite and PostgreSQL stores only.",
            ["operation"],
            registry=registry,
            buckets=_STORE_BUCKETS,
        )
        self._published = Counter(
            "agentkit_room_events_published",
            "Events this process appended to rooms' logs.",
            registry=registry,
        )
        self._read = _ReadAtScrape()
        registry.register(self._read)
        # Each label set's children, found once (`labels()` checks and locks every time).
        self._answers: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._operations: dict[str, Any] = {}

    # --- what the process tells (agentkit._internal.observe.Observer) -------------------

    def _agent(self, agent: str) -> str:
        if agent in self._agents:
            return agent
        if len(self._agents) < MAX_AGENT_LABELS:
            self._agents.add(agent)
            return agent
        return "other"

    def run_started(self, agent: str) -> None:
        self._runs_started.labels(self._agent(agent)).inc()

    def run_ended(self, agent: str, status: str) -> None:
        self._runs_ended.labels(self._agent(agent), status).inc()

    def store_operation(self, operation: str, seconds: float) -> None:
        child = self._operations.get(operation)
        if child is None:
            child = self._operations[operation] = self._store.labels(operation)
        child.observe(seconds)

    def room_events_published(self, count: int) -> None:
        self._published.inc(count)

    def http_answered(self, method: str, route: str, status: int, seconds: float) -> None:
        """A request was answered (its answer started) `seconds` after it arrived."""
        key = (method if method in _METHODS else "other", route, status)
        children = self._answers.get(key)
        if children is None:
            children = self._answers[key] = (
                self._requests.labels(key[0], route, str(status)),
                self._latency.labels(key[0], route),
            )
        children[0].inc()
        children[1].observe(seconds)

    # --- a scrape -----------------------------------------------------------------------

    async def response(self, state: State, accept: str) -> Response:
        """The metrics now, in the format the `Accept` header asks for (the Prometheus
        text format, or OpenMetrics, as the library negotiates it): what the store and the
        rooms hold is read first."""
        from prometheus_client.exposition import choose_encoder

        machine = state.machine
        runs: dict[str, int] | None
        try:
            runs = await machine.store.count_runs(RUN_STATES)
            # Queued prompts are not runs yet: they wait in the conversations' queues.
            runs["queued"] = await machine.store.count_queued()
        except StoreError as exc:
            _logger.warning("metrics: the runs could not be counted: %s", exc)
            runs = None
        workers = await machine.rooms.workers()
        self._read.now = _Reading(
            runs,
            {"follow": len(state.follow_streams), "watch": len(state.watch_streams)},
            workers,
        )
        encode, media_type = choose_encoder(accept)
        return Response(encode(self.registry), headers={"Content-Type": media_type})


class _Reading:
    """What a scrape read of the store, the streams and the room agents."""

    def __init__(
        self,
        runs: dict[str, int] | None,
        streams: dict[str, int],
        workers: list[WorkerStatus],
    ) -> None:
        self.runs = runs
        self.streams = streams
        self.workers = workers


class _ReadAtScrape:
    """The families whose values are read at scrape time (a `prometheus_client`
    collector: `collect` is called by `generate_latest`)."""

    def __init__(self) -> None:
        self.now = _Reading(None, {}, [])

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        now = self.now
        runs = GaugeMetricFamily(
            "agentkit_runs_active",
            "Runs not ended, by status (running, waiting, queued): every process's, counted "
            "in the store at the scrape.",
            labels=["status"],
        )
        for status, count in (now.runs or {}).items():
            runs.add_metric([status], count)
        yield runs
        streams = GaugeMetricFamily(
            "agentkit_sse_streams_open",
            "Event streams this process is writing, by kind: follow (a run's events, "
            "which end with it) or watch (a conversation's views, a room's events).",
            labels=["kind"],
        )
        for kind, count in now.streams.items():
            streams.add_metric([kind], count)
        yield streams
        lag = GaugeMetricFamily(
            "agentkit_room_worker_lag",
            "Positions a room agent of this process is behind its room's head.",
            labels=["room", "agent"],
        )
        failures = CounterMetricFamily(
            "agentkit_room_worker_failures",
            "Events a room agent of this process gave up on since it started.",
            labels=["room", "agent"],
        )
        degraded = GaugeMetricFamily(
            "agentkit_room_worker_degraded",
            "1 while a room agent of this process cannot reach the store (it retries).",
            labels=["room", "agent"],
        )
        for worker in now.workers:
            labels = [worker.room_id, worker.agent]
            lag.add_metric(labels, worker.lag)
            failures.add_metric(labels, worker.failures)
            degraded.add_metric(labels, 1 if worker.state == "degraded" else 0)
        yield from (lag, failures, degraded)


class HTTPMetrics:
    """The ASGI middleware counting every HTTP answer by method, route template and
    status, with the time to its start."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                self._answered(scope, status, started)
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            if not status:  # it raised before answering: the server's 500
                self._answered(scope, 500, started)

    def _answered(self, scope: Scope, status: int, started: float) -> None:
        # The router put the matched route in the scope: its template, never the path.
        route = getattr(scope.get("route"), "path", None) or "unmatched"
        self.metrics.http_answered(scope["method"], route, status, time.perf_counter() - started)


async def metrics(request: Request, member: Member) -> Response:
    """`GET /metrics` on the API's port: owners only, when the server serves metrics
    there (`agentkit serve --metrics`); else 404."""
    found: Metrics | None = request.app.state.metrics
    if found is None or found.listener:
        raise HTTPError(
            "not_found",
            "this server does not serve metrics here (agentkit serve --metrics serves "
            "them to owners; --metrics-port on a port of their own)",
        )
    if member.role != "owner":  # read from the store for this request: its role is current
        raise HTTPError(
            "access_denied", f"{member.name!r} is a {member.role}: only owners read the metrics"
        )
    return await found.response(state_of(request), request.headers.get("accept", ""))
