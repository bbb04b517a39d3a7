"""The store interface in five parts: `SessionStore`, `RunStore`, `RoomStore`,
`RecordStore` and `QueueStore`, which `Store` combines. Every backend is each part, at run
time and for `mypy --strict`, so code that needs only rooms (or only sessions, runs,
records) can ask for just that."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentkit.stores import (
    MemoryStore,
    PostgresStore,
    QueueStore,
    RecordStore,
    RoomStore,
    RunStore,
    SessionStore,
    SQLiteStore,
    Store,
)
from support.paths import SRC

HERE = Path(__file__).resolve().parent
PARTS = [SessionStore, RunStore, RoomStore, RecordStore, QueueStore]


def _backends() -> list[Any]:
    # A PostgresStore connects on first use: building one needs no database.
    return [MemoryStore(), SQLiteStore(":memory:"), PostgresStore("postgresql://u@h:5432/db")]


def _methods(protocol: type) -> set[str]:
    return {
        name
        for name, member in vars(protocol).items()
        if not name.startswith("_") and inspect.isfunction(member)
    }


@pytest.mark.parametrize("part", [*PARTS, Store], ids=lambda p: p.__name__)
@pytest.mark.parametrize("store", _backends(), ids=lambda s: type(s).__name__)
def test_every_backend_is_every_part(store: Any, part: type) -> None:
    assert isinstance(store, part)


def test_store_is_the_five_parts_and_aclose() -> None:
    assert all(issubclass(Store, part) for part in PARTS)
    own = [_methods(part) for part in PARTS]
    # the parts share no method, and together with `aclose` they are the whole interface
    assert sum(len(methods) for methods in own) == len(set().union(*own))
    assert set().union(*own) | _methods(Store) == {
        name for name in dir(Store) if not name.startswith("_")
    }
    assert _methods(Store) == {"aclose"}


def test_a_part_is_not_the_whole_store() -> None:
    class RoomsOnly:
        pass

    for name in _methods(RoomStore):
        setattr(RoomsOnly, name, lambda self: None)
    assert isinstance(RoomsOnly(), RoomStore)
    assert not isinstance(RoomsOnly(), SessionStore)
    assert not isinstance(RoomsOnly(), Store)


def test_every_backend_is_every_part_for_mypy(tmp_path: Path) -> None:
    found = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(tmp_path / "cache"),
            str(HERE / "typing" / "store_protocols.py"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "MYPYPATH": str(SRC)},
        cwd=HERE,
        timeout=300,
    )
    assert found.returncode == 0, found.stdout + found.stderr
