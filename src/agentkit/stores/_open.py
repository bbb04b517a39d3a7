"""`open_store`: a store from a path or URL (what a config file or `--store` option holds)."""

from __future__ import annotations

import os
import re
from urllib.parse import unquote_plus

from agentkit.errors import StoreLocationError
from agentkit.stores._base import Store
from agentkit.stores._memory import MemoryStore
from agentkit.stores._postgres import PostgresStore
from agentkit.stores._sqlite import SQLiteStore

__all__ = ["open_store"]

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_POOL_SIZE = "pool_size"


def _take_pool_size(url: str) -> tuple[str, int | None]:
    """The URL without its `pool_size` query parameter (ours, not libpq's, which refuses
    parameters it does not know), and that parameter's value. The other parameters stay
    exactly as written."""
    base, question, query = url.partition("?")
    if not question:
        return url, None
    kept, sizes = [], []
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if unquote_plus(name) == _POOL_SIZE:
            sizes.append(unquote_plus(value))
        else:
            kept.append(item)
    if not sizes:
        return url, None
    if len(sizes) > 1:
        raise StoreLocationError(f"the store URL's {_POOL_SIZE} parameter is given twice")
    size = sizes[0].strip()
    if not size.isascii() or not size.isdigit() or int(size) < 1:
        raise StoreLocationError(
            f"the store URL's {_POOL_SIZE} parameter must be a whole number of connections, "
            f"at least 1; got {sizes[0]!r}"
        )
    return base + ("?" + "&".join(kept) if kept else ""), int(size)


def open_store(url_or_path: str | os.PathLike[str]) -> Store:
    """The store a path or URL names. Nothing is opened until the store is first used.

    Accepted forms:

    - `":memory:"`, `"sqlite://"` or `"sqlite:///:memory:"`: a private in-memory SQLite
      database.
    - a file path, or `"sqlite:///relative/path.db"` / `"sqlite:////absolute/path.db"`
      (SQLAlchemy's spelling): a [`SQLiteStore`][agentkit.stores.SQLiteStore] on that file.
    - `"postgresql://..."` or `"postgres://..."`: a
      [`PostgresStore`][agentkit.stores.PostgresStore] with that DSN. The query
      parameter `pool_size` (e.g. `postgresql://host/db?pool_size=20`) is the store's,
      not libpq's: it is taken out of the DSN and sets the size of the store's
      connection pool (`max_connections`, 10 by default).
    - `"memory://"`: a [`MemoryStore`][agentkit.stores.MemoryStore].

    Raises:
        StoreLocationError: The URL has another scheme, the string is empty, or a
            PostgreSQL URL's `pool_size` is not a whole number of at least 1 (a
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
        dsn, pool_size = _take_pool_size(text)
        if pool_size is None:
            return PostgresStore(dsn)
        return PostgresStore(dsn, max_connections=pool_size)
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
