"""Python targets on the command line, as real `agentkit` subprocesses started the way the
`agentkit` script starts (`PYTHONSAFEPATH=1`: the current folder is not on the import path
unless agentkit puts it there): `agentkit run` and `serve --agents` take an `Agent` (its
function tools called by the run) or an `AgentSpec` at `module:attribute` (imported from
the current folder) or `path/to/file.py:attribute`; `serve --extension` takes both forms;
and every target that names nothing is one error line naming it, exit 2."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import httpx
import pytest

from support.cli import agentkit
from support.http_api import bearer, sse_events
from support.paths import ROOT, SRC
from support.served import served

AGENT = '''\
from pathlib import Path

from agentkit import Agent


def note(text: str) -> str:
    """Write a note into notes.txt."""
    with Path(__file__).with_name("notes.txt").open("a") as notes:
        notes.write(text + "\\n")
    return f"noted {text!r}"


agent = Agent(name="notes", instructions="Take notes.", tools=[note])
'''

EXTENSION = """\
from pathlib import Path


def setup(machine):
    Path(__file__).with_name("extension-ran.txt").write_text(type(machine).__name__)
"""

SCRIPT = [
    {"tool_calls": [{"name": "note", "input": {"text": "buy milk"}}]},
    {"text": "Noted."},
]


def _folder(tmp_path: Path) -> Path:
    """A project folder holding an agent module, an extension module and a script."""
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes_agent.py").write_text(AGENT)
    (folder / "ext.py").write_text(EXTENSION)
    (folder / "broken.py").write_text("import no_such_dependency_here\n")
    (folder / "failing.py").write_text("raise RuntimeError('the module says no')\n")
    (folder / "script.json").write_text(json.dumps(SCRIPT))
    return folder


@pytest.fixture
def env(cli_env: dict[str, str]) -> dict[str, str]:
    """This checkout's sources only; the current folder not on the import path by Python."""
    return {**cli_env, "PYTHONPATH": str(SRC), "PYTHONSAFEPATH": "1"}


@pytest.mark.parametrize(
    "target", ["notes_agent:agent", "notes_agent.py:agent", "notes_agent.py:agent.spec"]
)
def test_run_an_agent_whose_function_tool_the_model_calls(
    python: str, env: dict[str, str], tmp_path: Path, target: str
) -> None:
    folder = _folder(tmp_path)
    done = agentkit(
        python, env, "run", target, "remember milk", "--provider", "scripted",
        "--script", "script.json", "--format", "jsonl", cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["output"] for r in results] == ["noted 'buy milk'"], events
    assert not results[0].get("isError")
    assert (folder / "notes.txt").read_text() == "buy milk\n"
    assert events[-1]["status"] == "completed"


def test_run_an_agent_from_a_file_in_another_folder(
    python: str, env: dict[str, str], tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    done = agentkit(
        python, env, "run", "project/notes_agent.py:agent", "remember milk", "--provider",
        "scripted", "--script", str(folder / "script.json"), cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Noted."
    assert (folder / "notes.txt").read_text() == "buy milk\n"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("absent.py:agent", "absent.py: no such file"),
        ("notes_agent.py:nope", "'notes_agent.py' has no attribute 'nope'"),
        ("notes_agent:nope", "module 'notes_agent' has no attribute 'nope'"),
        ("notes_agent:note", "notes_agent:note is a function, not an AgentSpec nor an Agent"),
        ("absent_module:agent", "cannot import module 'absent_module': No module named"),
        ("broken:agent", "No module named 'no_such_dependency_here'"),
        ("failing.py:agent", "cannot import 'failing.py': RuntimeError: the module says no"),
    ],
)
def test_a_run_target_that_names_nothing_says_what_and_exits_2(
    python: str, env: dict[str, str], tmp_path: Path, target: str, message: str
) -> None:
    done = agentkit(python, env, "run", target, "hi", "--provider", "test", cwd=_folder(tmp_path))
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr


