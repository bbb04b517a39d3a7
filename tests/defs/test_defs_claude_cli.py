"""The claude-cli runtime against a fake `claude` executable that checks its arguments and
replays real stream-JSON output."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

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

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "defs"
SID = "5b2f6c1e-8d3a-4f61-9a0e-2c7d1b9e4f10"




FAKE = """#!{python}
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
argv = sys.argv[1:]
if argv == ["--version"]:
    print(open(os.path.join(here, "version")).read().strip() if os.path.exists(
        os.path.join(here, "version")) else "2.1.332 (Claude Code)")
    sys.exit(0)
prompt = sys.stdin.read()
with open(os.path.join(here, "seen.json"), "w") as f:
    json.dump({{"argv": argv, "prompt": prompt, "cwd": os.getcwd(), "pid": os.getpid(),
               "extra": os.environ.get("FAKE_EXTRA")}}, f)
if "-p" not in argv:
    sys.exit("fake claude: expected -p")
fmt = argv[argv.index("--output-format") + 1] if "--output-format" in argv else "text"
if fmt == "stream-json" and "--verbose" not in argv:
    print("Error: When using --print, --output-format=stream-json requires --verbose",
          file=sys.stderr)
    sys.exit(1)
mode = open(os.path.join(here, "mode")).read().strip() if os.path.exists(
    os.path.join(here, "mode")) else "replay"
if mode == "crash":
    print("fatal: something broke", file=sys.stderr)
    sys.exit(3)
for line in open(os.path.join(here, "lines.jsonl")):
    sys.stdout.write(line)
    sys.stdout.flush()
if mode == "hang":
    time.sleep(60)
"""


def msg(content: list[dict[str, Any]], message_id: str = "msg_01") -> str:
    return json.dumps(
        {
            "type": "assistant",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-5",
                "content": content,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 3, "output_tokens": 10},
            },
            "parent_tool_use_id": None,
            "session_id": SID,
            "uuid": "0b1c",
        }
    )


INIT = json.dumps(
    {
        "type": "system",
        "subtype": "init",
        "cwd": "/work/project",
        "session_id": SID,
        "tools": ["Read", "Edit", "Bash"],
        "mcp_servers": [],
        "model": "claude-opus-5",
        "permissionMode": "default",
        "slash_commands": [],
        "apiKeySource": "none",
        "output_style": "default",
        "uuid": "a1b2",
    }
)
RESULT = json.dumps(
    {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "duration_ms": 4200,
        "duration_api_ms": 3900,
        "num_turns": 2,
        "result": "Plan: 1. Read README. 2. Edit.",
        "session_id": SID,
        "total_cost_usd": 0.0123,
        "usage": {
            "input_tokens": 12,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 2000,
            "output_tokens": 80,
            "service_tier": "standard",
        },
        "modelUsage": {
            "claude-opus-5": {
                "inputTokens": 12,
                "outputTokens": 80,
                "cacheReadInputTokens": 2000,
                "cacheCreationInputTokens": 100,
                "webSearchRequests": 0,
                "costUSD": 0.0123,
                "contextWindow": 200000,
            }
        },
        "permission_denials": [{"tool_name": "Edit", "tool_use_id": "toolu_02", "tool_input": {}}],
        "uuid": "f00d",
    }
)
REPLAY = [
    INIT,
    json.dumps({"type": "system", "subtype": "hook_started", "hook_id": "h", "session_id": SID}),
    msg([{"type": "thinking", "thinking": "Read first.", "signature": "sig=="}]),
    msg([{"type": "text", "text": "I'll read the README."}]),
    msg(
        [
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "Read",
                "input": {"file_path": "/work/project/README.md"},
            }
        ]
    ),
    json.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [
                    {
                        "tool_use_id": "toolu_01",
                        "type": "tool_result",
                        "content": [{"type": "text", "text": "# Demo"}],
                    }
                ],
            },
            "parent_tool_use_id": None,
            "session_id": SID,
            "uuid": "c3",
            "tool_use_result": {"type": "text", "file": {"filePath": "/work/project/README.md"}},
        }
    ),
    json.dumps(
        {
            "type": "stream_event",
            "event": {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Plan: "},
            },
            "session_id": SID,
            "parent_tool_use_id": None,
            "uuid": "d4",
        }
    ),
    "[SandboxDebug] not json",
    msg([{"type": "text", "text": "Plan: 1. Read README. 2. Edit."}], "msg_02"),
    RESULT,
]


def fake_claude(folder: Path, lines: list[str], mode: str = "replay") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "claude"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (folder / "lines.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "mode").write_text(mode)
    return script


def seen(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "seen.json").read_text())
    return data


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
