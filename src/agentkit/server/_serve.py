"""Serving a machine with uvicorn, and stopping it cleanly.

The socket is bound before anything else (a port in use is known at once, and port 0
gets its real number to print), and the signals are agentkit's, not uvicorn's: on the
first SIGINT or SIGTERM the server refuses new runs, ends the runs in flight as
interrupted (their followers get that final event), closes the watch streams, and only
then lets uvicorn finish the open responses. A second signal exits at once.

The connections are bounded (`_connections`): a request head has `header_timeout` seconds
to arrive, a connection waits at most `idle_timeout` seconds on its client (for its next
request, or in the middle of a body), and a connection beyond `max_connections` open ones
is answered 503.
"""

from __future__ import annotations

import contextlib
import functools
import socket
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from agentkit._internal import observe
from agentkit._internal.signals import watch_stop_signals
from agentkit.conversations import Machine
from agentkit.server._app import DEFAULT_MAX_BODY_BYTES, create_app, metrics_listener
from agentkit.server._connections import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    protocol_class,
    raise_open_files_limit,
)

if TYPE_CHECKING:
    from starlette.applications import Starlette

__all__ = ["bind", "loop_options", "serve", "url_of"]


def loop_options() -> dict[str, Any]:
    """anyio's asyncio options for the event loop `serve` runs on: uvloop where it is
    installed (the `server` extra installs it where it has wheels), which takes about a
    fifth off the server's CPU per streamed run; else asyncio's own loop.

    `anyio.run(main, backend="asyncio", backend_options=loop_options())`."""
    import importlib.util

    return {} if importlib.util.find_spec("uvloop") is None else {"use_uvloop": True}


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0: any free port).

    Raises:
        OSError: The address is in use or cannot be bound.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
        sock.set_inheritable(True)
    except BaseException:
        sock.close()
        raise
    return sock


def url_of(sock: socket.socket) -> str:
    """`http://host:port` of a bound socket."""
    host, port = sock.getsockname()[:2]
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


async def serve(
    machine: Machine,
    sock: socket.socket,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    cors_origins: Sequence[str] = (),
    keepalive: float = 15.0,
    shutdown_timeout: float = 10.0,
    header_timeout: float = DEFAULT_HEADER_TIMEOUT,
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    http: str = "auto",
    metrics: bool = False,
    metrics_sock: socket.socket | None = None,
) -> None:
    """Serve `machine` (open) on `sock` until SIGINT or SIGTERM, on asyncio.

    Args:
        machine: An open machine (`async with machine:`).
        sock: A listening socket (see `bind`).
        max_body_bytes: The largest request body accepted.
        cors_origins: Origins browsers may call from (none: no CORS headers).
        keepalive: Seconds between keep-alive comments on idle SSE streams.
        shutdown_timeout: Seconds the runs in flight and the open responses get to end
            once a stop is asked.
        header_timeout: Seconds a request head has to arrive in full, from the
            connection's opening or the first byte after a response; past them the
            connection is closed (with `408` if part of a head came).
        idle_timeout: Seconds a connection may wait on its client, for its next request
            or in the middle of a request body, before it is closed (with `408` in a body).
        max_connections: Open connections at most, event streams included; a
            connection beyond them is answered `503` (`unavailable`) and closed. The
            process's soft limit of open files is raised towards it (within the hard one).
        http: uvicorn's HTTP/1.1 parser: `httptools` (C, installed with the `server`
            extra where it has wheels), `h11` (pure Python), or `auto`, httptools when
            installed. The bounds above hold on both.
        metrics: Serve the metrics in the Prometheus text format at `GET /metrics`, to
            owners (needs `prometheus_client`, the `metrics` extra).
        metrics_sock: A listening socket (see `bind`) on which `GET /metrics` answers
            the metrics without a token, for a scraper on a private network; then the
            API's `/metrics` answers 404 (`metrics` is implied).

    Raises:
        ValueError: A timeout is not above 0, `max_connections` is below 1, or `http`
            is none of the three.
        ImportError: Metrics are asked for and `prometheus_client` is not installed.
    """
    if not (header_timeout > 0 and idle_timeout > 0):
        raise ValueError("header_timeout and idle_timeout must be above 0 seconds")
    if max_connections < 1:
        raise ValueError("max_connections must be at least 1")
    import uvicorn

    app = create_app(
        machine,
        max_body_bytes=max_body_bytes,
        cors_origins=cors_origins,
        keepalive=keepalive,
        metrics="listener" if metrics_sock is not None else "owners" if metrics else "off",
    )
    config = uvicorn.Config(
        app,
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=max(1, int(shutdown_timeout)),
        http=protocol_class(
            header_timeout=header_timeout, max_connections=max_connections, http=http
        ),
        # Typed `int` by uvicorn, which only hands it to `loop.call_later`: any float will do.
        timeout_keep_alive=idle_timeout,  # type: ignore[arg-type]
        # Behind a proxy, X-Forwarded-* are only trusted from the addresses configured
        # in FORWARDED_ALLOW_IPS (uvicorn's own setting); nothing here reads them.
    )
    raise_open_files_limit(max_connections + 256)  # the store's files, the providers' sockets
    server = _quiet_server(config)
    scraped = None if metrics_sock is None else _metrics_server(app, http)
    with contextlib.ExitStack() as stack:
        if app.state.metrics is not None:  # uvicorn runs no lifespan: its work is here
            stack.enter_context(observe.observing(app.state.metrics))
        async with anyio.create_task_group() as group:
            group.start_soon(
                watch_stop_signals, lambda _: stop(app, machine, server, shutdown_timeout)
            )
            async with anyio.create_task_group() as listeners:
                if scraped is not None:
                    listeners.start_soon(functools.partial(scraped.serve, sockets=[metrics_sock]))
                await server.serve(sockets=[sock])
                if scraped is not None:
                    scraped.should_exit = True  # it ends within a tenth of a second
            group.cancel_scope.cancel()


async def stop(app: Starlette, machine: Machine, server: Any, grace: float) -> None:
    """The clean stop: no new runs, the runs in flight ended as interrupted, the watch
    streams closed; then uvicorn finishes the responses still open."""
    state = app.state.agentkit
    state.closing = True
    with anyio.move_on_after(grace):
        await machine.interrupt_runs()
    for scope in list(state.watch_streams):
        scope.cancel()
    server.should_exit = True


def _metrics_server(app: Starlette, http: str) -> Any:
    """The uvicorn server of the metrics' own listener (a few connections: scrapers)."""
    import uvicorn

    config = uvicorn.Config(
        metrics_listener(app),
        lifespan="off",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
        http=protocol_class(header_timeout=DEFAULT_HEADER_TIMEOUT, max_connections=64, http=http),
    )
    return _quiet_server(config)


def _quiet_server(config: Any) -> Any:
    """uvicorn's server without its signal handlers: agentkit's stop comes first."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)
