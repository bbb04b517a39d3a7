"""The PostgreSQL serving benchmarks stay runnable: `bench/served_pg.py --quick` counts a
served run's statements from PostgreSQL's log beside SQLite's CPU, and
`bench/durable_start.py --quick` times `Runtime.start` on a fresh database (DBOS, the peer,
runs only in the full benchmark, from its own virtual environment).

No timing is asserted here; the numbers live in docs/performance.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.bench import quick
from support.pg import PG_DSN, PG_SKIP


def test_quick_served_benchmark_runs_on_sqlite_and_postgresql(tmp_path: Path) -> None:
    output = tmp_path / "served.json"
    done = quick("served_pg.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["sqlite"]["server_cpu_ms_per_run"] > 0
    assert "| server CPU, ms |" in done.stdout
    if PG_DSN is not None:
        assert data["postgresql"]["server_cpu_ms_per_run"] > 0
        assert data["cpu_pg_over_sqlite"] > 0


@pytest.mark.skipif(PG_DSN is None, reason=PG_SKIP)
def test_quick_durable_start_benchmark_times_agentkit_without_dbos(tmp_path: Path) -> None:
    output = tmp_path / "durable.json"
    done = quick("durable_start.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert "dbos" not in data
    for kind in ("sequential", "concurrent"):
        assert data["agentkit"][kind]["start_p50_ms"] > 0
    assert "| one at a time |" in done.stdout


@pytest.mark.skipif(PG_DSN is None, reason=PG_SKIP)
def test_quick_pool_benchmark_runs_agentkit_pool() -> None:
    done = quick("pg_pool.py")
    assert done.returncode == 0, done.stderr
    assert "| agentkit |" in done.stdout
