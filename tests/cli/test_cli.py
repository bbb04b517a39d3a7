"""The `agentkit` command line, run as a real subprocess."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from support.cli import agentkit
from support.paths import ROOT

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
        "agent = AgentSpec(id='demo:calc', tools=('Read',),\n"
        "                  permission_mode='bypassPermissions')\n"
        "typo = AgentSpec(id='demo:typo', tools=('Raed',))\n"
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
    # An allowlist naming no tool is refused before the run starts.
    refused = agentkit(
        python, cli_env, "run", "calc:typo", "go", "--provider", "scripted", "--script",
        str(script), cwd=tmp_path,
    )
    assert refused.returncode == 2 and "did you mean 'Read'?" in refused.stderr


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


# --- SIGTERM --------------------------------------------------------------------------------


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
async def test_the_first_stop_signal_stops_the_run_once_and_the_handler_is_restored(
    signum: int,
) -> None:
    # (A second signal ends the process at once: tests/cli/test_local_cli.py sends it.)
    from agentkit._internal.signals import watch_stop_signals

    before = signal.getsignal(signum)
    got: list[int] = []
    with anyio.fail_after(10):
        async with anyio.create_task_group() as group:
            group.start_soon(watch_stop_signals, got.append)
            await anyio.sleep(0.1)  # the receiver is open
            os.kill(os.getpid(), signum)
            await anyio.sleep(0.2)
            assert got == [signum]
            group.cancel_scope.cancel()
    assert signal.getsignal(signum) == before


# --- diagnostics without a position: no `:0:0` ----------------------------------------------


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


# --- no tracebacks for users' mistakes and environment problems -----------------------------


def _research_app(tmp_path: Path, max_turns: str) -> Path:
    app = tmp_path / "app"
    shutil.copytree(ROOT / "examples" / "research-app", app, symlinks=False)
    agent = app / "agents" / "researcher.yaml"
    agent.write_text(agent.read_text().replace("maxTurns: 30", f"maxTurns: {max_turns}"))
    return app


def test_max_turns_with_5000_digits_is_one_error_line(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    app = _research_app(tmp_path, "9" * 5000)
    ran = agentkit(
        python, cli_env, "run", "--app", str(app), "research-app:researcher", "hi",
        "--provider", "test",
    )
    assert ran.returncode == 2
    assert ran.stderr.startswith("agentkit: error: ") and "Traceback" not in ran.stderr
    checked = agentkit(python, cli_env, "validate", str(app))
    # An invalid file (1) once the loader reports it as a diagnostic; until then the CLI's
    # own clean error line (2). Never a traceback.
    assert checked.returncode in (1, 2)
    assert "Traceback" not in checked.stderr + checked.stdout
    assert "maxTurns" in checked.stdout or checked.stderr.startswith("agentkit: error: ")


def test_a_postgres_store_without_its_driver_is_one_error_line(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    # psycopg is installed for the test suite: a package of that name that fails to import
    # stands for an installation without the postgres extra.
    fake = tmp_path / "no-extras" / "psycopg"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'psycopg'\", name='psycopg')\n"
    )
    env = {**cli_env, "PYTHONPATH": f"{fake.parent}{os.pathsep}{cli_env['PYTHONPATH']}"}
    done = agentkit(python, env, *HELLO, "--store", "postgresql://agentkit@127.0.0.1:9/none")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("agentkit: error: ") and "psycopg" in done.stderr
    assert "pip install 'typed-agentkit[postgres]'" in done.stderr
    assert done.stderr.count("\n") == 1


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and bash's ulimit -f")
def test_a_store_that_fails_to_save_the_end_of_a_run_is_one_error_line_and_exit_2(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    # A real SQLite file that cannot grow past 300 KiB (`ulimit -f`; Python ignores
    # SIGXFSZ, so writes fail with EFBIG): the run starts, and saving its 400 kB answer fails.
    script = tmp_path / "big.json"
    script.write_text(json.dumps([{"text": "x" * 400_000}]))
    store = tmp_path / "full.db"
    command = (
        f"ulimit -f 300; exec {python} -m agentkit run examples.hello:agent hi "
        f"--provider scripted --script {script} --store {store} --format jsonl"
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, env=cli_env, cwd=ROOT,
        timeout=60, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentkit: error: "), done.stderr
    assert "StoreUnavailableError" in lines[0]  # a storage fault, named as one
    # The run still ended for its reader: the stream is complete.
    assert json.loads(done.stdout.splitlines()[-1])["type"] == "turn_end"


def test_an_unreadable_store_file_is_one_error_line(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "not-a-database.db"
    store.write_bytes(b"this is not SQLite" * 100)
    for args in (HELLO, ("sessions",), ("runs",), ("runs", "show", "x")):
        done = agentkit(python, cli_env, *args, "--store", str(store))
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("agentkit: error: ") and "Traceback" not in done.stderr


# --- help -----------------------------------------------------------------------------------


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser by its words (`""` for the top level, `"runs show"`, ...)."""
    from agentkit.cli._main import build_parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(words: str, parser: argparse.ArgumentParser) -> None:
        found[words] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(f"{words} {name}".strip(), child)

    walk("", build_parser())
    return found


