"""A loopback server that speaks the Anthropic Messages API, for the real Claude Code CLI.

`AnthropicLoopback` listens on 127.0.0.1 only and answers `POST /v1/messages` the way the
API does: with `"stream": true`, a `text/event-stream` body (chunked) of `message_start`,
`ping`, `content_block_start` / `content_block_delta` (`text_delta`, `input_json_delta`) /
`content_block_stop`, `message_delta` and `message_stop` events; without it, one JSON
message. `count_tokens` gets a count; any other path a 404 in the API's error shape. What
each request gets is decided by a `respond(body) -> Reply` function, and every request is
kept in `requests` so a test can check what the CLI sent (its transcript on a resume, the
tool results it executed).

`SinkProxy` is a loopback HTTP proxy that refuses everything and records who tried: the
CLI's `HTTPS_PROXY` / `HTTP_PROXY` point at it, so any request meant for another host
(telemetry, update checks) is caught there instead of leaving the machine.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["AnthropicLoopback", "Reply", "SinkProxy", "text", "tool_use"]


def text(content: str) -> dict[str, Any]:
    """A text content block."""
    return {"type": "text", "text": content}


def tool_use(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool_use content block."""
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


@dataclass
class Reply:
    """One assistant message. `hang=True` starts the stream and then sends only pings until
    the client goes away (for cancellation tests)."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    hang: bool = False

    @property
    def stop(self) -> str:
        if self.stop_reason is not None:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"


def _split(value: str, parts: int = 3) -> list[str]:
    """`value` in a few pieces, as the API streams it."""
    size = max(1, -(-len(value) // parts))
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class AnthropicLoopback:
    """The server; use it as a context manager. `url` is its `ANTHROPIC_BASE_URL`."""

    def __init__(self, respond: Callable[[dict[str, Any]], Reply]) -> None:
        self.respond = respond
        self.requests: list[dict[str, Any]] = []
        self.other_paths: list[str] = []
        self.hanging = threading.Event()
        self.hang_ended = threading.Event()
        self._stopping = threading.Event()
        self._count = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def messages_requests(self) -> list[dict[str, Any]]:
        """The bodies of the `/v1/messages` requests, in order."""
        return [r["body"] for r in self.requests if r["path"].startswith("/v1/messages?")
                or r["path"] == "/v1/messages"]

    def __enter__(self) -> AnthropicLoopback:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _next_id(self) -> str:
        with self._lock:
            self._count += 1
            return f"msg_loopback{self._count:04d}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("request-id", f"req_loopback{server._count:04d}")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _not_found(self) -> None:
                server.other_paths.append(f"{self.command} {self.path}")
                self._json(404, {"type": "error", "error": {
                    "type": "not_found_error", "message": f"no route {self.path}"}})

            def do_GET(self) -> None:
                self._not_found()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {}
                path = self.path.split("?", 1)[0]
                if path == "/v1/messages/count_tokens":
                    self._json(200, {"input_tokens": len(raw) // 4})
                    return
                if path != "/v1/messages":
                    self._not_found()
                    return
                server.requests.append(
                    {"path": self.path, "headers": dict(self.headers.items()), "body": body}
                )
                reply = server.respond(body)
                message_id = server._next_id()
                model = str(body.get("model", "claude-loopback"))
                usage = {"input_tokens": max(1, len(raw) // 4), "output_tokens": 1}
                if not body.get("stream"):
                    self._json(200, {
                        "id": message_id, "type": "message", "role": "assistant",
                        "model": model, "content": reply.blocks,
                        "stop_reason": reply.stop, "stop_sequence": None,
                        "usage": {**usage, "output_tokens": 7},
                    })
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.send_header("request-id", f"req_{message_id}")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                with contextlib.suppress(OSError):
                    self._stream(message_id, model, usage, reply)

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.flush()

            def _stream(
                self, message_id: str, model: str, usage: dict[str, int], reply: Reply
            ) -> None:
                start = {"id": message_id, "type": "message", "role": "assistant",
                         "model": model, "content": [], "stop_reason": None,
                         "stop_sequence": None, "usage": usage}
                self._chunk(_sse("message_start", {"type": "message_start", "message": start}))
                self._chunk(_sse("ping", {"type": "ping"}))
                if reply.hang:
                    server.hanging.set()
                    try:
                        while not server._stopping.is_set():
                            time.sleep(0.05)
                            self._chunk(_sse("ping", {"type": "ping"}))
                    finally:
                        server.hang_ended.set()
                    return
                for index, block in enumerate(reply.blocks):
                    if block["type"] == "text":
                        opening: dict[str, Any] = {"type": "text", "text": ""}
                        deltas = [{"type": "text_delta", "text": p} for p in _split(block["text"])]
                    else:
                        opening = {**block, "input": {}}
                        deltas = [
                            {"type": "input_json_delta", "partial_json": p}
                            for p in ["", *_split(json.dumps(block["input"]))]
                        ]
                    self._chunk(_sse("content_block_start", {
                        "type": "content_block_start", "index": index,
                        "content_block": opening}))
                    for delta in deltas:
                        self._chunk(_sse("content_block_delta", {
                            "type": "content_block_delta", "index": index, "delta": delta}))
                    self._chunk(_sse("content_block_stop", {
                        "type": "content_block_stop", "index": index}))
                self._chunk(_sse("message_delta", {
                    "type": "message_delta",
                    "delta": {"stop_reason": reply.stop, "stop_sequence": None},
                    "usage": {"output_tokens": 7}}))
                self._chunk(_sse("message_stop", {"type": "message_stop"}))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler


class SinkProxy:
    """A loopback proxy that answers every request with 403 and remembers its first line."""

    def __init__(self) -> None:
        self.attempts: list[str] = []
        self._socket = socket.create_server(("127.0.0.1", 0))
        self._socket.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}"

    def __enter__(self) -> SinkProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._socket.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    first = conn.recv(4096).split(b"\r\n", 1)[0]
                    self.attempts.append(first.decode("latin-1"))
                    conn.sendall(
                        b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )


@contextlib.contextmanager
def serving(respond: Callable[[dict[str, Any]], Reply]) -> Iterator[AnthropicLoopback]:
    """`AnthropicLoopback(respond)`, started and stopped."""
    with AnthropicLoopback(respond) as server:
        yield server
