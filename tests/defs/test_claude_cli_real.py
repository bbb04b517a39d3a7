"""The claude-cli runtime against the real Claude Code CLI and a loopback Anthropic API.

The CLI (`@anthropic-ai/claude-code` from npm) is installed by `.ci/run` under
`.ci/node/claude-code` (and the last release too old for agentkit under
`.ci/node/claude-code-old`); `AGENTKIT_TEST_CLAUDE` / `AGENTKIT_TEST_CLAUDE_OLD` name
other copies. The CLI talks to `tests/support/anthropic_loopback.py` on 127.0.0.1 through
`ANTHROPIC_BASE_URL` with a dummy `ANTHROPIC_API_KEY`; telemetry, error reporting, the
auto-updater and other nonessential traffic are switched off, and `HTTPS_PROXY` /
`HTTP_PROXY` point at a loopback proxy that refuses everything and records any attempt,
so a test fails if the CLI tries to reach any host but the loopback server.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentkit import Runtime
from agentkit.defs import bind, load_definition, register_runtime_hooks, run_claude_cli
from agentkit.defs._claude_cli import CLAUDE_MIN_VERSION, claude_session_id, claude_version
from agentkit.events import AgentMessage, to_wire
from agentkit.testing import ScriptedProvider
from support.anthropic_loopback import AnthropicLoopback, Reply, SinkProxy, text, tool_use
from support.paths import ROOT

EXAMPLES = ROOT / "examples" / "defs"


def _installed(variable: str, folder: str) -> Path | None:
    path = Path(os.environ.get(variable) or ROOT / ".ci" / "node" / folder / "node_modules"
                / ".bin" / "claude")
    return path if path.is_file() and os.access(path, os.X_OK) else None


CLAUDE = _installed("AGENTKIT_TEST_CLAUDE", "claude-code")
CLAUDE_OLD = _installed("AGENTKIT_TEST_CLAUDE_OLD", "claude-code-old")
needs_claude = pytest.mark.skipif(
    CLAUDE is None,
    reason="the real Claude Code CLI is not installed: run the Claude Code step of .ci/run "
    "(npm install --prefix .ci/node/claude-code @anthropic-ai/claude-code@VERSION) or set "
    "AGENTKIT_TEST_CLAUDE to a claude executable",
)
needs_old_claude = pytest.mark.skipif(
    CLAUDE_OLD is None,
    reason="no Claude Code older than the runtime's minimum is installed: run the Claude Code "
    "step of .ci/run or set AGENTKIT_TEST_CLAUDE_OLD",
)
pytestmark = pytest.mark.anyio

# Variables of the developer's environment that would send the CLI elsewhere.
_FOREIGN = (
    "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
    "ANTHROPIC_DEFAULT_HAIKU_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
    "ANTHROPIC_DEFAULT_OPUS_MODEL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_CUSTOM_HEADERS",
    "ALL_PROXY", "all_proxy",
)


@pytest.fixture
def proxy() -> Iterator[SinkProxy]:
    with SinkProxy() as sink:
        yield sink


@pytest.fixture
def marker() -> str:
    return uuid.uuid4().hex


def cli_env(home: Path, server: AnthropicLoopback, proxy: SinkProxy, marker: str
            ) -> dict[str, str]:
    """The CLI's environment: the loopback API, a dummy key, a private home, no telemetry,
    no updates, and every other host behind the refusing proxy."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "sk-ant-loopback-dummy",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "HTTPS_PROXY": proxy.url,
        "HTTP_PROXY": proxy.url,
        "https_proxy": proxy.url,
        "http_proxy": proxy.url,
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        "AGENTKIT_TEST_MARK": marker,
    }


@pytest.fixture(autouse=True)
def _no_foreign_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in _FOREIGN:
        monkeypatch.delenv(name, raising=False)


def _last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user message (its text blocks joined)."""
    for message in reversed(body.get("messages", [])):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")
    return ""


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        block
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


def _processes_with(marker: str) -> list[int]:
    """The live processes whose environment holds the test's marker."""
    found = []
    needle = f"AGENTKIT_TEST_MARK={marker}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _planner() -> Any:
    register_runtime_hooks()  # runtimes run it through the claude-cli driver
    return bind(load_definition(EXAMPLES / "claude-planner.md"))


