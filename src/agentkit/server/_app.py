"""The machine's HTTP API as a Starlette application: the handlers of conversations
(`_conversations`), uploads (`_uploads`), rooms (`_rooms`) and runs (`_runs`) and the open
ones, bound to the operations of the contract's route table (`agentkit.client.contract`);
the web UI's static files (`ui/`, at `/`) and the error answers.

The handlers hold no state of their own: the machine (its store and runtime) is the
truth, so that any number of requests, streams and reconnections see one history.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Literal

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentkit._internal import observe
from agentkit.client import contract
from agentkit.client.contract import Operation
from agentkit.conversations import Machine
from agentkit.server import _conversations as c
from agentkit.server import _decisions as decisions
from agentkit.server import _metrics
from agentkit.server import _rooms as r
from agentkit.server import _runs as runs
from agentkit.server import _uploads as uploads
from agentkit.server._bodies import Health
from agentkit.server._errors import HTTPError, error_response
from agentkit.server._http import Handler, State, authorised, json_response

__all__ = ["DEFAULT_MAX_BODY_BYTES", "MetricsMode", "create_app", "metrics_listener"]

_logger = logging.getLogger("agentkit.server")

DEFAULT_MAX_BODY_BYTES = 1_048_576
"""The largest request body accepted by default (1 MiB); larger ones get 413."""

MetricsMode = Literal["off", "owners", "listener"]
"""Where a server's metrics are served: nowhere, at `/metrics` for owners, or on a
listener of their own."""


MEMBER_HANDLERS: dict[Operation, Handler] = {
    contract.GET_ME: c.me,
    contract.LIST_MEMBERS: c.list_members,
    contract.ROTATE_TOKEN: c.rotate_token,
    contract.LIST_AGENTS: c.list_agents,
    contract.PUT_AGENT: c.put_agent,
    contract.DELETE_AGENT: c.delete_agent,
    contract.LIST_CONVERSATIONS: c.list_conversations,
    contract.CREATE_CONVERSATION: c.create_conversation,
    contract.GET_CONVERSATION: c.get_conversation,
    contract.UPDATE_CONVERSATION: c.update_conversation,
    contract.DELETE_CONVERSATION: c.delete_conversation,
    contract.LIST_TURNS: c.list_turns,
    contract.START_RUN: c.start_run,
    contract.FOLLOW_RUN: c.follow_run,
    contract.CANCEL_RUN: c.cancel_run,
    contract.CANCEL_CONVERSATION: c.cancel_active,
    contract.WATCH_CONVERSATION: c.watch_conversation,
    contract.FORK_CONVERSATION: c.fork_conversation,
    contract.CANCEL_QUEUED: c.cancel_queued,
    contract.DECIDE_REQUEST: decisions.decide_request,
    contract.ANSWER_REQUEST: decisions.answer_request,
    contract.UPLOAD_FILE: uploads.upload_file,
    contract.LIST_ROOMS: r.list_rooms,
    contract.CREATE_ROOM: r.create_room,
    contract.GET_ROOM: r.get_room,
    contract.DELETE_ROOM: r.delete_room,
    contract.LIST_GRANTS: r.list_grants,
    contract.PUT_GRANT: r.put_grant,
    contract.PUBLISH: r.publish,
    contract.READ_EVENTS: r.read_events,
    contract.STREAM_EVENTS: r.stream_events,
    contract.DELEGATE: r.delegate,
    contract.GET_DELEGATION: r.get_delegation,
    contract.CANCEL_DELEGATION: r.cancel_delegation,
    contract.READ_EVENT_RUN: r.read_event_run,
    contract.LIST_DELEGATIONS: r.list_delegations,
    contract.LIST_ROOM_AGENTS: r.list_workers,
    contract.LIST_RUNS: runs.list_runs,
    contract.GET_RUN: runs.get_run,
    contract.CREATE_RUN: c.create_run,
    contract.METRICS: _metrics.metrics,
}
"""The handler of every operation that needs a member."""

# --- open routes ---------------------------------------------------------------------------


async def healthz(request: Request) -> Response:
    """Whether the server answers (for probes and load balancers: no token needed)."""
    return json_response(Health())


async def openapi(request: Request) -> Response:
    """The OpenAPI document, built on the first request and kept (it never changes while
    the server runs)."""
    from agentkit.server._openapi import openapi_document

    document = request.app.state.openapi
    if document is None:
        document = request.app.state.openapi = json.dumps(openapi_document()).encode()
    return Response(document, media_type="application/json")


OPEN_HANDLERS: dict[Operation, Callable[[Request], Awaitable[Response]]] = {
    contract.HEALTHZ: healthz,
    contract.OPENAPI: openapi,
}
"""The handler of every operation open to anyone."""


def api_routes() -> list[Route]:
    """One route for each path of the contract's table, answering its operations'
    methods (so that any other method is a 405 whose `Allow` names them all).

    Raises:
        LookupError: An operation has no handler.
    """
    by_path: dict[str, dict[str, Callable[[Request], Awaitable[Response]]]] = {}
    for operation in contract.OPERATIONS:
        if operation.member:
            endpoint = authorised(MEMBER_HANDLERS[operation])
        else:
            endpoint = OPEN_HANDLERS[operation]
        by_path.setdefault(operation.path, {})[operation.method] = endpoint
    return [
        Route(path, _dispatch(methods), methods=list(methods)) for path, methods in by_path.items()
    ]


def _dispatch(
    methods: dict[str, Callable[[Request], Awaitable[Response]]],
) -> Callable[[Request], Awaitable[Response]]:
    """The endpoint of one path: the handler of the request's method (`HEAD` is `GET`'s;
    Starlette answers any other method 405 before this is called)."""

    async def endpoint(request: Request) -> Response:
        method = "GET" if request.method == "HEAD" else request.method
        return await methods[method](request)

    return endpoint


# --- the web UI ----------------------------------------------------------------------------

UI_FOLDER = Path(__file__).resolve().parent / "ui"
"""The web UI's static files, shipped in the package (no build step, nothing fetched)."""

