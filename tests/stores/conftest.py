"""Fixtures of the store tests."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from support.pg import PG_DSN, PG_SKIP


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema for one test, dropped afterwards."""
    if not PG_DSN:
        pytest.skip(PG_SKIP)
    import psycopg

    schema = f"agentkit_test_{uuid.uuid4().hex[:16]}"
    yield schema
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
