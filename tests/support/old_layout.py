"""A store database as older code left it, for the migration tests: the stores opened
next write an older table layout (`older_layout`), and statements run on the database
as a client of that layout would (`run_sql`)."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from agentkit.stores import _migrations


def older_layout(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make the stores opened next write the layout of `version` (as older code did)."""
    older = tuple(m for m in _migrations.MIGRATIONS if m.version <= version)
    for module in ("agentkit.stores._sqlite", "agentkit.stores._postgres"):
        monkeypatch.setattr(f"{module}.MIGRATIONS", older)
        monkeypatch.setattr(f"{module}.SCHEMA_VERSION", version)
    monkeypatch.setattr(_migrations, "SCHEMA_VERSION", version)


def run_sql(url: str, statements: list[str]) -> list[Any]:
    """Run `statements` on the database of `url` (a SQLite path or a PostgreSQL URL);
    the last one's rows."""
    rows: list[Any] = []
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            for statement in statements:
                cursor = conn.execute(statement)
                rows = cursor.fetchall() if cursor.description else []
        return rows
    conn = sqlite3.connect(url, isolation_level=None)
    try:
        for statement in statements:
            rows = conn.execute(statement).fetchall()
    finally:
        conn.close()
    return rows
