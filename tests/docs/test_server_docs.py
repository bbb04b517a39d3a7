"""The shell sessions of docs/server.md and docs/rooms.md run as written, against a real
`agentkit serve`."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from support.paths import ROOT, SRC

SH_FENCE = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)


def _section(page: str, heading: str) -> str:
    start = page.index(f"\n## {heading}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end != -1 else None]


def _run_session(page_name: str, heading: str, folder: Path) -> str:
    """The page's `sh` blocks under `heading`, run in order by one bash, in `folder`, with
    the repository's root importable (`examples.*`), as a reader in a checkout would."""
    page = (ROOT / "docs" / page_name).read_text(encoding="utf-8")
    blocks = SH_FENCE.findall(_section(page, heading))
    assert len(blocks) >= 2 and "agentkit serve" in blocks[0]
    script = "set -euo pipefail\n" + "\n".join(blocks)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)]),  # this checkout's agentkit
    }
    for name in ("AGENTKIT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the server it starts in the background dies with it
    )
    try:
        out, err = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 9)
    assert process.returncode == 0, f"{out}\n{err}"
    return out


def test_the_curl_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "A session with curl", tmp_path)
    assert '{"status":"ok"}' in out
    assert "event: completed" in out
    events = (tmp_path / "events.txt").read_text()
    assert events.startswith(": stream\n")


def test_the_stream_wait_and_run_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "Stream, wait, or run without a conversation", tmp_path)
    streamed = (tmp_path / "stream.txt").read_text()
    assert streamed.startswith(": stream\n") and "event: text_delta" in streamed
    head = (tmp_path / "head.txt").read_text().lower()
    assert "location: /v1/conversations/" in head and "agentkit-run-id: " in head
    assert out.rstrip().endswith("true")


def test_the_fork_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "Fork", tmp_path)
    assert out.count("true") == 3


def test_the_busy_conversations_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "Busy conversations", tmp_path)
    assert out.splitlines() == [
        "running",
        "409",
        '["say later","queued","say never","queued"]',
        "204",
        "1",
        "1",
        '["completed","cancelled","completed","completed","completed","completed"]',
    ], out


def test_the_metrics_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "Metrics", tmp_path)
    lines = out.splitlines()
    assert any(
        line.startswith("agentkit_runs_started_total{") and line.endswith(" 1.0") for line in lines
    )
    assert 'agentkit_runs_active{status="running"} 0.0' in lines
    assert int(lines[-1]) >= 10  # the listener's families, each with its help


def test_the_people_in_the_loop_session_runs(tmp_path: Path) -> None:
    out = _run_session("server.md", "People in the loop", tmp_path)
    lines = out.splitlines()
    assert lines[:3] == [
        '["permission","Bash",{"command":"echo approved"}]',
        "202",
        "request_decided",
    ]
    assert "event: permission_request" in lines and "event: permission_decision" in lines
    assert "event: tool_result" in lines and "event: completed" in lines


def test_the_rooms_extension_session_runs(tmp_path: Path) -> None:
    out = _run_session("rooms.md", "Over HTTP, and extensions", tmp_path)
    assert '"positions":[1]' in out
    assert out.rstrip().endswith("4 words")


def test_the_pages_name_every_route() -> None:
    from agentkit.server import openapi_document

    pages = {
        name: (ROOT / "docs" / name).read_text(encoding="utf-8")
        for name in ("server.md", "rooms.md")
    }
    for path, operations in openapi_document()["paths"].items():
        page = pages["rooms.md" if path.startswith("/v1/rooms") else "server.md"]
        for method in operations:
            route = f"`{method.upper()} {path}"
            assert route + "`" in page or route + "?" in page, (method, path)
