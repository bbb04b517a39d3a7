"""`agentkit serve` bounds its connections: a slow request head, a silent connection and
an idle kept-alive one are closed; a connection beyond the limit is answered 503 at once;
hundreds of slow clients do not delay a member. Against a real server on loopback, with
short limits given as options, and raw sockets for the slow clients."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import anyio.abc
import httpx
import pytest

from support.cli import agentkit
from support.http_api import bearer
from support.served import Served, served

HEADER_TIMEOUT = 1.0
IDLE_TIMEOUT = 1.0
# Hang guards, not benchmarks: each is far above what is measured.
GUARD = 10.0

PARTIAL_HEAD = b"GET /v1/me HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "


@pytest.fixture(scope="module", params=["httptools", "h11"])
def server(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """The server on each of uvicorn's parsers: the bounds must hold on both."""
    folder = tmp_path_factory.mktemp("connections")
    with served(
        folder,
        "--http",
        request.param,
        "--header-timeout",
        str(HEADER_TIMEOUT),
        "--idle-timeout",
        str(IDLE_TIMEOUT),
        "--keepalive",
        "0.3",
    ) as running:
        yield running


def _connect(url: str) -> socket.socket:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=GUARD)
    return sock


def _until_closed(sock: socket.socket) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it did
    (`time.monotonic()`); fails if it keeps it open past the guard."""
    received = b""
    deadline = time.monotonic() + GUARD
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    else:
        raise AssertionError(f"the connection is still open after {GUARD} s: {received!r}")
    return received, time.monotonic()


def _request(path: str, token: str | None = None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}\r\n".encode()


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One response with a `content-length`, read from a kept-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (x.partition(":") for x in lines)}
    while len(body) < int(headers["content-length"]):
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(status_line.split()[1]), headers, body


# --- request heads ---------------------------------------------------------------------------


def test_a_partial_head_gets_408_and_is_closed_after_the_header_timeout(server: Served) -> None:
    with _connect(server.url) as sock:
        sent = time.monotonic()
        sock.sendall(PARTIAL_HEAD)
        received, closed = _until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert received.endswith(b"the request head came too slowly")
    assert HEADER_TIMEOUT * 0.8 <= closed - sent < HEADER_TIMEOUT + 5


def test_a_head_trickled_byte_by_byte_does_not_renew_its_deadline(server: Served) -> None:
    received = b""
    with _connect(server.url) as sock:
        sock.settimeout(0.2)
        started = time.monotonic()
        for byte in PARTIAL_HEAD * 10:  # a byte every 0.2 s: many times the deadline
            try:
                sock.sendall(bytes([byte]))
                chunk = sock.recv(65536)
            except TimeoutError:
                continue  # still open, nothing said
            except (BrokenPipeError, ConnectionResetError):
                break
            if not chunk:
                break
            received += chunk
        else:
            raise AssertionError("a trickling client kept its connection")
        closed = time.monotonic()
    assert received.startswith(b"HTTP/1.1 408 ") or received == b"", received
    assert closed - started < HEADER_TIMEOUT + 5


def test_a_silent_connection_is_closed_after_the_header_timeout(server: Served) -> None:
    with _connect(server.url) as sock:
        opened = time.monotonic()
        received, closed = _until_closed(sock)
    assert received == b""  # nothing was asked: nothing is answered
    assert HEADER_TIMEOUT * 0.8 <= closed - opened < HEADER_TIMEOUT + 5


def test_a_head_split_across_packets_in_time_is_served(server: Served) -> None:
    with _connect(server.url) as sock:
        request = _request("/healthz")
        sock.sendall(request[:10])
        time.sleep(HEADER_TIMEOUT / 4)
        sock.sendall(request[10:])
        status, _, _ = _read_response(sock)
    assert status == 200


def test_a_head_over_16_kib_is_refused_with_400(server: Served) -> None:
    with _connect(server.url) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 20_000)
        received, _ = _until_closed(sock)
    assert received.startswith(b"HTTP/1.1 400 "), received


# --- request bodies --------------------------------------------------------------------------


def _post_head(token: str, length: int) -> bytes:
    return (
        f"POST /v1/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_a_body_that_stops_coming_gets_408_after_the_idle_timeout(tmp_path: Path) -> None:
    with served(tmp_path, "--idle-timeout", str(IDLE_TIMEOUT)) as server:
        token = server.add_member("ada", "owner")
        body = b'{"name": "half a body"}'
        with _connect(server.url) as sock:
            sock.sendall(_post_head(token, len(body)) + body[:10])
            sent = time.monotonic()
            received, closed = _until_closed(sock)
        assert received.startswith(b"HTTP/1.1 408 "), received
        assert received.endswith(b"the request body stopped coming")
        assert IDLE_TIMEOUT * 0.8 <= closed - sent < IDLE_TIMEOUT + 5
        # Nothing was created, and the server saw no failure of its own.
        listed = httpx.get(f"{server.url}/v1/conversations", headers=bearer(token))
        assert listed.json()["conversations"] == []
        assert server.stop() == 0
        assert server.process.stderr is not None
        log = server.process.stderr.read()
    assert "Traceback" not in log and "failed" not in log, log


def test_a_body_in_pieces_is_read_while_they_keep_coming(server: Served) -> None:
    token = server.add_member("bea", "owner")
    body = b'{"name": "' + b"x" * 20 + b'"}'
    with _connect(server.url) as sock:
        sock.sendall(_post_head(token, len(body)))
        # Pauses shorter than the idle timeout, longer than it in all: not a deadline.
        for piece in (body[:8], body[8:16], body[16:24], body[24:]):
            time.sleep(IDLE_TIMEOUT / 3)
            sock.sendall(piece)
        status, _, answer = _read_response(sock)
    assert status == 201, answer
    assert json.loads(answer)["name"] == "x" * 20


# --- kept-alive connections ------------------------------------------------------------------


def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(server: Served) -> None:
    with _connect(server.url) as sock:
        sock.sendall(_request("/healthz"))
        assert _read_response(sock)[0] == 200
        # Still open a moment later: the connection is reused for a second request.
        time.sleep(IDLE_TIMEOUT / 4)
        sock.sendall(_request("/healthz"))
        status, _, _ = _read_response(sock)
        answered = time.monotonic()
        assert status == 200
        received, closed = _until_closed(sock)
    assert received == b""
    assert IDLE_TIMEOUT * 0.8 <= closed - answered < IDLE_TIMEOUT + 5


def test_a_partial_head_after_a_response_gets_the_header_timeout(server: Served) -> None:
    with _connect(server.url) as sock:
        sock.sendall(_request("/healthz"))
        assert _read_response(sock)[0] == 200
        sock.sendall(PARTIAL_HEAD)
        sent = time.monotonic()
        received, closed = _until_closed(sock)
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert closed - sent < HEADER_TIMEOUT + 5


def test_an_event_stream_outlives_both_timeouts(server: Served) -> None:
    token = server.add_member("ada", "owner")
    with httpx.Client(base_url=server.url, timeout=GUARD) as http:
        created = http.post("/v1/conversations", json={}, headers=bearer(token))
        assert created.status_code == 201, created.text
        cid = created.json()["id"]
        hold = HEADER_TIMEOUT + IDLE_TIMEOUT + 1
        started = time.monotonic()
        comments = 0
        with http.stream("GET", f"/v1/conversations/{cid}/watch", headers=bearer(token)) as r:
            assert r.status_code == 200
            for line in r.iter_lines():
                comments += line == ": keep-alive"
                if time.monotonic() - started > hold:
                    break
            else:
                raise AssertionError("the server ended the stream")
    assert comments >= 3


# --- the limit on connections ----------------------------------------------------------------


def test_a_connection_beyond_the_limit_is_answered_503_at_once(tmp_path: Path) -> None:
    limit = 4
    with served(tmp_path, "--max-connections", str(limit), "--header-timeout", "60") as server:
        held = [_connect(server.url) for _ in range(limit - 1)]
        try:
            # The limit's last connection is served.
            with _connect(server.url) as sock:
                sock.sendall(_request("/healthz"))
                assert _read_response(sock)[0] == 200
            # One more than the limit is refused at once, in the API's error format.
            held.append(_connect(server.url))
            with _connect(server.url) as sock:
                asked = time.monotonic()
                sock.sendall(_request("/healthz"))
                status, headers, body = _read_response(sock)
                answered = time.monotonic()
                assert _until_closed(sock)[0] == b""  # and closed
            assert status == 503
            assert headers["retry-after"] == "1"
            assert json.loads(body)["error"]["code"] == "unavailable"
            assert answered - asked < 2.0  # a hang guard: it is answered, not queued
        finally:
            for sock in held:
                sock.close()
        # Once they are gone, requests are served again.
        deadline = time.monotonic() + GUARD
        while True:
            response = httpx.get(f"{server.url}/healthz", timeout=GUARD)
            if response.status_code == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert response.status_code == 200


# --- slow clients do not delay members ------------------------------------------------------


@pytest.mark.anyio
async def test_hundreds_of_slow_clients_do_not_delay_a_member(tmp_path: Path) -> None:
    # The default limits (10 s for a head): the slow clients stay open during the request.
    with served(tmp_path) as server:
        token = await anyio.to_thread.run_sync(server.add_member, "ada", "viewer")
        host, port = server.url.removeprefix("http://").rsplit(":", 1)
        slow: list[anyio.abc.SocketStream] = []
        try:
            with anyio.fail_after(GUARD * 3):
                for index in range(300):
                    stream = await anyio.connect_tcp(host, int(port))
                    slow.append(stream)
                    if index % 2:  # half send part of a head, half send nothing
                        await stream.send(PARTIAL_HEAD)
            async with httpx.AsyncClient(base_url=server.url, timeout=GUARD) as http:
                started = time.monotonic()
                response = await http.get("/v1/me", headers=bearer(token))
                took = time.monotonic() - started
            assert response.status_code == 200, response.text
            assert response.json()["name"] == "ada"
            assert took < 2.0, took  # a hang guard: the request is not queued behind them
        finally:
            for stream in slow:
                await stream.aclose()


# --- options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--header-timeout", "0", "--header-timeout must be a number of seconds above 0"),
        ("--idle-timeout", "-1", "--idle-timeout must be a number of seconds above 0"),
        ("--max-connections", "0", "--max-connections must be between 1 and 1000000"),
    ],
)
def test_bad_limits_are_refused_with_exit_2(
    tmp_path: Path, python: str, cli_env: dict[str, str], option: str, value: str, message: str
) -> None:
    done = agentkit(python, cli_env, "serve", "--db", str(tmp_path / "m.db"), option, value)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr
