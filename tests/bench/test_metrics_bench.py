"""bench/metrics_overhead.py stays runnable: its quick mode measures every way, on SQLite
and on PostgreSQL when the tests have one (no timing is asserted: the machine is shared;
the figures are in docs/server.md)."""

from __future__ import annotations

import json
from pathlib import Path

from support.bench import quick
from support.pg import PG_DSN


def test_quick_metrics_bench_measures_every_way(tmp_path: Path) -> None:
    output = tmp_path / "metrics.json"
    args = ["--json", str(output), *(["--postgres", PG_DSN] if PG_DSN else [])]
    done = quick("metrics_overhead.py", *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    backends = ["sqlite", "postgres"] if PG_DSN else ["sqlite"]
    for backend in backends:
        for way in ("floor", "off", "on"):
            assert set(data[f"{backend} {way}"]) == {"append_us", "read_us"}
    assert set(data["http metrics on"]) == {"/healthz", "/v1/me"}
    assert set(data["alone: store call"]) == {"floor", "off", "on"}
    assert all(value > 0 for row in data.values() for value in row.values())
