"""The `claude-cli` runtime: runs the `claude` command line and maps its stream-JSON output.

`claude -p --output-format stream-json --verbose` writes one JSON object per line:
`system` (subtype `init` first), `assistant` messages (content blocks `text`, `thinking`,
`tool_use`), `user` messages (`tool_result` blocks), `stream_event` partials (with
`--include-partial-messages`) and a closing `result` with usage and cost. They become
AgentMessage events: `session_init`, `text` / `thinking` / `tool_use` / `tool_result`,
`text_delta`, and a final `result` or `error`. The last text before a successful result is
the `final` text; earlier ones are `commentary`. `turn_start` / `turn_end` are the caller's.

Why one long module: driving the `claude` command line is one concern: its arguments, the
version check, the process's lifetime and the mapping of its stream-JSON onto events.

`claude` runs its own tools (its Bash commands among them) as its children. It is started
like every tool process (`agentkit._internal.contain`): on Linux under the subreaper
helper, so when the turn ends, is cancelled, or agentkit dies however, `claude` and
everything it started are killed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from agentkit._internal.contain import open_contained
from agentkit.defs._binding import claude_cli_args
from agentkit.errors import ClaudeCliError
from agentkit.events import (
    Accounting,
    AgentMessage,
    ErrorEvent,
    ModelUsage,
    Result,
    SessionInit,
    Text,
    TextDelta,
    Thinking,
    ToolResult,
    ToolUse,
    TurnStatus,
)
from agentkit.messages import AssistantMessage, UserMessage
from agentkit.spec import AgentSpec

if TYPE_CHECKING:
    from agentkit.runtime import TurnOutcome, TurnRequest

__all__ = [
    "CLAUDE_MIN_VERSION",
    "ClaudeCliError",
    "ClaudeCliOutcome",
    "claude_cli_driver",
    "claude_session_id",
    "claude_version",
    "find_claude",
    "run_claude_cli",
]

CLAUDE_MIN_VERSION = "2.1.38"
"""The oldest Claude Code this runtime drives: `--effort` first appeared in 2.1.38 (`--tools`
in 2.1.0); older releases reject the arguments `claude_cli_args` builds."""
_INSTALL_HINT = "npm install -g @anthropic-ai/claude-code@latest"
_VERSION_TIMEOUT = 30.0
_VERSIONS: dict[tuple[str, int, int], str] = {}

_STDERR_TAIL = 2000
_SESSION_NAMESPACE = uuid.UUID("6f1c2a9e-4b7d-5e3a-9c1f-8d2e7a4b6c10")


@dataclass(frozen=True)
class ClaudeCliOutcome:
    """How a `claude` turn ended.

    Attributes:
        status: `completed` or `error`.
        text: The final answer (`result` text); empty on error.
        accounting: Tokens per model, model calls, tool calls, denials and cost.
        claude_session_id: Claude Code's own session id (pass it as `resume` to continue).
        error: What went wrong, when `status` is `error`.
        exit_code: The process exit code, when it ran.
    """

    status: TurnStatus
    text: str = ""
    accounting: Accounting = field(default_factory=Accounting)
    claude_session_id: str | None = None
    error: str | None = None
    exit_code: int | None = None


def find_claude(executable: str | os.PathLike[str] = "claude") -> str:
    """The path of the `claude` executable: `executable` itself when it is a path, otherwise
    looked up on `PATH`.

    Raises:
        ClaudeCliError: when it does not exist or is not executable.
    """
    name = os.fspath(executable)
    if os.sep in name or (os.altsep and os.altsep in name):
        path = Path(name)
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        raise ClaudeCliError(f"the claude executable {name!r} does not exist or is not executable")
    found = shutil.which(name)
    if found is None:
        raise ClaudeCliError(
            f"the {name!r} command was not found on PATH; install Claude Code "
            f"{CLAUDE_MIN_VERSION} or newer ({_INSTALL_HINT}) or pass the executable's path"
        )
    return found


def _version_tuple(version: str) -> tuple[int, int, int]:
    major, minor, patch = (int(part) for part in version.split("."))
    return major, minor, patch


async def claude_version(executable: str | os.PathLike[str] = "claude") -> str:
    """The version of a `claude` executable (`claude --version`), checked to be at least
    `CLAUDE_MIN_VERSION`; remembered per file (path, size and modification time).

    Raises:
        ClaudeCliError: when it is missing, does not answer `--version` with a version, or
            is older than `CLAUDE_MIN_VERSION` (the message names both versions).
    """
    path = find_claude(executable)
    stat = os.stat(path)
    key = (path, stat.st_size, stat.st_mtime_ns)
    version = _VERSIONS.get(key)
    if version is None:
        try:
            with anyio.fail_after(_VERSION_TIMEOUT):
                done = await _run_version(path)
        except TimeoutError:
            raise ClaudeCliError(
                f"{path!r} did not answer --version within {_VERSION_TIMEOUT:g} s"
            ) from None
        except OSError as exc:
            raise ClaudeCliError(f"cannot start {path!r}: {exc.strerror or exc}") from None
        output = done.stdout.decode("utf-8", "replace").strip()
        match = re.match(r"v?(\d+\.\d+\.\d+)\b", output)
        if done.returncode != 0 or match is None:
            said = output or done.stderr.decode("utf-8", "replace").strip()
            raise ClaudeCliError(
                f"{path!r} is not a Claude Code CLI agentkit can use: `--version` exited "
                f"with {done.returncode} and printed {said[:200]!r}; install Claude Code "
                f"{CLAUDE_MIN_VERSION} or newer ({_INSTALL_HINT})"
            )
        version = match.group(1)
        _VERSIONS[key] = version
    if _version_tuple(version) < _version_tuple(CLAUDE_MIN_VERSION):
        raise ClaudeCliError(
            f"Claude Code {version} at {path!r} is too old: the claude-cli runtime needs "
            f"{CLAUDE_MIN_VERSION} or newer ({_INSTALL_HINT})"
        )
    return version


async def run_claude_cli(
    spec: AgentSpec,
    prompt: str,
    *,
    working_dir: str | os.PathLike[str],
    session_id: str,
    emit: Callable[[AgentMessage], None],
    executable: str | os.PathLike[str] = "claude",
    resume: str | None = None,
    include_partial_messages: bool = False,
    env: Mapping[str, str] | None = None,
) -> ClaudeCliOutcome:
    """Run one turn of a `claude-cli` spec with the `claude` command line.

    The prompt is written to the process's standard input; every mapped event is passed to
    `emit` as it arrives: `session_init`, the content events, and a closing `result` or
    `error` (`turn_start` / `turn_end` are the caller's). Failures (missing executable or
    working directory, a `claude` older than `CLAUDE_MIN_VERSION`, a crash, an error
    result) become that `error` event and `status="error"`; they never raise. Cancelling
    the caller kills the process.

    Args:
        spec: A spec with `runtime="claude-cli"` (see `bind`).
        prompt: The user's prompt.
        working_dir: The directory `claude` runs in.
        session_id: agentkit's session id (put on the `session_init` event).
        emit: Receives each event.
        executable: The command name or path of `claude`.
        resume: A Claude Code session id to continue (`--resume`).
        include_partial_messages: Ask for `stream_event` partials (become `text_delta`).
        env: Extra environment variables for the process.
    """
    args = _args(spec, include_partial_messages, [f"--resume={resume}"] if resume else [])
    return await _run(
        spec, prompt, args, working_dir, session_id, emit, executable, env, standalone=True
    )


async def claude_cli_driver(request: TurnRequest) -> TurnOutcome:
    """The `Runtime` driver for `claude-cli` specs (`Runtime` picks it for them).

    The runtime emits `turn_start`, `session_init`, the closing `result` / `error` and
    `turn_end`; this driver emits the content events and returns the outcome. The Claude
    Code session is derived from agentkit's session id (a UUID 5), created with
    `--session-id` on the first turn and continued with `--resume` afterwards, so a resumed
    agentkit session continues the same Claude conversation. The executable is the
    runtime service `claude_executable`, else `$AGENTKIT_CLAUDE`, else `claude` on `PATH`.
    """
    from agentkit.runtime import TurnOutcome

    services = request.resources.services
    executable = (
        services.get("claude_executable") or os.environ.get("AGENTKIT_CLAUDE") or "claude"
    )
    claude_session = claude_session_id(request.session_id)
    started = any(m.role == "assistant" for m in request.transcript)
    session_flag = f"--resume={claude_session}" if started else f"--session-id={claude_session}"
    spec = request.spec.model_copy(update={"system_prompt": request.system_prompt})
    args = _args(spec, bool(services.get("claude_partial_messages", True)), [session_flag])
    outcome = await _run(
        spec,
        request.prompt,
        args,
        request.working_dir,
        request.session_id,
        request.emit,
        executable,
        None,
        standalone=False,
    )
    if outcome.claude_session_id is not None:
        await request.save_messages(
            [UserMessage(content=request.prompt), AssistantMessage(text=outcome.text)]
        )
    return TurnOutcome(
        status=outcome.status if outcome.status != "interrupted" else "error",
        text=outcome.text,
        error=outcome.error,
        accounting=outcome.accounting,
    )


def claude_session_id(session_id: str) -> str:
    """The Claude Code session id (a UUID) used for an agentkit session id."""
    return str(uuid.uuid5(_SESSION_NAMESPACE, session_id))


def _args(spec: AgentSpec, partial: bool, extra: list[str]) -> list[str]:
    return [*claude_cli_args(spec, include_partial_messages=partial), *extra]


def _folder_problem(working_dir: str | os.PathLike[str]) -> str | None:
    """Why `working_dir` cannot be the process's folder (checked first: starting a process
    in a missing folder fails with ENOENT, which reads as a missing `claude`)."""
    if os.path.isdir(working_dir):
        return None
    why = "is not a folder" if os.path.exists(working_dir) else "does not exist"
    return f"the working directory {str(working_dir)!r} {why}"


async def _run(
    spec: AgentSpec,
    prompt: str,
    args: list[str],
    working_dir: str | os.PathLike[str],
    session_id: str,
    emit: Callable[[AgentMessage], None],
    executable: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    *,
    standalone: bool,
) -> ClaudeCliOutcome:
    if spec.runtime != "claude-cli":
        raise ValueError(f"spec {spec.id!r} has runtime {spec.runtime!r}, not 'claude-cli'")
    mapper = _Mapper(session_id, str(working_dir), emit, spec, standalone=standalone)
    problem = _folder_problem(working_dir)
    if problem is not None:
        return mapper.fail(problem, None)
    try:
        command = [find_claude(executable), *args]
        await claude_version(command[0])
    except ClaudeCliError as exc:
        return mapper.fail(str(exc), None)
    environment = {**os.environ, **env} if env is not None else None
    stderr = bytearray()
    async with contextlib.AsyncExitStack() as stack:
        try:
            process = await stack.enter_async_context(
                open_contained(
                    command,
                    cwd=working_dir,
                    env=environment,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )
            )
        except OSError as exc:
            return mapper.fail(f"cannot start {command[0]!r}: {exc.strerror or exc}", None)
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, process.stderr, stderr)
            group.start_soon(_feed, process.stdin, prompt)
            await _read_lines(process.stdout, mapper.line)
        code = await process.wait()
    if mapper.outcome is not None:
        return ClaudeCliOutcome(
            status=mapper.outcome.status,
            text=mapper.outcome.text,
            accounting=mapper.outcome.accounting,
            claude_session_id=mapper.outcome.claude_session_id,
            error=mapper.outcome.error,
            exit_code=code,
        )
    tail = bytes(stderr[-_STDERR_TAIL:]).decode("utf-8", "replace").strip()
    reason = f"claude exited with code {code} without a result"
    return mapper.fail(f"{reason}: {tail}" if tail else reason, code)


async def _run_version(path: str) -> subprocess.CompletedProcess[bytes]:
    """`path --version`, contained like the runs (its output's tail is kept)."""
    out, err = bytearray(), bytearray()
    async with open_contained(
        [path, "--version"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        async with anyio.create_task_group() as group:
            group.start_soon(_drain, process.stdout, out)
            group.start_soon(_drain, process.stderr, err)
        code = await process.wait()
    return subprocess.CompletedProcess([path, "--version"], code, bytes(out), bytes(err))


async def _feed(stream: ByteSendStream, prompt: str) -> None:
    try:
        await stream.send(prompt.encode("utf-8"))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    finally:
        await stream.aclose()


async def _drain(stream: ByteReceiveStream, sink: bytearray) -> None:
    async for chunk in stream:
        sink.extend(chunk)
        del sink[: -_STDERR_TAIL * 2]


async def _read_lines(stream: ByteReceiveStream, handle: Callable[[bytes], None]) -> None:
    buffer = bytearray()
    async for chunk in stream:
        buffer.extend(chunk)
        while (end := buffer.find(b"\n")) >= 0:
            handle(bytes(buffer[:end]))
            del buffer[: end + 1]
    if buffer:
        handle(bytes(buffer))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


@dataclass
class _Mapper:
    """Maps stream-JSON objects onto events, one line at a time."""

    session_id: str
    working_dir: str
    emit: Callable[[AgentMessage], None]
    spec: AgentSpec
    standalone: bool = True
    pending: Text | None = None
    tool_names: dict[str, str] = field(default_factory=dict)
    message_ids: set[str] = field(default_factory=set)
    tool_calls: int = 0
    model: str | None = None
    claude_session_id: str | None = None
    outcome: ClaudeCliOutcome | None = None

    def line(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").strip()
        if not text.startswith("{") or self.outcome is not None:
            return
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            return
        if isinstance(data, dict):
            self.message(data)

    def flush(self, phase: str = "commentary") -> None:
        if self.pending is not None:
            pending, self.pending = self.pending, None
            self.emit(pending.model_copy(update={"turn_phase": phase}))

    def send(self, event: AgentMessage) -> None:
        if event.type != "text_delta":
            self.flush()
        self.emit(event)

    def message(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if isinstance(data.get("session_id"), str):
            self.claude_session_id = data["session_id"]
        if kind == "system" and data.get("subtype") == "init":
            if isinstance(data.get("model"), str):
                self.model = data["model"]
            cwd = data.get("cwd")
            if not self.standalone:
                return
            self.send(
                SessionInit(
                    session_id=self.session_id,
                    system_prompt=self.spec.system_prompt or None,
                    project_path=cwd if isinstance(cwd, str) else self.working_dir,
                )
            )
        elif kind == "assistant":
            self.assistant(_dict(data.get("message")))
        elif kind == "user":
            self.user(_dict(data.get("message")))
        elif kind == "stream_event":
            event = _dict(data.get("event"))
            delta = _dict(event.get("delta"))
            if event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                text = delta.get("text")
                if isinstance(text, str) and text:
                    self.send(TextDelta(content=text))
        elif kind == "result":
            self.result(data)

    def assistant(self, message: dict[str, Any]) -> None:
        if isinstance(message.get("id"), str):
            self.message_ids.add(message["id"])
        for block in _list(message.get("content")):
            block = _dict(block)
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                self.flush()
                if block["text"]:
                    self.pending = Text(content=block["text"])
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                signature = block.get("signature")
                self.send(
                    Thinking(
                        content=block["thinking"],
                        signature=signature if isinstance(signature, str) else None,
                    )
                )
            elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                raw_name = block.get("name")
                name = raw_name if isinstance(raw_name, str) else "unknown"
                self.tool_names[block["id"]] = name
                self.tool_calls += 1
                self.send(ToolUse(id=block["id"], tool=name, input=_dict(block.get("input"))))

    def user(self, message: dict[str, Any]) -> None:
        for block in _list(message.get("content")):
            block = _dict(block)
            if block.get("type") != "tool_result" or not isinstance(block.get("tool_use_id"), str):
                continue
            tool_use_id = block["tool_use_id"]
            self.send(
                ToolResult(
                    tool_use_id=tool_use_id,
                    tool=self.tool_names.get(tool_use_id, "unknown"),
                    output=_tool_output(block.get("content")),
                    is_error=block.get("is_error") is True,
                )
            )

    def accounting(self, data: dict[str, Any]) -> Accounting:
        models: dict[str, ModelUsage] = {}
        for name, usage in _dict(data.get("modelUsage")).items():
            usage = _dict(usage)
            models[str(name)] = ModelUsage(
                input_tokens=_int(usage.get("inputTokens")),
                output_tokens=_int(usage.get("outputTokens")),
                cache_read_tokens=_int(usage.get("cacheReadInputTokens")),
                cache_write_tokens=_int(usage.get("cacheCreationInputTokens")),
            )
        usage = _dict(data.get("usage"))
        if not models and usage:
            name = self.model or self.spec.model.model or "claude"
            models[name] = ModelUsage(
                input_tokens=_int(usage.get("input_tokens")),
                output_tokens=_int(usage.get("output_tokens")),
                cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
                cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
            )
        cost = data.get("total_cost_usd")
        return Accounting(
            models=models,
            model_calls=len(self.message_ids) or _int(data.get("num_turns")),
            tool_calls=self.tool_calls,
            permission_denials=len(_list(data.get("permission_denials"))),
            cost_usd=float(cost)
            if isinstance(cost, int | float) and not isinstance(cost, bool)
            else None,
        )

    def result(self, data: dict[str, Any]) -> None:
        accounting = self.accounting(data)
        result = data.get("result")
        text = result if isinstance(result, str) else ""
        if data.get("subtype") == "success" and data.get("is_error") is not True:
            self.flush("final")
            if self.standalone:
                self.emit(Result(content=text, accounting=accounting))
            self.outcome = ClaudeCliOutcome(
                "completed", text, accounting, self.claude_session_id
            )
            return
        errors = [str(e) for e in _list(data.get("errors"))]
        subtype = data.get("subtype")
        message = text or "; ".join(errors) or f"claude ended with {subtype or 'an error'}"
        self.fail(message, None, accounting)

    def fail(
        self, message: str, code: int | None, accounting: Accounting | None = None
    ) -> ClaudeCliOutcome:
        self.flush()
        if self.standalone:
            self.emit(ErrorEvent(error=message, accounting=accounting))
        self.outcome = ClaudeCliOutcome(
            "error",
            "",
            accounting or Accounting(),
            self.claude_session_id,
            message,
            code,
        )
        return self.outcome


def _tool_output(content: Any) -> Any:
    """A tool result's content: a string as is; a list of text blocks joined."""
    if isinstance(content, list) and all(
        isinstance(b, dict) and b.get("type") == "text" for b in content
    ):
        return "\n".join(str(b.get("text", "")) for b in content)
    return content if content is not None else ""
