"""Uploads in process (`machine.uploads`, `client.upload`): the size limit and the quota
enforced on the bytes as they come, nothing left behind by an upload that fails, is
refused or is cancelled, and the member's folder never reached through a link.

What every client does (names, `-2`, viewers, attaching) is the conformance suite's
`upload` check; the HTTP route is tested against a real server in tests/server."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from agentkit.conversations import (
    DEFAULT_ATTACHMENT_ROOTS,
    Machine,
    UploadError,
    UploadQuotaError,
    UploadTooLargeError,
    default_attachment_roots,
    member_folder,
)
from agentkit.testing import ScriptedProvider

pytestmark = pytest.mark.anyio


def _machine(tmp_path: Path, **options: object) -> Machine:
    root = tmp_path / "space"
    root.mkdir(exist_ok=True)
    return Machine(
        store=str(tmp_path / "m.db"),
        provider=ScriptedProvider([]),
        attachment_roots=[root],
        **options,  # type: ignore[arg-type]
    )


def _files(folder: Path) -> list[str]:
    """Every entry of `folder`, hidden ones (temporary files) included."""
    return sorted(os.listdir(folder)) if folder.exists() else []


async def _chunks(*parts: bytes, then: BaseException | None = None) -> AsyncIterator[bytes]:
    for part in parts:
        await anyio.lowlevel.checkpoint()
        yield part
    if then is not None:
        raise then


async def test_over_the_limit_is_refused_as_it_is_read_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    async with _machine(tmp_path, max_upload_bytes=10) as machine:
        await machine.add_member("ada", "editor")
        ada = await machine.member("ada")
        folder = tmp_path / "space" / "uploads" / (await machine.member("ada")).id
        # No declared size: the limit is enforced on the bytes read.
        with pytest.raises(UploadTooLargeError, match="10 bytes"):
            await machine.uploads.save(ada, "big.bin", _chunks(b"123456", b"78901"))
        assert _files(folder) == []
        # A declared size over the limit is refused before anything is read.
        with pytest.raises(UploadTooLargeError):
            await machine.uploads.save(ada, "big.bin", _chunks(), declared_size=11)
        exact = await machine.uploads.save(ada, "ten.bin", _chunks(b"12345", b"67890"))
        assert exact.size == 10 and (folder / "ten.bin").read_bytes() == b"1234567890"
        big = tmp_path / "big.bin"
        big.write_bytes(b"x" * 11)
        with pytest.raises(UploadTooLargeError):
            await machine.client(ada).upload(big)
        assert _files(folder) == ["ten.bin"]


async def test_the_quota_counts_the_folder_and_refuses_before_writing_past_it(
    tmp_path: Path,
) -> None:
    async with _machine(tmp_path, upload_quota_bytes=100) as machine:
        await machine.add_member("ada", "editor")
        await machine.add_member("bob", "editor")
        ada = machine.client(await machine.member("ada"))
        bob = machine.client(await machine.member("bob"))
        folder = tmp_path / "space" / "uploads" / (await machine.member("ada")).id
        await ada.upload(b"a" * 60, filename="one.txt")
        with pytest.raises(UploadQuotaError, match="quota of 100 bytes"):
            await ada.upload(b"b" * 41, filename="two.txt")
        assert _files(folder) == ["one.txt"]
        # Streamed without a size: refused at the chunk that goes over.
        written: list[int] = []

        async def counted() -> AsyncIterator[bytes]:
            for _ in range(10):
                written.append(10)
                yield b"c" * 10

        with pytest.raises(UploadQuotaError):
            await machine.uploads.save(ada.member, "three.txt", counted())
        assert sum(written) == 50  # 60 + 40 fits; the fifth chunk would not
        assert _files(folder) == ["one.txt"]
        await ada.upload(b"d" * 40, filename="four.txt")  # exactly the quota
        # Another member's folder has its own quota, read from the disk as it is.
        await bob.upload(b"e" * 100, filename="full.txt")
        with pytest.raises(UploadQuotaError):
            await bob.upload(b"f", filename="more.txt")
        (tmp_path / "space" / "uploads" / (await machine.member("bob")).id / "full.txt").unlink()
        await bob.upload(b"f" * 100, filename="again.txt")


async def test_concurrent_uploads_share_the_quota(tmp_path: Path) -> None:
    async with _machine(tmp_path, upload_quota_bytes=100) as machine:
        await machine.add_member("ada", "editor")
        ada = await machine.member("ada")
        gate = anyio.Event()
        outcomes: list[str] = []

        async def slow(name: str) -> None:
            async def body() -> AsyncIterator[bytes]:
                yield b"x" * 30
                await gate.wait()
                yield b"x" * 30

            try:
                await machine.uploads.save(ada, name, body())
                outcomes.append("stored")
            except UploadQuotaError:
                outcomes.append("refused")

        async with anyio.create_task_group() as group:
            group.start_soon(slow, "a.bin")
            group.start_soon(slow, "b.bin")
            await anyio.sleep(0.1)
            gate.set()
        assert sorted(outcomes) == ["refused", "stored"]
        assert len(_files(tmp_path / "space" / "uploads" / ada.id)) == 1


async def test_a_failing_or_cancelled_upload_leaves_nothing(tmp_path: Path) -> None:
    async with _machine(tmp_path) as machine:
        await machine.add_member("ada", "editor")
        ada = await machine.member("ada")
        folder = tmp_path / "space" / "uploads" / (await machine.member("ada")).id
        with pytest.raises(OSError, match="cut"):
            await machine.uploads.save(
                ada, "cut.txt", _chunks(b"half", then=ConnectionResetError("cut"))
            )
        assert _files(folder) == []

        async def forever() -> AsyncIterator[bytes]:
            yield b"some"
            await anyio.sleep_forever()
            yield b""  # pragma: no cover

        with anyio.move_on_after(0.2):
            await machine.uploads.save(ada, "hang.txt", forever())
        assert _files(folder) == []


async def test_a_link_in_place_of_the_member_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    async with _machine(tmp_path) as machine:
        await machine.add_member("ada", "editor")
        uploads = tmp_path / "space" / "uploads"
        uploads.mkdir()
        (uploads / (await machine.member("ada")).id).symlink_to(elsewhere)
        with pytest.raises(UploadError, match="not a plain folder"):
            await machine.client(await machine.member("ada")).upload(b"x", filename="x")
        assert _files(elsewhere) == []


async def test_no_root_that_exists_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "not-here"
    async with Machine(
        store=str(tmp_path / "m.db"), provider=ScriptedProvider([]), attachment_roots=[missing]
    ) as machine:
        await machine.add_member("ada", "owner")
        with pytest.raises(UploadError, match="no attachment root to store uploads in"):
            await machine.client(await machine.member("ada")).upload(b"x", filename="x")
        assert not missing.exists()


async def test_uploads_go_to_the_first_root_that_exists(tmp_path: Path) -> None:
    second = tmp_path / "second"
    second.mkdir()
    async with Machine(
        store=str(tmp_path / "m.db"),
        provider=ScriptedProvider([]),
        attachment_roots=[tmp_path / "first", second],
    ) as machine:
        await machine.add_member("ada", "owner")
        ada = await machine.member("ada")
        stored = await machine.client(ada).upload(b"x", filename="x.txt")
        assert stored.path == str(second / "uploads" / member_folder(ada) / "x.txt")


def test_the_limits_must_be_positive(tmp_path: Path) -> None:
    for options in ({"max_upload_bytes": 0}, {"upload_quota_bytes": -1}):
        with pytest.raises(ValueError, match="above 0"):
            _machine(tmp_path, **options)


def test_default_roots_fall_back_to_a_folder_beside_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if any(os.path.isdir(root) for root in DEFAULT_ATTACHMENT_ROOTS):
        assert default_attachment_roots(tmp_path / "m.db") == DEFAULT_ATTACHMENT_ROOTS
        pytest.skip("this computer has /space or /rool-drive")
    assert default_attachment_roots(tmp_path / "data" / "m.db") == (
        str(tmp_path / "data" / "attachments"),
    )
    assert (tmp_path / "data" / "attachments").is_dir()
    assert default_attachment_roots(f"sqlite:///{tmp_path}/x/m.db") == (
        str(tmp_path / "x" / "attachments"),
    )
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for store in ("postgresql://db.internal/agentkit", ":memory:"):
        assert default_attachment_roots(store) == (
            str(tmp_path / "state" / "agentkit" / "attachments"),
        )


def test_serve_s_defaults_are_the_machine_s() -> None:
    from agentkit.cli import _serve
    from agentkit.conversations import DEFAULT_MAX_UPLOAD_BYTES, DEFAULT_UPLOAD_QUOTA_BYTES

    assert _serve.DEFAULT_MAX_UPLOAD_BYTES == DEFAULT_MAX_UPLOAD_BYTES
    assert _serve.DEFAULT_UPLOAD_QUOTA_BYTES == DEFAULT_UPLOAD_QUOTA_BYTES
