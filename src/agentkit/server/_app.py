"""The machine's HTTP API as a Starlette application: the routes of conversations
(`_conversations`), rooms (`_rooms`) and runs (`_runs`), the open routes, the web UI's
static files (`ui/`, at `/`) and the error answers.

The handlers hold no state of their own: the machine (its store and runtime) is the
truth, so that any number of requests, streams and reconnections see one history.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from agentkit.conversations import Machine
from agentkit.server import _conversations as c
from agentkit.server import _rooms as r
from agentkit.server import _runs as runs
from agentkit.server._bodies import Health
from agentkit.server._errors import HTTPError, error_response
from agentkit.server._http import State, authorised, json_response

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

_logger = logging.getLogger("agentkit.server")

DEFAULT_MAX_BODY_BYTES = 1_048_576
"""The largest request body accepted by default (1 MiB); larger ones get 413."""


ROUTES = [
    ("GET", "/v1/me", c.me),
    ("GET", "/v1/agents", c.list_agents),
    ("PUT", "/v1/agents/{name}", c.put_agent),
    ("DELETE", "/v1/agents/{name}", c.delete_agent),
    ("GET", "/v1/conversations", c.list_conversations),
    ("POST", "/v1/conversations", c.create_conversation),
    ("GET", "/v1/conversations/{id}", c.get_conversation),
    ("PATCH", "/v1/conversations/{id}", c.update_conversation),
    ("DELETE", "/v1/conversations/{id}", c.delete_conversation),
    ("GET", "/v1/conversations/{id}/turns", c.list_turns),
    ("POST", "/v1/conversations/{id}/runs", c.start_run),
    ("GET", "/v1/conversations/{id}/runs/{run_id}/events", c.follow_run),
    ("POST", "/v1/conversations/{id}/runs/{run_id}/cancel", c.cancel_run),
    ("POST", "/v1/conversations/{id}/cancel", c.cancel_active),
    ("GET", "/v1/conversations/{id}/watch", c.watch_conversation),
    ("GET", "/v1/rooms", r.list_rooms),
    ("POST", "/v1/rooms", r.create_room),
    ("GET", "/v1/rooms/{room}", r.get_room),
    ("DELETE", "/v1/rooms/{room}", r.delete_room),
    ("GET", "/v1/rooms/{room}/grants", r.list_grants),
    ("PUT", "/v1/rooms/{room}/grants/{participant}", r.put_grant),
    ("POST", "/v1/rooms/{room}/events", r.publish),
    ("GET", "/v1/rooms/{room}/events", r.read_events),
    ("GET", "/v1/rooms/{room}/events/stream", r.stream_events),
    ("POST", "/v1/rooms/{room}/delegations", r.delegate),
    ("GET", "/v1/rooms/{room}/delegations/{id}", r.get_delegation),
    ("GET", "/v1/rooms/{room}/agents", r.list_workers),
    ("GET", "/v1/runs", runs.list_runs),
    ("GET", "/v1/runs/{run_id}", runs.get_run),
]
"""Every route that needs a member: method, path, handler."""

# --- open routes ---------------------------------------------------------------------------


async def healthz(request: Request) -> Response:
    return json_response(Health())


async def openapi(request: Request) -> Response:
    from agentkit.server._openapi import openapi_document

    document = request.app.state.openapi
    if document is None:
        document = request.app.state.openapi = json.dumps(openapi_document()).encode()
    return Response(document, media_type="application/json")


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
        return error_response(HTTPError("method_not_allowed", "this route has no such method"))
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
    """
    routes: list[Route | Mount] = [Route("/healthz", healthz, methods=["GET"])]
    routes.append(Route("/openapi.json", openapi, methods=["GET"]))
    routes.extend(
        Route(path, authorised(handler), methods=[method]) for method, path, handler in ROUTES
    )
    routes.extend(ui_routes())
    middleware: list[Middleware] = []
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
            )
        )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: _http_exception, 500: _server_error},
    )
    app.state.agentkit = State(machine, max_body_bytes, keepalive)
    app.state.openapi = None
    return app
