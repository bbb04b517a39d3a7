"""`bench/served.py --quick` stays runnable: agentkit's server measured on SQLite and, where
PostgreSQL is at hand, on PostgreSQL, its statements counted. The peers are left out
(`--no-peers`): they live in virtual environments of their own, outside the test suite.

No timing is asserted here; the figures live in docs/performance.md.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.bench import quick
from support.pg import PG_DSN


def test_quick_served_benchmark_reports_agentkit_on_each_store(tmp_path: Path) -> None:
    output = tmp_path / "served.json"
    done = quick("served.py", "--no-peers", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    systems = data["systems"]
    expected = ["agentkit-sqlite"] + (["agentkit-postgresql"] if PG_DSN else [])
    for name in expected:
        assert name in systems, f"{name} missing: {data['skipped']}"
    for name, row in systems.items():
        assert name.startswith("agentkit")
        assert row["server_cpu_ms_fast"] > 0 and row["server_cpu_ms_paced"] > 0
        assert row["start_answered_p50_ms"] > 0 and row["server_peak_rss_mb"] > 0
    assert "| server CPU, fast model |" in done.stdout
    postgres = systems.get("agentkit-postgresql")
    if postgres is not None and "throwaway" in postgres["postgres"]:
        assert postgres["statements_per_run_fast"] > 0  # counted by PostgreSQL itself
        assert postgres["statements_top"]
