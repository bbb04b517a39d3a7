"""The `agentkit` command line, run as a real subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import ROOT, agentkit

HELLO = ("run", "examples.hello:agent", "hi", "--provider", "test")
"""The example agent, run offline with the test provider."""


def test_version(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(python, cli_env, "--version")
    assert done.returncode == 0 and done.stdout.startswith("agentkit ")


def test_run_with_the_test_provider_text(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(python, cli_env, *HELLO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Done."
    assert "session: " in done.stderr


def test_run_jsonl_is_the_wire_form(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(
        python,
        cli_env,
        *HELLO,
        "--format",
        "jsonl",
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert events[0]["type"] == "turn_start" and events[0]["userPrompt"] == "hi"
    assert events[-1]["type"] == "turn_end" and events[-1]["status"] == "completed"
    assert "durationMs" in events[-1]


def test_scripted_tool_calls_from_the_command_line(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "calc.py").write_text(
        "from agentkit import AgentSpec\n"
        "agent = AgentSpec(id='demo:calc', tools=('nothing',),\n"
        "                  permission_mode='bypassPermissions')\n"
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "nothing", "input": {"x": 1}}]},
                {"text": "finished"},
                {"text": "left over"},
            ]
        )
    )
    done = agentkit(
        python,
        cli_env,
        "run",
        "calc:agent",
        "go",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--format",
        "jsonl",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    uses = [e for e in events if e["type"] == "tool_use"]
    assert uses == [{"type": "tool_use", "id": "call_0_0", "tool": "nothing", "input": {"x": 1}}]
    assert next(e for e in events if e["type"] == "tool_result")["isError"] is True
    assert "1 scripted response(s) were not used" in done.stderr


def test_failed_turn_exits_1(python: str, cli_env: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"error": "bad request"}]))
    done = agentkit(
        python,
        cli_env,
        "run",
        "examples.hello:agent",
        "hi",
        "--provider",
        "scripted",
        "--script",
        str(script),
    )
    assert done.returncode == 1
    assert "bad request" in done.stderr


def test_session_resume_across_processes(python: str, cli_env: dict[str, str]) -> None:
    first = agentkit(python, cli_env, *HELLO)
    session = first.stderr.split("session: ")[1].split()[0]
    again = agentkit(
        python,
        cli_env,
        "run",
        "examples.hello:agent",
        "more",
        "--provider",
        "test",
        "--session",
        session,
        "--format",
        "jsonl",
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout.splitlines()[0])["sessionId"] == session


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "examples.hello:agent", "hi"], "no model provider configured"),
        (["run", "examples.hello:agent", "hi", "--provider", "nope"], "unknown provider 'nope'"),
        (["run", "examples.hello:agent", "hi", "--provider", "scripted"], "needs --script"),
        (["run", "no_such_module:agent", "hi", "--provider", "test"], "cannot import"),
        (["run", "examples.hello:missing", "hi", "--provider", "test"], "no attribute"),
        (["run", "examples.hello:__doc__", "hi", "--provider", "test"], "not an AgentSpec"),
        (["run", "justaname", "hi", "--provider", "test"], "must be module:attribute"),
        (
            ["run", "examples.hello:agent", "hi", "--provider", "test", "--session", "nope"],
            "no session 'nope'",
        ),
    ],
)
def test_usage_errors_are_clear_and_exit_2(
    python: str, cli_env: dict[str, str], args: list[str], message: str
) -> None:
    done = agentkit(python, cli_env, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_module_that_fails_to_import_is_a_usage_error(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "broken_agent.py").write_text("raise RuntimeError('boom at import')\n")
    done = agentkit(
        python, cli_env, "run", "broken_agent:spec", "hi", "--provider", "test", cwd=tmp_path
    )
    assert done.returncode == 2
    assert "RuntimeError: boom at import" in done.stderr and "Traceback" not in done.stderr


def test_a_store_path_that_cannot_exist_is_a_usage_error(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = agentkit(
        python,
        cli_env,
        *HELLO,
        "--store",
        str(blocker / "sessions.db"),
    )
    assert done.returncode == 2
    assert "cannot open the store" in done.stderr and "Traceback" not in done.stderr


def test_a_reader_closing_the_pipe_is_quiet(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    script = tmp_path / "long.json"
    script.write_text(json.dumps([{"text": "x" * 20000, "deltas": 2000}]))
    command = (
        f"{python} -m agentkit run examples.hello:agent hi --provider scripted "
        f"--script {script} --format jsonl | head -n 1"
    )
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env=cli_env,
        cwd=ROOT,
        timeout=60,
    )
    assert done.stdout.startswith('{"type": "turn_start"')
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is a POSIX signal")
@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_ctrl_c_ends_the_run_properly_and_exits_130(
    python: str, cli_env: dict[str, str], tmp_path: Path, fmt: str
) -> None:
    (tmp_path / "slow.py").write_text(
        "from agentkit import AgentSpec\n"
        "agent = AgentSpec(id='demo:slow', tools=('Bash',),\n"
        "                  permission_mode='bypassPermissions')\n"
    )
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps([{"tool_calls": [{"name": "Bash", "input": {"command": "sleep 30"}}]}])
    )
    process = subprocess.Popen(
        [python, "-m", "agentkit", "run", "slow:agent", "go", "--provider", "scripted",
         "--script", str(script), "--format", fmt],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, env=cli_env, cwd=tmp_path,
    )
    assert process.stdout is not None and process.stderr is not None
    lines = []
    if fmt == "jsonl":
        for line in process.stdout:  # wait until the tool is running
            lines.append(line)
            if '"tool_use"' in line:
                break
    else:
        for line in process.stderr:
            lines.append(line)
            if "Bash" in line:
                break
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 130, err
    if fmt == "jsonl":
        events = [json.loads(line) for line in [*lines, *out.splitlines()]]
        assert [e["type"] for e in events][-2:] == ["error", "turn_end"]
        assert events[-1]["status"] == "interrupted"
    else:
        assert "interrupted" in err
