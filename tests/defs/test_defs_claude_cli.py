"""The claude-cli runtime against a fake `claude` executable that checks its arguments and
replays real stream-JSON output."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest

from agentkit.defs import (
    ClaudeCliError,
    bind,
    claude_cli_args,
    find_claude,
    load_definition,
    run_claude_cli,
)
from agentkit.events import AgentMessage, to_wire
from agentkit.spec import AgentSpec
from support.claude_cli import INIT, REPLAY, RESULT, SID, fake_claude, msg, seen
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"


def same_dir(a: str | Path, b: str | Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def planner() -> AgentSpec:
    return bind(load_definition(EXAMPLES / "claude-planner.md"))


@pytest.mark.anyio
async def test_replays_stream_json_onto_agent_messages(tmp_path: Path) -> None:
    script = fake_claude(tmp_path / "bin", REPLAY)
    work = tmp_path / "work"
    work.mkdir()
    events: list[AgentMessage] = []
    spec = planner()
    outcome = await run_claude_cli(
        spec,
        "Plan the change.",
        working_dir=work,
        session_id="s-1",
        emit=events.append,
        executable=script,
        include_partial_messages=True,
        env={"FAKE_EXTRA": "yes"},
    )
    observed = seen(tmp_path / "bin")
    assert observed["argv"] == claude_cli_args(spec, include_partial_messages=True)
    assert observed["prompt"] == "Plan the change."
    assert same_dir(observed["cwd"], work)
    assert observed["extra"] == "yes"

    wire = [to_wire(e) for e in events]
    assert [w["type"] for w in wire] == [
        "session_init",
        "thinking",
        "text",
        "tool_use",
        "tool_result",
        "text_delta",
        "text",
        "result",
    ]
    assert wire[0] == {
        "type": "session_init",
        "sessionId": "s-1",
        "systemPrompt": spec.system_prompt,
        "projectPath": "/work/project",
    }
    assert wire[1] == {"type": "thinking", "content": "Read first.", "signature": "sig=="}
    assert wire[2] == {
        "type": "text",
        "content": "I'll read the README.",
        "turnPhase": "commentary",
    }
    assert wire[3] == {
        "type": "tool_use",
        "id": "toolu_01",
        "tool": "Read",
        "input": {"file_path": "/work/project/README.md"},
    }
    assert wire[4] == {
        "type": "tool_result",
        "toolUseId": "toolu_01",
        "tool": "Read",
        "output": "# Demo",
        "isError": False,
    }
    assert wire[5] == {"type": "text_delta", "content": "Plan: "}
    assert wire[6] == {
        "type": "text",
        "content": "Plan: 1. Read README. 2. Edit.",
        "turnPhase": "final",
    }
    assert wire[7]["content"] == "Plan: 1. Read README. 2. Edit."
    accounting = wire[7]["accounting"]
    assert accounting == {
        "models": {
            "claude-opus-5": {
                "inputTokens": 12,
                "outputTokens": 80,
                "cacheReadTokens": 2000,
                "cacheWriteTokens": 100,
                "reasoningTokens": 0,
            }
        },
        "modelCalls": 2,
        "toolCalls": 1,
        "permissionDenials": 1,
        "costUsd": 0.0123,
    }
    assert outcome.status == "completed"
    assert outcome.text == "Plan: 1. Read README. 2. Edit."
    assert outcome.claude_session_id == SID
    assert outcome.exit_code == 0
    assert outcome.error is None


@pytest.mark.anyio
async def test_found_on_path_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_claude(tmp_path / "bin", [INIT, RESULT])
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ.get("PATH", ""))
    assert find_claude() == str(tmp_path / "bin" / "claude")
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append
    )
    assert outcome.status == "completed"
    assert [e.type for e in events] == ["session_init", "result"]
    assert seen(tmp_path / "bin")["argv"] == claude_cli_args(planner())


@pytest.mark.anyio
async def test_missing_executable_is_a_clear_error_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClaudeCliError, match="was not found on PATH"):
        find_claude()
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append
    )
    assert outcome.status == "error"
    assert outcome.error is not None and "'claude' command was not found" in outcome.error
    assert [to_wire(e) for e in events] == [{"type": "error", "error": outcome.error}]
    outcome = await run_claude_cli(
        planner(),
        "hi",
        working_dir=tmp_path,
        session_id="s",
        emit=events.append,
        executable=tmp_path / "nope" / "claude",
    )
    assert outcome.error is not None and "does not exist or is not executable" in outcome.error


@pytest.mark.anyio
async def test_a_crash_reports_exit_code_and_stderr(tmp_path: Path) -> None:
    script = fake_claude(tmp_path / "bin", [], mode="crash")
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append,
        executable=script,
    )
    assert outcome.status == "error"
    assert outcome.exit_code == 3
    assert outcome.error == "claude exited with code 3 without a result: fatal: something broke"
    assert [e.type for e in events] == ["error"]


@pytest.mark.anyio
async def test_an_error_result_becomes_an_error_event(tmp_path: Path) -> None:
    error_result = json.dumps(
        {
            "type": "result",
            "subtype": "error_max_turns",
            "is_error": True,
            "duration_ms": 100,
            "num_turns": 3,
            "session_id": SID,
            "total_cost_usd": 0.5,
            "usage": {"input_tokens": 5, "output_tokens": 6},
            "permission_denials": [],
        }
    )
    script = fake_claude(
        tmp_path / "bin", [INIT, msg([{"type": "text", "text": "Working"}]), error_result]
    )
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append,
        executable=script,
    )
    wire = [to_wire(e) for e in events]
    assert [w["type"] for w in wire] == ["session_init", "text", "error"]
    assert wire[1]["turnPhase"] == "commentary"
    assert wire[2]["error"] == "claude ended with error_max_turns"
    assert wire[2]["accounting"]["models"] == {
        "claude-opus-5": {
            "inputTokens": 5,
            "outputTokens": 6,
            "cacheReadTokens": 0,
            "cacheWriteTokens": 0,
            "reasoningTokens": 0,
        }
    }
    assert outcome.status == "error"
    assert outcome.accounting.cost_usd == 0.5


@pytest.mark.anyio
async def test_cancelling_kills_the_process(tmp_path: Path) -> None:
    script = fake_claude(tmp_path / "bin", [INIT], mode="hang")
    events: list[AgentMessage] = []
    with anyio.move_on_after(2) as scope:
        await run_claude_cli(
            planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append,
            executable=script,
        )
    assert scope.cancelled_caught
    assert [e.type for e in events] == ["session_init"]
    pid = seen(tmp_path / "bin")["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.anyio
async def test_refuses_engine_specs() -> None:
    spec = AgentSpec(id="x")
    with pytest.raises(ValueError, match="not 'claude-cli'"):
        await run_claude_cli(spec, "hi", working_dir=".", session_id="s", emit=print)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["missing", "file"])
async def test_missing_working_dir_is_named_not_the_executable(tmp_path: Path, kind: str) -> None:
    script = fake_claude(tmp_path / "bin", [])
    working_dir = tmp_path / "nowhere"
    if kind == "file":
        working_dir.write_text("x")
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=working_dir, session_id="s", emit=events.append,
        executable=script,
    )
    why = "does not exist" if kind == "missing" else "is not a folder"
    assert outcome.status == "error"
    assert outcome.error == f"the working directory {str(working_dir)!r} {why}"
    assert [to_wire(e) for e in events] == [{"type": "error", "error": outcome.error}]
    assert not (tmp_path / "bin" / "seen.json").exists()  # claude never started


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("printed", "expected"),
    [
        ("1.0.128 (Claude Code)", "Claude Code 1.0.128 at {path!r} is too old: the claude-cli "
         "runtime needs {minimum} or newer (npm install -g @anthropic-ai/claude-code@latest)"),
        ("some other tool", "{path!r} is not a Claude Code CLI agentkit can use: `--version` "
         "exited with 0 and printed 'some other tool'"),
    ],
)
async def test_a_claude_too_old_or_unknown_is_refused_before_running(
    tmp_path: Path, printed: str, expected: str
) -> None:
    from agentkit.defs._claude_cli import CLAUDE_MIN_VERSION

    script = fake_claude(tmp_path / "bin", [INIT, RESULT])
    (tmp_path / "bin" / "version").write_text(printed)
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        planner(), "hi", working_dir=tmp_path, session_id="s", emit=events.append,
        executable=script,
    )
    assert outcome.status == "error"
    assert outcome.error is not None
    assert outcome.error.startswith(expected.format(path=str(script), minimum=CLAUDE_MIN_VERSION))
    assert [e.type for e in events] == ["error"]
    assert not (tmp_path / "bin" / "seen.json").exists()  # never run with a prompt
