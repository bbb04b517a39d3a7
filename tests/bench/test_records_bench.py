"""bench/records.py stays runnable: its quick mode completes and reports every measure on
SQLite, and on PostgreSQL when the tests have one (no timing is asserted; the numbers are
in docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

from support.bench import quick
from support.pg import PG_DSN


def test_quick_records_bench_reports_every_measure(tmp_path: Path) -> None:
    output = tmp_path / "records.json"
    done = quick("records.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["quick"] is True
    backends = ["SQLite", "PostgreSQL"] if PG_DSN else ["SQLite"]
    assert [row["backend"] for row in data["authentication"]] == backends
    assert [row["backend"] for row in data["first_page"]] == backends
    for row in data["authentication"]:
        assert all(value > 0 for value in row["us_per_lookup"]) and row["ratio"] > 0
    assert data["authentication"][0]["v3_us_per_lookup"] > 0
    for row in data["first_page"]:
        assert all(value > 0 for value in row["ms_per_page"]) and row["ms_per_middle_page"] > 0
    assert "| SQLite | member_by_token, 1 vs 1,000 members |" in done.stdout
