"""`agentkit serve`: a machine on a store, over HTTP, until Ctrl-C or SIGTERM.

Exit codes: 0 after a clean stop, 2 for what the user must fix (a port in use, a store
that cannot be opened, bad options).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentkit.cli._budget import add_budget_flags, budget_of
from agentkit.cli._exit import UsageError
from agentkit.cli._help import (
    DB_HELP,
    HELP_FORMATTER,
    PROVIDER_HELP,
    SCRIPT_HELP,
    add_provider_timeouts,
    wrap_paragraphs,
)
from agentkit.cli._providers import make_provider

if TYPE_CHECKING:
    from agentkit.conversations import Machine
    from agentkit.spec import AgentSpec
    from agentkit.stores import Store
    from agentkit.tools import Tool

__all__ = ["add_serve_parser", "serve_command", "store_close"]

# The defaults of the upload options (agentkit.conversations' own, not imported here: the
# parser is built before any command runs, and that package is not needed for it).
DEFAULT_MAX_UPLOAD_BYTES = 100 * 1024 * 1024
DEFAULT_UPLOAD_QUOTA_BYTES = 1024 * 1024 * 1024


class ServeError(Exception):
    """Something the user must fix before the server can start (exit 2)."""


def _agent_files(paths: list[str]) -> list[str]:
    """`--agents` paths, each one an agent format claims (`agentkit.formats`: a `.md`
    definition, a folder of them, an app folder); the Machine loads each with its format.
    Python targets (`module:attribute`, `file.py:attribute`) are left to `_python_agents`."""
    from agentkit._internal.pytargets import is_python_target
    from agentkit.formats import claiming_format

    files = []
    for raw in paths:
        path = Path(raw).expanduser()
        if claiming_format(path) is not None:
            files.append(str(path))
            continue
        if is_python_target(raw):
            continue
        if path.is_dir():
            raise ServeError(f"--agents {raw}: the folder holds no .md definition nor app.yaml")
        raise ServeError(
            f"--agents {raw}: not a .md definition, a folder of them, or an app, nor an "
            f"Agent or AgentSpec in Python (module:attribute, path/to/file.py:attribute)"
        )
    return files


def _python_agents(paths: list[str]) -> tuple[list[AgentSpec], list[Tool]]:
    """The specs of the `--agents` Python targets, and the function tools of the `Agent`s
    among them (the machine's runtime offers them beside the built-in ones)."""
    from agentkit._internal.pytargets import is_python_target
    from agentkit.cli._targets import load_python_agent
    from agentkit.formats import claiming_format

    specs: list[AgentSpec] = []
    tools: dict[str, Tool] = {}
    for raw in paths:
        if claiming_format(Path(raw).expanduser()) is not None or not is_python_target(raw):
            continue
        try:
            found = load_python_agent(raw, hints=False)
        except UsageError as exc:
            raise ServeError(f"--agents {raw}: {exc}") from None
        for tool in found.tools:
            if tools.get(tool.name, tool) is not tool:
                raise ServeError(
                    f"--agents {raw}: its tool {tool.name!r} is another than the tool of "
                    f"that name of an agent before it"
                )
            tools[tool.name] = tool
        specs.append(found.spec)
    return specs, list(tools.values())


def add_serve_parser(sub: Any) -> None:
    """The `serve` command's arguments and help."""
    serve = sub.add_parser(
        "serve",
        help="serve a machine over HTTP",
        description=wrap_paragraphs(
            "Serve a machine (its agents and conversations) over HTTP to its members, "
            "who authenticate with their tokens ('agentkit members add'). The first line "
            "on stdout is the URL it listens on. docs/server.md describes the API."
        ),
        formatter_class=HELP_FORMATTER,
        epilog="""\
examples:
  agentkit serve --db machine.db
  agentkit serve --port 0 --provider test
  agentkit serve --db machine.db --metrics          # GET /metrics for owners
  agentkit serve --db machine.db --metrics-port 9400  # GET :9400/metrics, no token
  agentkit serve --db postgresql://agentkit@db.internal/agentkit --host 0.0.0.0 \\
      --attachment-root /srv/space --agents agents/ --cors-origin https://app.example.com

exit codes:
  0    stopped (Ctrl-C, SIGTERM)
  2    usage or environment error: bad arguments, no provider configured, a store
       that cannot be opened""",
    )
    serve.add_argument("--db", metavar="URL", help=DB_HELP)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default: 127.0.0.1, this machine only; 0.0.0.0 "
        "for every interface)",
    )
    serve.add_argument(
        "--port",
        type=int,
        default=8400,
        help="the TCP port (default: 8400; 0 picks a free one, printed on the first line)",
    )
    serve.add_argument("--provider", metavar="NAME", help=PROVIDER_HELP)
    serve.add_argument("--script", metavar="FILE", help=SCRIPT_HELP)
    serve.add_argument(
        "--attachment-root",
        metavar="DIR",
        action="append",
        help="a folder attachments may come from and file tools may work in; repeat it "
        "for several. Uploads go to the first that exists. Default: /space and "
        "/rool-drive, or, when neither exists, the folder 'attachments' beside the SQLite "
        "file (in $XDG_STATE_HOME/agentkit for PostgreSQL)",
    )
    serve.add_argument(
        "--max-upload-bytes",
        type=int,
        default=DEFAULT_MAX_UPLOAD_BYTES,
        metavar="N",
        help=f"the largest file an upload (POST /v1/files) may store, in bytes (default: "
        f"{DEFAULT_MAX_UPLOAD_BYTES}, 100 MiB); a larger one is refused with 413",
    )
    serve.add_argument(
        "--upload-quota-bytes",
        type=int,
        default=DEFAULT_UPLOAD_QUOTA_BYTES,
        metavar="N",
        help=f"what a member's upload folder may hold in all, in bytes (default: "
        f"{DEFAULT_UPLOAD_QUOTA_BYTES}, 1 GiB); an upload over it is refused with 507",
    )
    serve.add_argument(
        "--agents",
        metavar="PATH",
        action="append",
        help="configured agents: an agent definition (.md), a folder of them, an app "
        "folder, or module:attribute or path/to/file.py:attribute naming an Agent (its "
        "function tools included) or an AgentSpec; repeat it for several. They are "
        "read-only for the members",
    )
    serve.add_argument(
        "--max-body-bytes",
        type=int,
        default=1_048_576,
        metavar="N",
        help="the largest request body accepted, in bytes (default: 1048576, 1 MiB); a "
        "larger one is refused with 413",
    )
    serve.add_argument(
        "--cors-origin",
        metavar="ORIGIN",
        action="append",
        help="a web origin (https://app.example.com) whose pages may call the API from a "
        "browser; repeat it for several (default: none)",
    )
    serve.add_argument(
        "--extension",
        metavar="MODULE:FUNCTION",
        action="append",
        help="a function called with the machine at start-up, which may create rooms, set "
        "grants and register room agents; its cleanup runs at shutdown (repeat it for "
        "several; docs/rooms.md)",
    )
    serve.add_argument(
        "--keepalive",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="seconds of silence after which an event stream gets a comment line, so "
        "that proxies keep it open (default: 15)",
    )
    serve.add_argument(
        "--heartbeat-interval",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="seconds between two renewals of the leases of the runs this server executes "
        "(default: 5)",
    )
    serve.add_argument(
        "--lease-duration",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds a run's lease lasts: a run whose server died is ended as "
        "interrupted once it expires, by the next server on the database (default: 30)",
    )
    serve.add_argument(
        "--request-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds a run's request to a person (a permission to decide, a question to "
        "answer) waits before it is ended as denied (default: until someone decides)",
    )
    serve.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="seconds between two reads of the database by a waiting reader, beside "
        "PostgreSQL's notifications (which wake readers at once), and between two tries "
        "of a standby room agent to take over from a server that died (default: 1)",
    )
    serve.add_argument(
        "--header-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="seconds a request's head (its line and headers) has to arrive in full; a "
        "slower connection is closed (default: 10)",
    )
    serve.add_argument(
        "--idle-timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="seconds a connection may wait on its client, for its next request or in the "
        "middle of a request body, before it is closed (default: 15)",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=1000,
        metavar="N",
        help="open connections at most, event streams included; a request on one more is "
        "answered 503 (default: 1000)",
    )
    serve.add_argument(
        "--http",
        choices=("auto", "httptools", "h11"),
        default="auto",
        help="the HTTP/1.1 parser: httptools (C, with the server extra where it installs), "
        "h11 (pure Python), or auto: httptools when installed (default: auto)",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="serve metrics in the Prometheus text format at GET /metrics, to owners "
        "(needs the metrics extra: pip install 'typed-agentkit[metrics]')",
    )
    serve.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve GET /metrics without a token on this port of --host instead (for a "
        "scraper on a private network; implies --metrics, and the API's /metrics answers "
        "404). 0 picks a free one; its URL is the second line on stdout",
    )
    add_provider_timeouts(serve)
    add_budget_flags(serve)


