"""The command line with definitions: validate, fingerprint and run (real subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path

from support.claude_cli import REPLAY, fake_claude, seen
from support.cli import agentkit
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"


def test_validate_examples_and_a_bad_file(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    ok = agentkit(python, cli_env, "validate", str(EXAMPLES))
    assert ok.returncode == 0, ok.stderr
    bad = tmp_path / "bad.md"
    bad.write_text("---\ndescription: x\nruntime: claude-cli\ntools: all\n---\n")
    failed = agentkit(python, cli_env, "validate", str(bad), str(EXAMPLES / "worker.md"))
    assert failed.returncode == 1
    assert failed.stdout.strip() == (
        f"{bad}:4:8: tools: tools: all is not accepted with runtime claude-cli; "
        "list the Claude tools"
    )
    report = agentkit(python, cli_env, "validate", "--format", "json", str(bad))
    data = json.loads(report.stdout)
    assert data["valid"] is False
    assert data["diagnostics"][0] | {"file": "-"} == {
        "file": "-",
        "line": 4,
        "column": 8,
        "field": "tools",
        "message": "tools: all is not accepted with runtime claude-cli; list the Claude tools",
        "severity": "error",
    }


def test_fingerprint_prints_both(python: str, cli_env: dict[str, str], tmp_path: Path) -> None:
    done = agentkit(python, cli_env, "fingerprint", str(EXAMPLES / "security-review.md"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "v2:ec09a2eb831bdcf08e4b798701cd73f18149ae60ba0ab133ed3ffa8050864351",
        "v1:59353f1a080ec6f17787e857ddb7d0178f33c46e595ca8efd6bfb3dfa75118c5",
    ]
    bad = tmp_path / "bad.md"
    bad.write_text("---\ndescription: [x]\n---\n")
    failed = agentkit(python, cli_env, "fingerprint", str(bad))
    assert failed.returncode == 1
    assert failed.stderr.strip() == f"{bad}:2:14: description: must be a single value, not a list"
    assert "Traceback" not in failed.stderr


def test_run_a_rho_definition_offline(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(["All done."]))
    done = agentkit(
        python, cli_env, "run", str(EXAMPLES / "worker.md"), "Do it",
        "--provider", "scripted", "--script", str(script), "--format", "jsonl",
        "--store", ":memory:",
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[-2] == {"type": "result", "content": "All done.", "accounting": events[-2][
        "accounting"]}
    assert events[-1]["status"] == "completed"


def test_run_a_claude_cli_definition_with_a_fake_claude(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    script = fake_claude(tmp_path / "bin", REPLAY)
    env = {**cli_env, "AGENTKIT_CLAUDE": str(script)}
    responses = tmp_path / "script.json"
    responses.write_text("[]")
    done = agentkit(
        python, env, "run", str(EXAMPLES / "claude-planner.md"), "Plan it",
        "--provider", "scripted", "--script", str(responses), "--format", "jsonl",
        "--store", ":memory:", "--working-dir", str(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    types = [json.loads(line)["type"] for line in done.stdout.splitlines()]
    assert types[0] == "turn_start" and types[-2:] == ["result", "turn_end"]
    assert "tool_use" in types and "thinking" in types
    assert seen(tmp_path / "bin")["prompt"] == "Plan it"


def test_run_reports_a_missing_capability_without_a_traceback(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    definition = tmp_path / "needs-ext.md"
    definition.write_text("---\ndescription: x\ntools: [jira-search]\n---\n")
    done = agentkit(
        python, cli_env, "run", str(definition), "hi", "--provider", "test", "--store", ":memory:"
    )
    assert done.returncode == 2
    assert "extension capability 'jira-search' is not supplied by this host" in done.stderr
    assert "Traceback" not in done.stderr


def test_validate_folder_without_definitions_exits_2(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    empty = tmp_path / "agents.md"  # an empty folder whose name ends in .md
    empty.mkdir()
    done = agentkit(python, cli_env, "validate", str(empty))
    assert done.returncode == 2
    assert done.stderr == f"agentkit: error: {empty}: no .md definitions in this folder\n"
    assert done.stdout == ""
