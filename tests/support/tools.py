"""Shared helpers for the tools tests: contexts, calls and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry, builtin_tools


def make_ctx(working_dir: Path, **services: Any) -> ToolContext:
    return ToolContext(
        working_dir=working_dir,
        run_id="run-1",
        session_id="session-1",
        agent_id="test:agent",
        services=services,
    )


async def call(registry: ToolRegistry, name: str, ctx: ToolContext, **args: Any) -> Any:
    tool = registry.get(name)
    assert tool is not None, name
    return await tool.function(args, ctx)


async def call_error(tool: Tool, ctx: ToolContext, **args: Any) -> str:
    """Call `tool` expecting a ToolError; return its message."""
    try:
        result = await tool.function(args, ctx)
    except ToolError as exc:
        return str(exc)
    raise AssertionError(f"{tool.name} did not fail; returned {result!r}")


REGISTRY = builtin_tools()


@dataclass
class LocalServer:
    """A real HTTP server on 127.0.0.1 that records every request it gets."""

    port: int
    hits: list[str] = field(default_factory=list)
    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def local_server() -> Iterator[LocalServer]:
    state = LocalServer(port=0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits.append(self.path)
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            if parts.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", query.get("to", ["/redirect"])[0])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if parts.path == "/host":
                body = (self.headers.get("Host") or "").encode()
                self._reply(200, {"Content-Type": "text/plain"}, body)
                return
            if parts.path == "/slow":
                import time

                time.sleep(float(query.get("s", ["3"])[0]))
            status, headers, body = state.routes.get(
                parts.path, (404, {"Content-Type": "text/plain"}, b"not found")
            )
            self._reply(status, headers, body)

        def _reply(self, status: int, headers: dict[str, str], body: bytes) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