def test_serve_an_agent_with_its_tool_and_an_extension_from_the_current_folder(
    env: dict[str, str], tmp_path: Path
) -> None:
    folder = _folder(tmp_path)
    with served(
        tmp_path, "--script", "script.json", "--agents", "notes_agent.py:agent",
        "--extension", "ext:setup", provider="scripted", env=env, cwd=folder,
    ) as server:  # fmt: skip
        assert (folder / "extension-ran.txt").read_text() == "Machine"
        token = server.add_member("ada", "editor")
        with httpx.Client(base_url=server.url, timeout=30, headers=bearer(token)) as http:
            agents = http.get("/v1/agents").json()["agents"]
            assert "notes" in {agent["name"] for agent in agents}
            made = http.post("/v1/conversations", json={"agent": "notes"})
            assert made.status_code == 201, made.text
            conversation = made.json()["id"]
            started = http.post(
                f"/v1/conversations/{conversation}/runs", json={"prompt": "remember milk"}
            )
            assert started.status_code == 202, started.text
            url = f"/v1/conversations/{conversation}/runs/{started.json()['runId']}/events"
            with http.stream("GET", url) as response:
                events = list(sse_events(response))
    assert events[-1]["event"] == "completed", events
    text = "".join(e["data"]["part"]["text"] for e in events if e["event"] == "text")
    assert text == "Noted."
    assert (folder / "notes.txt").read_text() == "buy milk\n"


def test_the_rooms_guide_serve_command_works_from_the_repository_root(
    env: dict[str, str], tmp_path: Path
) -> None:
    # docs/rooms.md: `agentkit serve --db rooms.db --port 0 --provider test --extension
    # examples.rooms.extension:setup`, without PYTHONPATH=.
    with served(
        tmp_path, "--extension", "examples.rooms.extension:setup", provider="test", env=env,
        cwd=ROOT,
    ) as server:  # fmt: skip
        token = server.add_member("ada", "editor")
        lobby = httpx.get(f"{server.url}/v1/rooms/lobby", headers=bearer(token), timeout=30)
        assert lobby.status_code == 200, lobby.text


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--extension", "absent_module:setup", "cannot import module 'absent_module'"),
        ("--extension", "absent.py:setup", "absent.py: no such file"),
        ("--extension", "ext:nope", "module 'ext' has no attribute 'nope'"),
        ("--extension", "ext.py:nope", "'ext.py' has no attribute 'nope'"),
        ("--extension", "failing:setup", "RuntimeError: the module says no"),
        ("--extension", "broken.py:setup", "No module named 'no_such_dependency_here'"),
        ("--agents", "notes_agent.py:nope", "'notes_agent.py' has no attribute 'nope'"),
        ("--agents", "notes_agent:note", "is a function, not an AgentSpec nor an Agent"),
        ("--agents", "absent.py:agent", "absent.py: no such file"),
        ("--agents", "notes.txt", "(module:attribute, path/to/file.py:attribute)"),
    ],
)
def test_a_serve_target_that_names_nothing_says_what_and_exits_2(
    python: str,
    env: dict[str, str],
    tmp_path: Path,
    option: str,
    value: str,
    message: str,
) -> None:
    folder = _folder(tmp_path)
    (folder / "notes.txt").write_text("not an agent\n")
    done = agentkit(
        python, env, "serve", "--db", str(tmp_path / "m.db"), "--port", "0", "--provider",
        "test", option, value, cwd=folder,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{option} {value}: " in done.stderr and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert os.path.exists(tmp_path / "m.db") is False  # refused before the store opens


def test_the_python_agents_page_command_runs_from_the_repository_root(
    python: str, env: dict[str, str]
) -> None:
    page = (ROOT / "docs" / "python-agents.md").read_text(encoding="utf-8")
    section = page.split("## From the command line", 1)[1]
    command = section.split("```sh\n", 1)[1].split("\n```", 1)[0]
    assert command.startswith("agentkit run examples/weather.py:agent "), command
    done = agentkit(python, env, *shlex.split(command)[1:], cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "· get_weather {" in done.stderr  # the agent's function tool ran
    assert "Traceback" not in done.stderr
