"""The `agentkit` command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
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
        (["run", "justaname", "hi", "--provider", "test"], "module:attribute or path/to/file.py"),
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


# --- SIGTERM (issue 11, item 5) ---------------------------------------------------------


def _process_gone(pid: int) -> bool:
    """Whether `pid` has ended. A killed orphan may stay a zombie (a container's PID 1 need
    not reap): it runs nothing any more, so it counts as gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def _wait_for(predicate: Callable[[], bool], seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc; SIGTERM is POSIX")
@pytest.mark.parametrize("fmt", ["jsonl", "text"])
def test_sigterm_ends_the_run_kills_its_processes_records_it_and_exits_143(
    python: str, cli_env: dict[str, str], tmp_path: Path, fmt: str
) -> None:
    (tmp_path / "slow.py").write_text(
        "from agentkit import AgentSpec\n"
        "agent = AgentSpec(id='demo:slow', tools=('Bash',),\n"
        "                  permission_mode='bypassPermissions')\n"
    )
    # A background process the command leaves behind, and the command still running.
    command = "sleep 300 & echo $! > bg.pid; sleep 60"
    script = tmp_path / "script.json"
    call = {"name": "Bash", "input": {"command": command}}
    script.write_text(json.dumps([{"tool_calls": [call]}]))
    process = subprocess.Popen(
        [python, "-m", "agentkit", "run", "slow:agent", "go", "--provider", "scripted",
         "--script", str(script), "--format", fmt],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, env=cli_env, cwd=tmp_path,
    )
    try:
        pid_file = tmp_path / "bg.pid"
        assert _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "")
        background = int(pid_file.read_text())
        assert not _process_gone(background)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        process.kill()
    assert process.returncode == 143, err
    assert "Traceback" not in err
    if fmt == "jsonl":
        events = [json.loads(line) for line in out.splitlines()]
        assert [e["type"] for e in events][-2:] == ["error", "turn_end"]
        assert events[-1]["status"] == "interrupted"
    else:
        assert "agentkit: error: the run was interrupted" in err
        assert "session: " in err
    assert _wait_for(lambda: _process_gone(background), 5)

    async def stored() -> list[Any]:
        from agentkit.stores import SQLiteStore

        store = SQLiteStore(cli_env["AGENTKIT_STORE"])
        try:
            return [run for s in await store.list_sessions() for run in await store.list_runs(s.id)]
        finally:
            await store.aclose()

    runs = anyio.run(stored)
    assert [run.status for run in runs] == ["interrupted"]
    assert runs[0].finished_at is not None


@pytest.mark.anyio
@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM is a POSIX signal")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_the_first_stop_signal_stops_the_run_and_the_next_one_acts_as_usual(
    signum: int,
) -> None:
    from agentkit._cli import _watch_stop_signals

    before = signal.getsignal(signum)
    got: list[int] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(_watch_stop_signals, got.append)
            await anyio.sleep(0.1)  # the receiver is open
            os.kill(os.getpid(), signum)
    assert got == [signum]
    assert signal.getsignal(signum) == before


# --- messages without `:0:0` (issue 17, item 6) -----------------------------------------


def test_a_diagnostic_without_a_position_names_only_the_file() -> None:
    from agentkit.diagnostics import Diagnostic

    assert str(Diagnostic("a.yaml", 0, 0, "(root)", "cannot read")) == "a.yaml: (root): cannot read"
    assert str(Diagnostic("a.yaml", 3, 0, "x", "bad")) == "a.yaml:3: x: bad"
    assert str(Diagnostic("a.yaml", 3, 7, "x", "bad")) == "a.yaml:3:7: x: bad"


def test_an_app_folder_without_app_yaml_has_no_position_noise(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    done = agentkit(
        python, cli_env, "run", "--app", str(tmp_path), "demo:a", "hi", "--provider", "test"
    )
    assert done.returncode == 2
    assert f"agentkit: error: {tmp_path / 'app.yaml'}: (root): " in done.stderr
    assert ":0:0" not in done.stderr and "Traceback" not in done.stderr