_UI_HEADERS = {
    # The page loads only its own files and calls only its own origin.
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "Cache-Control": "no-cache",
    "X-Content-Type-Options": "nosniff",
}


async def ui_index(request: Request) -> Response:
    """The web UI's page."""
    return FileResponse(UI_FOLDER / "index.html", headers=_UI_HEADERS)


def ui_routes() -> list[Route | Mount]:
    """The web UI: `/` is its page, `/ui/...` its scripts and style (not API routes: the
    OpenAPI document does not describe them)."""
    return [
        Route("/", ui_index, methods=["GET"]),
        Mount("/ui", StaticFiles(directory=UI_FOLDER), name="ui"),
    ]


# --- the application -----------------------------------------------------------------------


async def _http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        # Starlette names the route's methods in `Allow` (RFC 9110: a 405 must).
        return error_response(
            HTTPError("method_not_allowed", f"{request.method} is not a method of this route"),
            dict(exc.headers or {}),
        )
    return error_response(HTTPError("not_found", f"no route {request.url.path}"))


async def _server_error(request: Request, exc: Exception) -> Response:
    _logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(HTTPError("internal", "the server failed; its log says why"))


def create_app(
    machine: Machine,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    cors_origins: Sequence[str] = (),
    keepalive: float = 15.0,
    metrics: MetricsMode = "off",
) -> Starlette:
    """The machine's HTTP API as an ASGI application (Starlette).

    The machine must be open (`async with machine:`) while the application serves; the
    application does not open or close it. See `docs/server.md` for the routes.

    Args:
        machine: The machine to serve.
        max_body_bytes: The largest request body accepted (413 above it).
        cors_origins: Origins a browser may call the API from; none by default (no CORS
            headers at all).
        keepalive: Seconds of silence after which an SSE stream gets a comment line.
        metrics: `owners`: `GET /metrics` answers the server's metrics in the Prometheus
            text format to owners; `listener`: they are collected for another listener
            (`serve`'s `metrics_sock`) and `GET /metrics` answers 404, as it does when
            `off`. Collecting needs `prometheus_client` (the `metrics` extra); the
            process's runs, store calls and room publications are counted while the
            application's lifespan runs (`serve` runs it).

    Raises:
        ImportError: `metrics` is not `off` and `prometheus_client` is not installed.
    """
    routes: list[Route | Mount] = [*api_routes(), *ui_routes()]
    middleware: list[Middleware] = []
    collected = None if metrics == "off" else _metrics.Metrics(listener=metrics == "listener")
    if collected is not None:
        middleware.append(Middleware(_metrics.HTTPMetrics, metrics=collected))
    if cors_origins:
        from starlette.middleware.cors import CORSMiddleware

        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Last-Event-ID",
                    "If-Match",
                    "If-None-Match",
                ],
                # A started run's ids, which a browser reads before its event stream.
                expose_headers=["Location", "Agentkit-Conversation-Id", "Agentkit-Run-Id"],
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_exception, 500: _server_error},
        lifespan=None if collected is None else _observed(collected),
    )
    app.state.agentkit = State(machine, max_body_bytes, keepalive)
    app.state.openapi = None
    app.state.metrics = collected
    return app


def metrics_listener(app: Starlette) -> Starlette:
    """The application of the metrics' own listener (`serve`'s `metrics_sock`): `GET
    /metrics` of `app`'s server (created with `metrics="listener"`), without a token, and
    nothing else."""
    collected: _metrics.Metrics = app.state.metrics
    state: State = app.state.agentkit

    async def scrape(request: Request) -> Response:
        return await collected.response(state, request.headers.get("accept", ""))

    return Starlette(
        routes=[Route(contract.METRICS.path, scrape, methods=["GET"])],
        exception_handlers={HTTPException: _http_exception, 500: _server_error},
    )


def _observed(
    collected: _metrics.Metrics,
) -> Callable[[Starlette], contextlib.AbstractAsyncContextManager[None]]:
    """The lifespan of an application with metrics: the process's observer meanwhile."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        with observe.observing(collected):
            yield

    return lifespan
