"""`agentkit validate`, `agentkit schema apps` and `agentkit run --app` on real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import agentkit
from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "research-app"


def test_validate_valid_app_exits_0_with_warnings(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(python, cli_env, "validate", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    assert "sentinel.yaml:8:11: actions[0]: warning:" in done.stdout


def test_validate_invalid_agent_exits_1_with_located_lines(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "agent.yaml"
    bad.write_text("name: x\ndescription: d\ntier: huge\n", encoding="utf-8")
    done = agentkit(python, cli_env, "validate", str(bad))
    assert done.returncode == 1
    assert f"{bad}:3:7: tier: must be one of large, medium or small, not 'huge'" in done.stdout


def test_validate_json_format(python: str, cli_env: dict[str, str], tmp_path: Path) -> None:
    bad = tmp_path / "agent.yaml"
    bad.write_text("name: x\n", encoding="utf-8")
    done = agentkit(python, cli_env, "validate", "--format", "json", str(bad))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["valid"] is False
    assert {d["field"] for d in report["diagnostics"]} >= {"description", "tier", "tools"}
    assert all(d["file"] == str(bad) for d in report["diagnostics"])


def test_validate_missing_path_exits_2(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = agentkit(python, cli_env, "validate", str(tmp_path / "nope"))
    assert done.returncode == 2
    assert "no such file or folder" in done.stderr


def test_validate_folder_without_app_yaml_exits_2(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = agentkit(python, cli_env, "validate", str(tmp_path))
    assert done.returncode == 2
    assert "not an app folder" in done.stderr
    assert "Traceback" not in done.stderr


def test_schema_apps_prints_both_schemas(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(python, cli_env, "schema", "apps")
    assert done.returncode == 0
    assert set(json.loads(done.stdout)) == {"app", "agent"}
    agent_only = agentkit(python, cli_env, "schema", "apps", "agent")
    assert agent_only.returncode == 0
    assert json.loads(agent_only.stdout) == json.loads(done.stdout)["agent"]


def test_run_app_agent_offline(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(
        python,
        cli_env,
        "run",
        "--app",
        str(EXAMPLE),
        "research-app:sentinel",
        "Buy now!!!",
        "--provider",
        "test",
        "--format",
        "jsonl",
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    output = next(e for e in events if e["type"] == "structured_output")
    assert output["payload"]["decision"] in ("REPLY", "ESCALATE", "IGNORE")
    assert events[-1]["type"] == "turn_end" and events[-1]["status"] == "completed"


def test_run_other_apps_agent_is_a_usage_error(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(
        python,
        cli_env,
        "run",
        "--app",
        str(EXAMPLE),
        "assistant:explore",
        "hi",
        "--provider",
        "test",
    )
    assert done.returncode == 2
    assert "system:summon" in done.stderr


def test_run_invalid_app_names_file_and_line(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "app.yaml").write_text("formatVersion: 2\nid: demo\nagents: [x.yaml]\n")
    done = agentkit(
        python, cli_env, "run", "--app", str(tmp_path), "demo:x", "hi", "--provider", "test"
    )
    assert done.returncode == 2
    assert f"{tmp_path / 'app.yaml'}:3:10: agents[0]: agent file 'x.yaml' not found" in done.stderr


def test_run_with_sys_exit_in_actions_py_reports_it(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "app.yaml").write_text("formatVersion: 2\nid: demo\nagents: [a.yaml]\n")
    (tmp_path / "a.yaml").write_text(
        "name: a\ndescription: d\ntier: small\npermissionMode: default\ntools: []\n"
        "maxTurns: 30\nsystemPromptPrefix: p\n"
    )
    (tmp_path / "actions.py").write_text("def register(app):\n    raise SystemExit(0)\n")
    done = agentkit(
        python, cli_env, "run", "--app", str(tmp_path), "demo:a", "hi", "--provider", "test"
    )
    assert done.returncode == 2
    assert f"{tmp_path / 'actions.py'}:2:1: (python): the actions module called sys.exit(0)" in (
        done.stderr
    )