def test_every_argument_of_every_command_has_help() -> None:
    commands = _commands()
    assert set(commands) == {
        "", "run", "sessions", "runs", "runs show", "validate", "schema", "fingerprint",
        "members", "members add", "members list", "members remove", "members rotate", "serve",
        "chat",
    }
    for words, parser in commands.items():
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help and action.help != argparse.SUPPRESS, (words, action.dest)


def test_every_command_help_has_examples_and_exit_codes(
    python: str, cli_env: dict[str, str]
) -> None:
    for words in _commands():
        done = agentkit(python, cli_env, *words.split(), "--help")
        assert done.returncode == 0, words
        assert "examples:\n  agentkit " in done.stdout, words
        assert "exit codes:" in done.stdout, words


def test_provider_help_names_every_provider_and_the_environment_rule(
    python: str, cli_env: dict[str, str]
) -> None:
    from agentkit.providers import available_providers

    done = agentkit(python, cli_env, "run", "--help", "--", "x", "y")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())  # argparse wraps lines anywhere
    for name in available_providers():
        assert name in text, name
    for variable in ("AGENTKIT_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                     "AGENTKIT_BASE_URL"):
        assert variable in text
    assert "'-' reads it from standard input" in text


# --- the prompt from standard input ---------------------------------------------------------


def _run_with_stdin(
    python: str, env: dict[str, str], args: Sequence[str], data: bytes
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [python, "-m", "agentkit", *args], input=data, capture_output=True, env=env,
        cwd=ROOT, timeout=60,
    )


def test_a_prompt_of_300_kib_comes_from_stdin(python: str, cli_env: dict[str, str]) -> None:
    prompt = ("Tide pools é " * 25_000)[: 300 * 1024] + "\n"
    done = _run_with_stdin(
        python, cli_env, ["run", "examples.hello:agent", "-", "--provider", "test",
                          "--format", "jsonl"], prompt.encode(),
    )
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.decode().splitlines()[0])
    assert first["type"] == "turn_start" and first["userPrompt"] == prompt


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"", "standard input holds no prompt"), (b"\xff\xfe hi", "not valid UTF-8")],
)
def test_a_stdin_prompt_that_is_empty_or_not_utf8_is_a_usage_error(
    python: str, cli_env: dict[str, str], data: bytes, message: str
) -> None:
    done = _run_with_stdin(
        python, cli_env, ["run", "examples.hello:agent", "-", "--provider", "test"], data
    )
    assert done.returncode == 2
    assert message in done.stderr.decode() and b"Traceback" not in done.stderr


# --- TARGET forms ---------------------------------------------------------------------------


def _agent_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper_text.py").write_text("PROMPT = 'Be brief.'\n")
    (folder / "myagent.py").write_text(
        "from agentkit import AgentSpec\n"
        "from helper_text import PROMPT  # a sibling module, as `python myagent.py` finds it\n"
        "agent = AgentSpec(id='demo:mine', system_prompt=PROMPT)\n"
    )
    return folder / "myagent.py"