def serve_command(args: argparse.Namespace) -> int:
    """Run `agentkit serve` with parsed arguments; returns the exit code."""
    from agentkit.conversations import (
        Machine,
        default_attachment_roots,
        default_machine_store,
    )
    from agentkit.stores import StoreError, open_store
    from agentkit.tools import ToolRegistry

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise UsageError(
            f"{exc}: agentkit serve needs the 'server' extra: pip install 'typed-agentkit[server]'"
        ) from None
    from agentkit.server import (
        ExtensionError,
        bind,
        load_extension,
        running_extensions,
        serve,
        url_of,
    )

    budget = budget_of(args)
    if not 1 <= args.max_body_bytes <= 1 << 30:
        raise UsageError("--max-body-bytes must be between 1 and 1073741824")
    for option, value in (
        ("--max-upload-bytes", args.max_upload_bytes),
        ("--upload-quota-bytes", args.upload_quota_bytes),
    ):
        if value < 1:
            raise UsageError(f"{option} must be a number of bytes above 0")
    for option, value in (
        ("--keepalive", args.keepalive),
        ("--heartbeat-interval", args.heartbeat_interval),
        ("--lease-duration", args.lease_duration),
        ("--poll-interval", args.poll_interval),
        ("--header-timeout", args.header_timeout),
        ("--idle-timeout", args.idle_timeout),
    ):
        if not 0 < value <= 86_400:
            raise UsageError(f"{option} must be a number of seconds above 0")
    if args.request_timeout is not None and not 0 < args.request_timeout <= 31_536_000:
        raise UsageError("--request-timeout must be a number of seconds above 0")
    if not 1 <= args.max_connections <= 1_000_000:
        raise UsageError("--max-connections must be between 1 and 1000000")
    if args.heartbeat_interval >= args.lease_duration:
        raise UsageError("--heartbeat-interval must be shorter than --lease-duration")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0-65535)")
    if args.metrics_port is not None and not 0 <= args.metrics_port <= 65535:
        raise UsageError(f"--metrics-port {args.metrics_port} is not a TCP port (0-65535)")
    if args.metrics or args.metrics_port is not None:
        try:
            import prometheus_client  # noqa: F401
        except ImportError:
            raise UsageError(
                "--metrics needs the 'metrics' extra (prometheus_client): "
                "pip install 'typed-agentkit[metrics]'"
            ) from None
    try:
        for path in args.extension or ():
            load_extension(path)  # an extension that cannot load fails before anything starts
    except ExtensionError as exc:
        raise UsageError(str(exc)) from None
    provider = make_provider(args)
    try:
        agent_files = _agent_files(args.agents or [])
        python_specs, python_tools = _python_agents(args.agents or [])
    except ServeError as exc:
        raise UsageError(str(exc)) from None
    location = args.db or default_machine_store()
    try:
        if "://" not in location:
            Path(location).expanduser().parent.mkdir(parents=True, exist_ok=True)
        store = open_store(location)
    except (ValueError, OSError, StoreError) as exc:
        raise UsageError(f"--db {location}: {exc}") from None
    try:
        roots = args.attachment_root or list(default_attachment_roots(location))
    except OSError as exc:
        store_close(store)
        raise UsageError(f"cannot make the attachment folder beside {location}: {exc}") from None
    try:
        sock = bind(args.host, args.port)
    except OSError as exc:
        store_close(store)
        reason = "it is in use" if exc.errno in (98, 48) else (exc.strerror or str(exc))
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {reason}") from None
    metrics_sock = None
    if args.metrics_port is not None:
        try:
            metrics_sock = bind(args.host, args.metrics_port)
        except OSError as exc:
            sock.close()
            store_close(store)
            reason = "it is in use" if exc.errno in (98, 48) else (exc.strerror or str(exc))
            raise UsageError(
                f"--metrics-port: cannot listen on {args.host}:{args.metrics_port}: {reason}"
            ) from None
    try:
        machine = Machine(
            store=store,
            provider=provider,
            attachment_roots=roots,
            max_upload_bytes=args.max_upload_bytes,
            upload_quota_bytes=args.upload_quota_bytes,
            agent_files=agent_files,
            agents=python_specs,
            tools=ToolRegistry(python_tools) if python_tools else None,
            heartbeat_interval=args.heartbeat_interval,
            lease_duration=args.lease_duration,
            poll_interval=args.poll_interval,
            budget=budget,
            request_timeout=args.request_timeout,
        )
    except (ValueError, OSError) as exc:
        sock.close()
        if metrics_sock is not None:
            metrics_sock.close()
        store_close(store)
        raise UsageError(str(exc)) from None

    logging.getLogger("agentkit").setLevel(logging.INFO)

    async def main() -> None:
        try:
            await machine.__aenter__()
        except (StoreError, OSError) as exc:
            raise ServeError(f"--db {location}: {exc}") from None
        # Once the store has opened: a server that cannot start says only why.
        for line in _roots_said(args.attachment_root, roots, machine):
            print(f"agentkit: {line}", file=sys.stderr, flush=True)
        try:
            async with running_extensions(machine, args.extension or ()):
                # The URL alone on stdout (scripts read it); the rest goes to stderr.
                print(url_of(sock), flush=True)
                if metrics_sock is not None:  # the metrics' own URL, for scripts too
                    print(f"{url_of(metrics_sock)}/metrics", flush=True)
                await serve(
                    machine,
                    sock,
                    max_body_bytes=args.max_body_bytes,
                    cors_origins=args.cors_origin or (),
                    keepalive=args.keepalive,
                    header_timeout=args.header_timeout,
                    idle_timeout=args.idle_timeout,
                    max_connections=args.max_connections,
                    http=args.http,
                    metrics=args.metrics,
                    metrics_sock=metrics_sock,
                )
        except ExtensionError as exc:
            raise ServeError(str(exc)) from None
        finally:
            await machine.__aexit__(None, None, None)
            await store.aclose()  # the machine's runtime closes only stores it opened

    import anyio

    from agentkit.server import loop_options

    try:
        anyio.run(main, backend="asyncio", backend_options=loop_options())
    except ServeError as exc:
        raise UsageError(str(exc)) from None
    finally:
        sock.close()
        if metrics_sock is not None:
            metrics_sock.close()
    print("agentkit: the server stopped", file=sys.stderr, flush=True)
    return 0


