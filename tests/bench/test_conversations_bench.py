"""bench/conversations.py stays runnable: its quick mode completes and reports every
measure (no timing is asserted; the numbers are in docs/performance.md)."""

from __future__ import annotations

import json
from pathlib import Path

from support.bench import quick


def test_quick_conversations_bench_reports_every_measure(tmp_path: Path) -> None:
    output = tmp_path / "conversations.json"
    done = quick("conversations.py", "--json", str(output))
    assert done.returncode == 0, done.stderr
    data = json.loads(output.read_text())
    assert data["quick"] is True
    assert data["accept"]["p50_ms"] > 0 and data["accept"]["floor_p50_ms"] > 0
    assert data["burst"]["accepted_runs_per_s"] > 0 and data["burst"]["first_part_p99_ms"] > 0
    assert "heap_bytes_per_conversation" in data["idle"]
    assert "| prompt() accept p50 / p99 |" in done.stdout
