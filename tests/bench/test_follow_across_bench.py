"""The cross-process follow benchmark stays runnable: `bench/follow_across.py --quick`
completes, its late joiners got the whole log, and it reports their lag beside the floor.
No timing is asserted here; the numbers live in docs/performance.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.bench import quick
from support.pg import PG_DSN, PG_SKIP


@pytest.mark.skipif(PG_DSN is None, reason=PG_SKIP)
def test_quick_follow_across_benchmark_reports_late_joiners_beside_the_floor(
    tmp_path: Path,
) -> None:
    output = tmp_path / "follow.json"
    done = quick("follow_across.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    results = json.loads(output.read_text())["results"]["quick"]
    assert results["complete"] is True  # every reader: each offset once, in order
    assert results["lag_p99_ms"] > 0 and results["floor_lag_p99_ms"] > 0
    assert len(results["joins"]) >= 2
    assert "| quick | floor: reader in the run's process |" in done.stdout