def _roots_said(configured: list[str] | None, roots: list[str], machine: Machine) -> list[str]:
    """What the server says of its attachment roots at start (on stderr): each root,
    whether it exists, and where uploads go."""
    from agentkit.conversations import DEFAULT_ATTACHMENT_ROOTS, UploadError

    lines = []
    if not configured and tuple(roots) != DEFAULT_ATTACHMENT_ROOTS:
        lines.append(
            f"neither {' nor '.join(DEFAULT_ATTACHMENT_ROOTS)} exists: attachments and uploads "
            f"use {roots[0]} (--attachment-root DIR chooses)"
        )
    for root in roots:
        if Path(root).is_dir():
            lines.append(f"attachment root {root}")
        else:
            lines.append(f"attachment root {root} does not exist: attachments under it are refused")
    try:
        upload_root = machine.uploads.root()
    except UploadError as exc:
        lines.append(f"uploads are refused: {exc}")
    else:
        lines.append(
            f"uploads go to {upload_root / 'uploads'}/<member id>/ (at most "
            f"{machine.uploads.max_bytes} bytes each, {machine.uploads.quota_bytes} per member)"
        )
    return lines


def store_close(store: Store) -> None:
    """Close a store that no runtime used (its connections, if any)."""
    import anyio

    with contextlib.suppress(Exception):  # closing what failed to open: nothing to add
        anyio.run(store.aclose)
