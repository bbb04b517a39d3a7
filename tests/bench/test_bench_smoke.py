"""The benchmarks stay runnable: `bench/run.py --quick` completes and reports every workload.

No timing is asserted here (the suite runs on busy machines); the numbers live in
docs/performance.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from support.bench import quick
from support.pg import PG_DSN, PG_SKIP


def test_quick_benchmark_run_reports_every_workload(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = quick("run.py", "--output", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["quick"] is True
    rows = {row["workload"]: row for row in data["results"]}
    for workload in ("W1", "W2", "W3", "W3b", "W3b (pydantic)", "W3c", "W4", "W4 RSS"):
        assert workload in rows, f"{workload} missing from {sorted(rows)}"
        row = rows[workload]
        assert row["agentkit"] > 0 and row["floor"] > 0 and row["x_floor"] > 0
        assert f"| {workload} |" in done.stdout
    assert data["machine"]["nproc"] >= 1


def test_quick_http_benchmark_reports_agentkit_beside_its_floor() -> None:
    done = quick("http.py")
    assert done.returncode == 0, done.stderr
    assert "prompted at once: accepted | runs/s |" in done.stdout
    assert "deltas to 1 follower: all together | deltas/s |" in done.stdout


def test_quick_client_benchmark_reports_agentkit_beside_httpx_and_its_floor(
    tmp_path: Path,
) -> None:
    output = tmp_path / "client.json"
    done = quick("client.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    for client in ("agentkit", "httpx", "floor"):
        assert data["median_client_ms"][client] > 0
        assert f"| {client} |" in done.stdout


def test_quick_rooms_benchmark_reports_every_measure(tmp_path: Path) -> None:
    output = tmp_path / "rooms.json"
    done = quick("rooms.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    for key in ("sqlite/1", "sqlite/4"):
        assert data[key]["events_per_s"] > 0 and data[key]["floor_rows_per_s"] > 0
    assert data["sqlite/1/paced"]["latency_p50_ms"] > 0
    assert data["idle"]["heap_per_worker_bytes"] > 0


@pytest.mark.skipif(PG_DSN is None, reason=PG_SKIP)
def test_quick_scaleout_benchmark_keeps_room_positions_gap_free(tmp_path: Path) -> None:
    output = tmp_path / "scaleout.json"
    done = quick("scaleout.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    assert "gap-free room check: OK" in done.stdout
    data = json.loads(output.read_text())
    assert data["gap_free"] is True
    for config in ("sqlite/1", "postgresql/1", "postgresql/2"):
        assert data["configs"][config]["runs"]["accepted_per_s"] > 0
        assert data["configs"][config]["rooms"]["events_per_s"] > 0
    followers = data["configs"]["postgresql/2"]["follow"]
    assert followers["B"]["text_block"]["samples"] > 0  # read across processes
    assert followers["B"]["text_delta"]["samples"] > 0  # relayed live across processes
