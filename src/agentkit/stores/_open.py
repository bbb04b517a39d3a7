"""`open_store`: a store from a path or URL (what a config file or `--store` option holds)."""

from __future__ import annotations

import os
import re

from agentkit.errors import StoreLocationError
from agentkit.stores._base import Store
from agentkit.stores._memory import MemoryStore
from agentkit.stores._postgres import PostgresStore
from agentkit.stores._sqlite import SQLiteStore

__all__ = ["open_store"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def open_store(url_or_path: str | os.PathLike[str]) -> Store:
    """The store a path or URL names. Nothing is opened until the store is first used.

    Accepted forms:

    - `":memory:"`, `"sqlite://"` or `"sqlite:///:memory:"`: a private in-memory SQLite
      database.
    - a file path, or `"sqlite:///relative/path.db"` / `"sqlite:////absolute/path.db"`
      (SQLAlchemy's spelling): a [`SQLiteStore`][agentkit.stores.SQLiteStore] on that file.
    - `"postgresql://..."` or `"postgres://..."`: a
      [`PostgresStore`][agentkit.stores.PostgresStore] with that DSN.
    - `"memory://"`: a [`MemoryStore`][agentkit.stores.MemoryStore].

    Raises:
        StoreLocationError: The URL has another scheme, or the string is empty (a
            `StoreError` and a `ValueError`).
    """
    text = os.fspath(url_or_path)
    if not text.strip():
        raise StoreLocationError("store location is empty: give a file path, ':memory:' or a URL")
    match = _SCHEME.match(text)
    if match is None:
        return SQLiteStore(text if text == ":memory:" else os.path.expanduser(text))
    scheme = match.group(1).lower()
    if scheme in ("postgresql", "postgres"):
        return PostgresStore(text)
    if scheme == "sqlite":
        path = text[len(match.group(0)) :]
        if path in ("", "/", "/:memory:"):
            return SQLiteStore(":memory:")
        return SQLiteStore(path.removeprefix("/"))
    if scheme == "memory":
        return MemoryStore()
    raise StoreLocationError(
        f"unknown store URL scheme {scheme!r} in {text!r}: use a file path, ':memory:', "
        "'sqlite:///path.db' or 'postgresql://user@host/db'"
    )
