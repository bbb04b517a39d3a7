"""The tests' PostgreSQL database (`AGENTKIT_TEST_POSTGRES_DSN`), and a schema of its own
for a test, as a store URL."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

PG_DSN = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
"""The test database's DSN; without one, the PostgreSQL tests are skipped."""
PG_SKIP = "AGENTKIT_TEST_POSTGRES_DSN is not set (e.g. postgresql://postgres@127.0.0.1:5432/test)"
"""Why they are skipped."""


def dsn() -> str:
    """The test database's DSN (the test is skipped without one)."""
    found = os.environ.get("AGENTKIT_TEST_POSTGRES_DSN")
    if not found:
        pytest.skip("AGENTKIT_TEST_POSTGRES_DSN is not set")
    return found


@contextlib.contextmanager
def postgres_url(prefix: str) -> Iterator[str]:
    """A URL of the test database whose `search_path` is a new schema, dropped after."""
    import psycopg

    database = dsn()
    schema = f"agentkit_{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in database else "?"
    try:
        yield f"{database}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
