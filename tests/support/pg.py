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
    if not PG_DSN:
        pytest.skip(PG_SKIP)
    return PG_DSN


@contextlib.contextmanager
def new_schema(prefix: str = "test") -> Iterator[str]:
    """A new schema of the test database (the test is skipped without one), dropped after."""
    import psycopg

    database = dsn()
    schema = f"agentkit_{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield schema
    finally:
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def schema_url(schema: str) -> str:
    """The test database's URL with `schema` first on the search path: what another
    process sharing the schema would use."""
    database = dsn()
    separator = "&" if "?" in database else "?"
    return f"{database}{separator}options={quote(f'-csearch_path={schema}')}"


@contextlib.contextmanager
def postgres_url(prefix: str) -> Iterator[str]:
    """A URL of the test database whose `search_path` is a new schema, dropped after."""
    with new_schema(prefix) as schema:
        yield schema_url(schema)