@pytest.mark.parametrize("how", ["here", "relative", "absolute"])
def test_a_python_file_path_with_an_attribute_is_a_target(
    python: str, cli_env: dict[str, str], tmp_path: Path, how: str
) -> None:
    path = _agent_file(tmp_path / "agents")
    # `myagent.py:agent` names a file and an attribute, never a module `myagent.py`.
    target, cwd = {
        "here": ("myagent.py:agent", path.parent),
        "relative": ("agents/myagent.py:agent", tmp_path),
        "absolute": (f"{path}:agent", ROOT),
    }[how]
    done = agentkit(python, cli_env, "run", target, "hi", "--provider", "test",
                    "--format", "jsonl", cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "completed"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing.py:agent", "missing.py: no such file"),
        ("agents/myagent.py:nope", "has no attribute 'nope'"),
        ("agents/myagent.py", "as in agents/myagent.py:agent"),
        ("agents", "is a folder: run an app's agent with --app agents APP-ID:NAME"),
        ("agent.yaml", "an agent YAML file runs inside its app"),
        ("no_such_module:agent", "path/to/file.py:attribute"),
    ],
)
def test_a_target_that_names_nothing_says_what_to_write(
    python: str, cli_env: dict[str, str], tmp_path: Path, target: str, message: str
) -> None:
    _agent_file(tmp_path / "agents")
    done = agentkit(python, cli_env, "run", target, "hi", "--provider", "test", cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


# --- sessions, runs, runs show --------------------------------------------------------------


def _store_with_two_sessions(
    python: str, env: dict[str, str], tmp_path: Path
) -> tuple[list[str], list[str]]:
    """Three runs in two sessions (completed, completed, error); their live jsonl and text
    outputs, in order."""
    failing = tmp_path / "failing.json"
    failing.write_text(json.dumps([{"error": "bad request"}]))
    first = agentkit(python, env, *HELLO, "--format", "jsonl")
    session = json.loads(first.stdout.splitlines()[0])["sessionId"]
    second = agentkit(python, env, *HELLO, "--session", session)
    third = agentkit(
        python, env, "run", "examples.hello:agent", "hi", "--provider", "scripted",
        "--script", str(failing), "--format", "jsonl",
    )
    assert (first.returncode, second.returncode, third.returncode) == (0, 0, 1)
    return [first.stdout, "", third.stdout], ["", second.stdout + second.stderr, ""]


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_sessions_and_runs_list_what_the_store_holds(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    _store_with_two_sessions(python, cli_env, tmp_path)
    sessions = _json(agentkit(python, cli_env, "sessions", "--format", "json"))
    assert [s["runs"] for s in sessions] == [2, 1]
    assert sessions[0]["agentId"] == sessions[1]["agentId"] != ""
    assert set(sessions[0]) == {"id", "agentId", "createdAt", "updatedAt", "runs", "metadata"}
    runs = _json(agentkit(python, cli_env, "runs", "--format", "json"))
    assert [r["status"] for r in runs] == ["completed", "completed", "error"]
    assert [r["sessionId"] for r in runs] == [sessions[0]["id"]] * 2 + [sessions[1]["id"]]
    assert all(r["createdAt"].endswith("Z") and r["finishedAt"].endswith("Z") for r in runs)
    one = _json(agentkit(python, cli_env, "runs", "--session", sessions[1]["id"],
                         "--format", "json"))
    assert one == runs[2:]

    table = agentkit(python, cli_env, "sessions")
    assert table.returncode == 0
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["SESSION", "AGENT", "CREATED", "UPDATED", "RUNS"]
    assert [row.split()[0] for row in rows] == [s["id"] for s in sessions]
    assert [row.split()[-1] for row in rows] == ["2", "1"]
    table = agentkit(python, cli_env, "runs")
    header, *rows = table.stdout.splitlines()
    assert header.split() == ["RUN", "SESSION", "AGENT", "STATUS", "CREATED", "FINISHED"]
    assert [row.split()[3] for row in rows] == ["completed", "completed", "error"]


def test_runs_show_prints_a_stored_run_as_run_printed_it(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    jsonl, text = _store_with_two_sessions(python, cli_env, tmp_path)
    runs = _json(agentkit(python, cli_env, "runs", "--format", "json"))
    for run, live in zip(runs, jsonl, strict=True):
        if not live:
            continue
        shown = agentkit(python, cli_env, "runs", "show", run["id"], "--format", "jsonl")
        assert shown.returncode == 0, shown.stderr
        # Stores keep every event but the text_delta pieces.
        kept = [line for line in live.splitlines() if '"type": "text_delta"' not in line]
        assert shown.stdout.splitlines() == kept
    shown = agentkit(python, cli_env, "runs", "show", runs[1]["id"])
    assert shown.returncode == 0
    assert shown.stdout + shown.stderr == text[1]
    failed = agentkit(python, cli_env, "runs", "show", runs[2]["id"])
    assert failed.returncode == 0  # the run is shown; that it failed is in what is shown
    assert failed.stderr.startswith("agentkit: error: ") and "bad request" in failed.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("runs", "show", "nope"), "no run 'nope' in the store"),
        (("runs", "--session", "nope"), "no session 'nope' in the store"),
    ],
)
def test_a_run_or_session_not_in_the_store_exits_1(
    python: str, cli_env: dict[str, str], args: tuple[str, ...], message: str
) -> None:
    agentkit(python, cli_env, *HELLO)  # the store exists and holds something else
    done = agentkit(python, cli_env, *args)
    assert done.returncode == 1
    assert done.stderr == f"agentkit: error: {message}\n" and done.stdout == ""