def _check_loopback_only(server: AnthropicLoopback, proxy: SinkProxy) -> None:
    assert proxy.attempts == [], f"the CLI tried to leave loopback: {proxy.attempts}"
    for request in server.requests:
        assert request["headers"].get("x-api-key") == "sk-ant-loopback-dummy"


@needs_claude
async def test_version_of_the_installed_cli() -> None:
    assert CLAUDE is not None
    version = await claude_version(CLAUDE)
    assert tuple(map(int, version.split("."))) >= tuple(map(int, CLAUDE_MIN_VERSION.split(".")))


@needs_claude
async def test_a_text_answer(tmp_path: Path, proxy: SinkProxy, marker: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    spec = _planner()
    events: list[AgentMessage] = []
    with AnthropicLoopback(lambda body: Reply([text("Plan: read the README, then edit.")])
                           ) as server:
        outcome = await run_claude_cli(
            spec, "Plan the change.", working_dir=work, session_id="s-text",
            emit=events.append, executable=str(CLAUDE), include_partial_messages=True,
            env=cli_env(tmp_path / "home", server, proxy, marker),
        )
    assert outcome.status == "completed", outcome.error
    assert outcome.text == "Plan: read the README, then edit."
    wire = [to_wire(e) for e in events]
    types = [w["type"] for w in wire]
    assert types[0] == "session_init" and types[-2:] == ["text", "result"], types
    assert set(types[1:-2]) == {"text_delta"}, types  # the answer streamed in pieces
    assert "".join(w["content"] for w in wire if w["type"] == "text_delta") == outcome.text
    assert wire[-2] == {"type": "text", "content": outcome.text, "turnPhase": "final"}
    assert wire[0]["projectPath"] == str(work.resolve())
    assert outcome.claude_session_id is not None and outcome.exit_code == 0
    assert outcome.accounting.model_calls == 1
    assert outcome.accounting.models["claude-opus-5"].output_tokens == 7

    body = server.messages_requests[-1]
    assert body["model"] == "claude-opus-5" and body["stream"] is True
    assert "Plan the change." in _last_user_text(body)
    system = body["system"] if isinstance(body["system"], str) else " ".join(
        b.get("text", "") for b in body["system"])
    assert "Produce a short plan." in system  # --append-system-prompt
    assert {t["name"] for t in body.get("tools", [])} >= {"Read", "Edit", "Bash"}
    _check_loopback_only(server, proxy)


@needs_claude
async def test_a_tool_call_runs_in_the_cli(tmp_path: Path, proxy: SinkProxy, marker: str
                                           ) -> None:
    work = tmp_path / "work"
    work.mkdir()
    notes = work / "notes.txt"
    notes.write_text("tide pools hold anemones\n")

    def respond(body: dict[str, Any]) -> Reply:
        results = _tool_results(body)
        if not results:
            return Reply([text("I'll read the notes."),
                          tool_use("toolu_loopback01", "Read", {"file_path": str(notes)})])
        return Reply([text("The notes mention anemones.")])

    events: list[AgentMessage] = []
    with AnthropicLoopback(respond) as server:
        outcome = await run_claude_cli(
            _planner(), "What do the notes say?", working_dir=work, session_id="s-tool",
            emit=events.append, executable=str(CLAUDE),
            env=cli_env(tmp_path / "home", server, proxy, marker),
        )
    assert outcome.status == "completed", outcome.error
    assert outcome.text == "The notes mention anemones."
    wire = [to_wire(e) for e in events]
    assert [w["type"] for w in wire] == [
        "session_init", "text", "tool_use", "tool_result", "text", "result"]
    assert wire[1] == {"type": "text", "content": "I'll read the notes.",
                       "turnPhase": "commentary"}
    assert wire[2] == {"type": "tool_use", "id": "toolu_loopback01", "tool": "Read",
                       "input": {"file_path": str(notes)}}
    assert wire[3]["toolUseId"] == "toolu_loopback01" and wire[3]["tool"] == "Read"
    assert wire[3]["isError"] is False
    assert "tide pools hold anemones" in str(wire[3]["output"])  # the CLI really read it
    assert outcome.accounting.tool_calls == 1 and outcome.accounting.model_calls == 2
    # The API saw the tool result the CLI produced.
    returned = _tool_results(server.messages_requests[-1])
    assert [r["tool_use_id"] for r in returned] == ["toolu_loopback01"]
    assert "tide pools hold anemones" in str(returned[0]["content"])
    _check_loopback_only(server, proxy)


@needs_claude
async def test_a_session_resumes_through_the_runtime(
    tmp_path: Path, proxy: SinkProxy, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def respond(body: dict[str, Any]) -> Reply:
        if "What was the code word?" in _last_user_text(body):
            return Reply([text("The code word was heron.")])
        return Reply([text("Noted: heron.")])

    with AnthropicLoopback(respond) as server:
        for name, value in cli_env(tmp_path / "home", server, proxy, marker).items():
            monkeypatch.setenv(name, value)
        async with Runtime(
            provider=ScriptedProvider([]), working_dir=work,
            services={"claude_executable": str(CLAUDE), "claude_partial_messages": False},
        ) as runtime:
            first = await runtime.start(_planner(), "Remember the code word heron.")
            one = await first.wait()
            second = await runtime.start(
                _planner(), "What was the code word?", session_id=first.session_id)
            two = await second.wait()
            events = [to_wire(e) async for e in second.events()]
    assert one.status == "completed", one.error
    assert two.status == "completed", two.error
    assert two.text == "The code word was heron."
    assert [e["type"] for e in events] == [
        "turn_start", "session_init", "text", "result", "turn_end"]
    # The second request carried the first exchange: the CLI resumed the session.
    last = server.messages_requests[-1]
    transcript = [
        (m["role"], m["content"] if isinstance(m["content"], str)
         else " ".join(b.get("text", "") for b in m["content"] if isinstance(b, dict)))
        for m in last["messages"]
    ]
    assert any(r == "user" and "Remember the code word heron." in t for r, t in transcript)
    assert any(r == "assistant" and "Noted: heron." in t for r, t in transcript)
    sessions = {r["headers"].get("X-Claude-Code-Session-Id") for r in server.requests}
    assert sessions == {claude_session_id(first.session_id)}
    _check_loopback_only(server, proxy)


@needs_claude
async def test_cancelling_stops_the_cli(tmp_path: Path, proxy: SinkProxy, marker: str
                                        ) -> None:
    work = tmp_path / "work"
    work.mkdir()
    events: list[AgentMessage] = []
    with AnthropicLoopback(lambda body: Reply(hang=True)) as server:
        env = cli_env(tmp_path / "home", server, proxy, marker)
        async with anyio.create_task_group() as group:

            async def run() -> None:
                await run_claude_cli(
                    _planner(), "Take your time.", working_dir=work, session_id="s-cancel",
                    emit=events.append, executable=str(CLAUDE), env=env,
                )
                raise AssertionError("the run ended by itself")

            group.start_soon(run)
            assert await anyio.to_thread.run_sync(server.hanging.wait, 60), "no request came"
            assert _processes_with(marker), "the CLI is not running"
            group.cancel_scope.cancel()
        # The process is gone (killed and reaped), and so is its connection.
        assert _processes_with(marker) == []
        assert await anyio.to_thread.run_sync(server.hang_ended.wait, 10), "still connected"
    assert [e.type for e in events] == ["session_init"]
    _check_loopback_only(server, proxy)


@needs_old_claude
async def test_a_cli_too_old_is_named_with_both_versions(tmp_path: Path) -> None:
    assert CLAUDE_OLD is not None
    events: list[AgentMessage] = []
    outcome = await run_claude_cli(
        _planner(), "hi", working_dir=tmp_path, session_id="s-old", emit=events.append,
        executable=str(CLAUDE_OLD),
    )
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "Claude Code 2.1.37" in outcome.error, outcome.error
    assert f"needs {CLAUDE_MIN_VERSION} or newer" in outcome.error
    assert "npm install -g @anthropic-ai/claude-code@latest" in outcome.error
    assert [to_wire(e) for e in events] == [{"type": "error", "error": outcome.error}]


async def test_a_missing_cli_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("AGENTKIT_CLAUDE", raising=False)
    async with Runtime(provider=ScriptedProvider([]), working_dir=tmp_path) as runtime:
        outcome = await (await runtime.start(_planner(), "Plan.")).wait()
    assert outcome.status == "error"
    assert outcome.error is not None
    assert "'claude' command was not found on PATH" in outcome.error
    assert f"Claude Code {CLAUDE_MIN_VERSION} or newer" in outcome.error
