"""`agentkit run` never waits for nobody: without a terminal, a call that needs a person's
consent is denied with a message saying how to allow it, and `--permission-mode` runs the
agent under another mode."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import agentkit

SCRIPTED = ("--format", "jsonl", "--provider", "scripted", "--script")
AGENT = "from agentkit import AgentSpec\nagent = AgentSpec(id='demo:sh', tools=('Bash',))\n"


def _run(python: str, env: dict[str, str], folder: Path, *extra: str) -> list[dict[str, object]]:
    (folder / "sh.py").write_text(AGENT)
    script = folder / "script.json"
    call = {"tool_calls": [{"name": "Bash", "input": {"command": "echo hi"}}]}
    script.write_text(json.dumps([call, {"text": "finished"}]))
    done = agentkit(
        python,
        env,
        "run",
        "sh:agent",
        "go",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--format",
        "jsonl",
        *extra,
        cwd=folder,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_without_a_terminal_a_call_needing_permission_is_denied(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    events = _run(python, cli_env, tmp_path)
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["isError"] is True
    assert result["output"] == (
        "permission denied: Bash needs permission; run interactively or use "
        "--permission-mode acceptEdits (edits) or --permission-mode bypassPermissions "
        "(everything)"
    )
    assert not [e for e in events if e["type"] == "permission_request"]
    assert events[-1]["type"] == "turn_end" and events[-1]["status"] == "completed"


def test_permission_mode_runs_it_without_asking(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    events = _run(python, cli_env, tmp_path, "--permission-mode", "bypassPermissions")
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result.get("isError") is not True and "hi" in str(result["output"])


def _run_on_a_terminal(
    python: str, env: dict[str, str], folder: Path, typed: bytes, calls: int
) -> tuple[list[dict[str, object]], str]:
    """`agentkit run` whose standard input is a terminal (a pseudo-terminal) on which the
    person has typed `typed`; its events and standard error."""
    import os
    import pty
    import subprocess

    (folder / "sh.py").write_text(AGENT)
    call = {"tool_calls": [{"name": "Bash", "input": {"command": "echo hi"}}]}
    script = folder / "script.json"
    script.write_text(json.dumps([call] * calls + [{"text": "finished"}]))
    controller, terminal = pty.openpty()
    try:
        os.write(controller, typed)  # typed ahead: the line discipline keeps it
        done = subprocess.run(
            [python, "-m", "agentkit", "run", "sh:agent", "go", *SCRIPTED, str(script)],
            stdin=terminal,
            capture_output=True,
            text=True,
            env=env,
            cwd=folder,
            timeout=60,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_on_a_terminal_the_person_there_is_asked(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    events, stderr = _run_on_a_terminal(python, cli_env, tmp_path, b"maybe\nn\n", 1)
    assert stderr.count('Allow Bash {"command": "echo hi"}? [y]es / [n]o / [a]lways') == 2
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["isError"] is True and result["output"] == "permission denied: denied by the user"
    allowed, stderr = _run_on_a_terminal(python, cli_env, tmp_path, b"a\n", 2)
    assert stderr.count("Allow Bash") == 1  # "always": the same call again is not asked
    results = [e for e in allowed if e["type"] == "tool_result"]
    assert [r["output"] for r in results] == ["hi\n", "hi\n"]