@pytest.mark.parametrize(
    "args",
    [("runs", "show"), ("sessions", "extra"), ("runs", "--format", "yaml"),
     ("runs", "show", "x", "--format", "json")],
)
def test_store_command_usage_errors_exit_2(
    python: str, cli_env: dict[str, str], args: tuple[str, ...]
) -> None:
    done = agentkit(python, cli_env, *args)
    assert done.returncode == 2 and "usage: agentkit" in done.stderr


def test_listing_a_store_that_does_not_exist_creates_nothing(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    store = tmp_path / "never" / "agentkit.db"
    listed = agentkit(python, cli_env, "sessions", "--format", "json", "--store", str(store))
    assert _json(listed) == []
    runs = agentkit(python, cli_env, "runs", "--format", "json", "--store", str(store))
    assert _json(runs) == []
    shown = agentkit(python, cli_env, "runs", "--store", str(store), "show", "x")
    assert shown.returncode == 1
    assert not store.parent.exists()


def test_store_commands_read_the_store_run_writes_by_default_and_with_store(
    python: str, cli_env: dict[str, str], tmp_path: Path
) -> None:
    elsewhere = tmp_path / "elsewhere.db"
    agentkit(python, cli_env, *HELLO, "--store", str(elsewhere))
    assert _json(agentkit(python, cli_env, "sessions", "--format", "json")) == []
    given = _json(agentkit(python, cli_env, "runs", "--format", "json", "--store",
                           str(elsewhere)))
    assert len(given) == 1
    env = {k: v for k, v in cli_env.items() if k != "AGENTKIT_STORE"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    agentkit(python, env, *HELLO)
    assert (tmp_path / "state" / "agentkit" / "agentkit.db").is_file()
    assert len(_json(agentkit(python, env, "runs", "--format", "json"))) == 1


# --- docs/cli.md ----------------------------------------------------------------------------


def test_the_cli_page_documents_every_command_and_option() -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for words, parser in _commands().items():
        if words:
            assert f"## agentkit {words}\n" in page, words
        for action in parser._actions:
            for option in action.option_strings:
                if option not in ("-h", "--help", "--version"):
                    assert f"{option}" in page, (words, option)
    for code in ("| 0 |", "| 1 |", "| 2 |", "| 130 |", "| 143 |"):
        assert code in page


def test_validate_json_is_one_object_as_documented(
    python: str, cli_env: dict[str, str]
) -> None:
    done = agentkit(python, cli_env, "validate", "--format", "json", "examples/research-app")
    report = json.loads(done.stdout)
    assert set(report) == {"valid", "diagnostics"} and report["valid"] is True
    for page in ("cli.md", "apps.md"):
        text = " ".join((ROOT / "docs" / page).read_text(encoding="utf-8").split())
        assert '`--format json` a JSON list' not in text
        assert '{"valid": ..., "diagnostics": [...]}' in text, page


# --- provider timeouts on the command line --------------------------------------------------


def test_a_bad_provider_timeout_is_one_error_line(python: str, cli_env: dict[str, str]) -> None:
    done = agentkit(python, cli_env, *HELLO, "--provider-read-timeout", "soon")
    assert done.returncode == 2
    assert done.stderr.startswith("agentkit: error: ") and "Traceback" not in done.stderr
    assert "AGENTKIT_PROVIDER_READ_TIMEOUT" in done.stderr or "read" in done.stderr


def test_a_server_that_never_answers_ends_the_run_by_the_first_byte_timeout(
    python: str, cli_env: dict[str, str]
) -> None:
    import socket
    import threading
    import time

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # takes connections and never answers
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    env = {**cli_env, "AGENTKIT_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}/v1"}
    try:
        started = time.monotonic()
        done = agentkit(
            python,
            env,
            *HELLO[:3],
            "--provider",
            "openai-compatible",
            "--provider-first-byte-timeout",
            "0.5",
        )
        took = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()
    assert done.returncode == 1, done.stderr
    assert "first" in done.stderr.lower() or "timed out" in done.stderr.lower()
    assert took < 45  # four attempts of half a second plus backoff, not minutes
