"""`POST /v1/files` against a real `agentkit serve`: raw and multipart bodies, the size
limit and the quota on the bytes as they come, bad names and bodies answered (never a
500), nothing left behind by a refused or cut-off upload; and what the server says of its
attachment roots at start, with the folder beside its store when neither default exists.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentkit.conversations import DEFAULT_ATTACHMENT_ROOTS
from agentkit.server._uploads import MultipartFile
from support.http_api import bearer
from support.served import Served, served


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Served]:
    with served(tmp_path, "--max-upload-bytes", "1000", "--upload-quota-bytes", "2500") as running:
        yield running


@pytest.fixture
def http(server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        yield client


def _folder(server: Served, member: str) -> Path:
    return server.root / "uploads" / server.member_id(member)


def _entries(folder: Path) -> list[str]:
    """Every entry, hidden ones (an upload's temporary file) included."""
    return sorted(os.listdir(folder)) if folder.exists() else []


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    assert error["message"]
    return error


def test_a_raw_body_and_a_multipart_one_are_stored_and_attach(
    server: Served, http: httpx.Client
) -> None:
    token = server.add_member("ada", "editor")
    raw = http.post(
        "/v1/files",
        params={"filename": "notes.txt"},
        content=b"some notes",
        headers={**bearer(token), "Content-Type": "text/plain"},
    )
    assert raw.status_code == 201, raw.text
    path = str(_folder(server, "ada") / "notes.txt")
    assert raw.json() == {"path": path, "name": "notes.txt", "size": 10}
    form = http.post(
        "/v1/files",
        files={"file": ("C:\\fakepath\\notes.txt", b"other notes", "text/plain")},
        data={"comment": "a field before is skipped"},
        headers=bearer(token),
    )
    assert form.status_code == 201, form.text
    assert form.json()["name"] == "notes-2.txt"  # never replaced
    assert Path(form.json()["path"]).read_bytes() == b"other notes"
    named = http.post(
        "/v1/files",
        params={"filename": "chosen.md"},
        files={"file": ("ignored.txt", b"# title")},
        headers=bearer(token),
    )
    assert named.json()["name"] == "chosen.md"
    conversation = http.post("/v1/conversations", json={}, headers=bearer(token)).json()["id"]
    run = http.post(
        f"/v1/conversations/{conversation}/runs",
        json={"prompt": "say read", "attachments": [path]},
        headers=bearer(token),
    )
    assert run.status_code == 202, run.text
    assert _entries(_folder(server, "ada")) == ["chosen.md", "notes-2.txt", "notes.txt"]


def test_over_the_limit_is_413_as_declared_or_as_read(server: Served, http: httpx.Client) -> None:
    token = server.add_member("ada", "editor")
    declared = http.post(
        "/v1/files", params={"filename": "big.bin"}, content=b"x" * 1001, headers=bearer(token)
    )
    _error(declared, 413, "upload_too_large")

    def chunked() -> Iterator[bytes]:  # no Content-Length: the limit is on the bytes read
        for _ in range(11):
            yield b"y" * 100

    streamed = http.post(
        "/v1/files", params={"filename": "big.bin"}, content=chunked(), headers=bearer(token)
    )
    _error(streamed, 413, "upload_too_large")
    form = http.post("/v1/files", files={"file": ("big.bin", b"z" * 1001)}, headers=bearer(token))
    _error(form, 413, "upload_too_large")
    exact = http.post("/v1/files", files={"file": ("ok.bin", b"z" * 1000)}, headers=bearer(token))
    assert exact.status_code == 201 and exact.json()["size"] == 1000
    assert _entries(_folder(server, "ada")) == ["ok.bin"]


def test_over_the_quota_is_507_and_nothing_past_it_is_written(
    server: Served, http: httpx.Client
) -> None:
    token = server.add_member("ada", "editor")
    for name in ("one", "two"):
        stored = http.post(
            "/v1/files", params={"filename": name}, content=b"x" * 1000, headers=bearer(token)
        )
        assert stored.status_code == 201, stored.text
    over = http.post(
        "/v1/files", params={"filename": "three"}, content=b"x" * 501, headers=bearer(token)
    )
    _error(over, 507, "upload_quota_exceeded")
    over_form = http.post("/v1/files", files={"file": ("three", b"x" * 501)}, headers=bearer(token))
    _error(over_form, 507, "upload_quota_exceeded")
    assert _entries(_folder(server, "ada")) == ["one", "two"]
    other = server.add_member("bob", "editor")  # a quota per member
    assert (
        http.post(
            "/v1/files", params={"filename": "b"}, content=b"x" * 1000, headers=bearer(other)
        ).status_code
        == 201
    )
    fits = http.post(
        "/v1/files", params={"filename": "three"}, content=b"x" * 500, headers=bearer(token)
    )
    assert fits.status_code == 201


def test_viewers_bad_names_and_bad_bodies_are_answered(server: Served, http: httpx.Client) -> None:
    editor = server.add_member("ada", "editor")
    viewer = server.add_member("vic", "viewer")
    assert http.post("/v1/files", params={"filename": "x"}, content=b"x").status_code == 401
    _error(
        http.post("/v1/files", params={"filename": "x"}, content=b"x", headers=bearer(viewer)),
        403,
        "access_denied",
    )
    for name in ("../up.txt", "a\x00b", "tab\there", ".env", "", "dir/", "é" * 101):
        error = _error(
            http.post("/v1/files", params={"filename": name}, content=b"x", headers=bearer(editor)),
            422,
            "upload_error",
        )
        assert error["field"] == "filename"
    nameless = http.post("/v1/files", content=b"x", headers=bearer(editor))
    assert "filename=" in _error(nameless, 422, "upload_error")["message"]
    multipart = {**bearer(editor), "Content-Type": "multipart/form-data; boundary=XyZ"}
    cases: list[tuple[bytes, int, str]] = [
        (b"no boundary at all", 400, "bad_request"),
        (
            b"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--XyZ--\r\n",
            422,
            "upload_error",
        ),  # no file
        (
            b"--XyZ\r\nContent-Disposition: form-data; name=f; filename=a.txt\r\n\r\nbody",
            400,
            "bad_request",
        ),  # cut short: no closing boundary
        (
            b"--XyZ\r\nContent-Disposition: form-data; name=f; filename=a.txt\r\n\r\none\r\n"
            b"--XyZ\r\nContent-Disposition: form-data; name=g; filename=b.txt\r\n\r\ntwo\r\n"
            b"--XyZ--\r\n",
            422,
            "upload_error",
        ),  # two files
        (b"--XyZ\r\n" + b"X-Long: " + b"h" * 20_000 + b"\r\n\r\n", 400, "bad_request"),
    ]
    for body, status, code in cases:
        _error(http.post("/v1/files", content=body, headers=multipart), status, code)
    no_boundary = {**bearer(editor), "Content-Type": "multipart/form-data"}
    _error(http.post("/v1/files", content=b"x", headers=no_boundary), 400, "bad_request")
    assert _entries(_folder(server, "ada")) == []
    assert not _folder(server, "vic").exists()


def test_a_client_that_goes_away_mid_body_leaves_nothing(
    server: Served, http: httpx.Client
) -> None:
    token = server.add_member("ada", "editor")
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /v1/files?filename=cut.bin HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {token}\r\n".encode()
            + b"Content-Length: 900\r\n\r\n"
            + b"x" * 400
        )
        time.sleep(0.3)
    deadline = time.monotonic() + 10
    while _entries(_folder(server, "ada")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _entries(_folder(server, "ada")) == []
    # The server goes on: the next upload is stored.
    again = http.post(
        "/v1/files", params={"filename": "cut.bin"}, content=b"x" * 900, headers=bearer(token)
    )
    assert again.status_code == 201 and again.json()["name"] == "cut.bin"


def test_the_route_is_described(http: httpx.Client) -> None:
    operation = http.get("/openapi.json").json()["paths"]["/v1/files"]["post"]
    assert operation["operationId"] == "uploadFile"
    assert set(operation["requestBody"]["content"]) == {
        "application/octet-stream",
        "multipart/form-data",
    }
    assert {"201", "403", "413", "422", "507"} <= set(operation["responses"])


# --- the multipart parser, byte by byte --------------------------------------------------


@pytest.mark.anyio
async def test_the_multipart_parser_finds_the_boundary_across_any_split() -> None:
    content = b"a\r\n--XyA\r\n-XyZ--XyZ\r\n--Xy" * 50  # almost delimiters, in the file
    body = (
        b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=x\r\n\r\nfield\r\n"
        b"--XyZ\r\nContent-Disposition: form-data; name=file; filename*=UTF-8''%C3%A9t%C3%A9.txt"
        b"\r\nContent-Type: text/plain\r\n\r\n" + content + b"\r\n--XyZ\r\n"
        b"Content-Disposition: form-data; name=after\r\n\r\nlast\r\n--XyZ--\r\nepilogue"
    )
    for size in (1, 2, 7, 64, len(body)):

        async def chunks(size: int = size) -> Any:
            for start in range(0, len(body), size):
                yield body[start : start + size]

        parser = MultipartFile(chunks(), b"XyZ")
        assert await parser.start() == "été.txt"
        assert b"".join([chunk async for chunk in parser.body()]) == content


# --- what serve says of its roots ----------------------------------------------------------


def test_serve_says_its_roots_and_where_uploads_go(tmp_path: Path) -> None:
    missing = tmp_path / "not-here"
    (tmp_path / "space").mkdir()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentkit",
            "serve",
            "--db",
            str(tmp_path / "own.db"),
            "--port",
            "0",
            "--provider",
            "test",
            "--attachment-root",
            str(missing),
            "--attachment-root",
            str(tmp_path / "space"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stderr = _stop(process)
    assert f"attachment root {missing} does not exist" in stderr
    assert f"attachment root {tmp_path / 'space'}\n" in stderr
    assert f"uploads go to {tmp_path / 'space' / 'uploads'}/<member id>/" in stderr


def _stop(process: subprocess.Popen[str]) -> str:
    assert process.stdout is not None
    url = process.stdout.readline()
    assert url.startswith("http://"), url
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=30)
    return stderr


@pytest.mark.skipif(
    any(os.path.isdir(root) for root in DEFAULT_ATTACHMENT_ROOTS),
    reason="this computer has /space or /rool-drive",
)
def test_without_the_default_roots_serve_uses_a_folder_beside_its_store(tmp_path: Path) -> None:
    db = tmp_path / "data" / "machine.db"
    command = [sys.executable, "-m", "agentkit", "serve", "--db", str(db), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--provider", "agentkit.testing:conformance_provider"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    try:
        from agentkit.conversations import Members
        from agentkit.stores import open_store

        async def add() -> str:
            store = open_store(db)
            try:
                return await Members(store).add("ada", "owner")
            finally:
                await store.aclose()

        import anyio

        token = anyio.run(add)
        with httpx.Client(base_url=url, timeout=30) as http:
            stored = http.post(
                "/v1/files", params={"filename": "a.txt"}, content=b"a", headers=bearer(token)
            )
            assert stored.status_code == 201, stored.text
            path = stored.json()["path"]
            ada_id = http.get("/v1/me", headers=bearer(token)).json()["id"]
            folder = tmp_path / "data" / "attachments" / "uploads" / ada_id
            assert path == str(folder / "a.txt")
            conversation = http.post("/v1/conversations", json={}, headers=bearer(token))
            run = http.post(
                f"/v1/conversations/{conversation.json()['id']}/runs",
                json={"prompt": "say ok", "attachments": [path]},
                headers=bearer(token),
            )
            assert run.status_code == 202, run.text
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    attachments = tmp_path / "data" / "attachments"
    assert f"neither /space nor /rool-drive exists: attachments and uploads use {attachments}" in (
        stderr
    )
