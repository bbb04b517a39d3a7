"""A fake `claude` executable for the claude-cli runtime's tests: it records its arguments,
stdin, working directory and process, then replays stream-JSON lines recorded from the real
CLI (or crashes, or hangs, as its `mode` file says)."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

SID = "5b2f6c1e-8d3a-4f61-9a0e-2c7d1b9e4f10"
"""The Claude Code session id of every replayed line."""

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
"""The fake `claude` script, formatted with the Python that runs it."""


def msg(content: list[dict[str, Any]], message_id: str = "msg_01") -> str:
    """An `assistant` stream-JSON line holding `content`."""
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
"""The `system/init` line that opens a session."""
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
"""A successful `result` line, with its usage and cost."""
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
"""A whole planning run: init, thinking, text, a tool call and its result, a partial
stream event, a line that is not JSON, the answer and the result."""


def fake_claude(folder: Path, lines: list[str], mode: str = "replay") -> Path:
    """Write the fake `claude` into `folder`, replaying `lines` (or `crash`, `hang`)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "claude"
    script.write_text(FAKE.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    (folder / "lines.jsonl").write_text("\n".join(lines) + "\n")
    (folder / "mode").write_text(mode)
    return script


def seen(folder: Path) -> dict[str, Any]:
    """What the fake `claude` in `folder` was called with: argv, prompt, cwd, pid, extra."""
    data: dict[str, Any] = json.loads((folder / "seen.json").read_text())
    return data
