"""The benchmarks stay runnable: `bench/run.py --quick` completes and reports every workload.

No timing is asserted here (the suite runs on busy machines); the numbers live in
docs/performance.md.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_benchmark_run_reports_every_workload(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--output", str(output)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["quick"] is True
    rows = {row["workload"]: row for row in data["results"]}
    for workload in ("W1", "W2", "W3", "W4", "W4 RSS"):
        assert workload in rows, f"{workload} missing from {sorted(rows)}"
        row = rows[workload]
        assert row["agentkit"] > 0 and row["floor"] > 0 and row["x_floor"] > 0
        assert f"| {workload} |" in done.stdout
    assert data["machine"]["nproc"] >= 1
