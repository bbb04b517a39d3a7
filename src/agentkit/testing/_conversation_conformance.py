"""The conversation client conformance suite: what every
[`ConversationClient`][agentkit.conversations.ConversationClient] must do.

The suite is given a *host*: a fresh machine, reached through the client implementation
under test, whose provider is [`conformance_provider()`][agentkit.testing.conformance_provider]
(its answers are driven by the prompt's text, so every check can script the model
through the client alone). [`MachineHost`][agentkit.testing.MachineHost] is the host of
the in-process client. Two ways to run it:

- Under pytest, subclass [`ConversationConformance`][agentkit.testing.ConversationConformance]
  and give it a `conversation_host` fixture; each check becomes one test, run under asyncio
  and trio:

    ```python
    import pytest

    from agentkit.testing import ConversationConformance, MachineHost


    class TestLocalClient(ConversationConformance):
        @pytest.fixture
        async def conversation_host(self, tmp_path):
            async with MachineHost.open(tmp_path) as host:
                yield host
    ```

- Anywhere else, `await conversation_conformance(make_host)` runs every check on a fresh
  host from `make_host()` (an async context manager) and raises an `ExceptionGroup` naming
  each check that failed.

This module does not import pytest.

Why one long module: one short check per point of the conversation client's contract, kept
together so that a client's author (the remote client's, next) reads it in one place.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol

import anyio

from agentkit.conversations import (
    MAX_WAIT,
    AccessDeniedError,
    AgentDefinition,
    AgentDeletedError,
    AttachmentError,
    ConversationBusyError,
    ConversationClient,
    ConversationDetails,
    ConversationError,
    ConversationNotFoundError,
    ConversationView,
    FinalEvent,
    FollowEvent,
    InvalidPageError,
    JsonPart,
    Machine,
    MachineAgentNotFoundError,
    OutputEvent,
    PermissionDecisionPart,
    PermissionRequestPart,
    QuestionPart,
    QueuedPromptNotFoundError,
    QueuedPromptStartedError,
    RequestAlreadyDecidedError,
    RequestNotFoundError,
    Role,
    RunNotFoundError,
    RunResult,
    TextDeltaPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UploadError,
    Visibility,
)
from agentkit.providers import (
    AssistantMessage,
    Chunk,
    ModelRequest,
    ProviderError,
    Stop,
    TextChunk,
    ToolCall,
    ToolCallChunk,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from agentkit.testing._suite import add_tests, run_checks

__all__ = [
    "ACCESS_OPERATIONS",
    "ACTORS",
    "CONVERSATION_CHECKS",
    "VISIBILITIES",
    "ConversationCheck",
    "ConversationConformance",
    "ConversationHost",
    "MachineHost",
    "check_access_case",
    "check_resumed",
    "conformance_provider",
    "conversation_conformance",
    "expected_access",
]

_TIMEOUT = 30.0


# --- the host and its provider ------------------------------------------------------------


class ConversationHost(Protocol):
    """What the suite runs against: a fresh machine behind some client implementation.

    Attributes:
        attachment_root: A writable folder that is one of the machine's attachment roots.
    """

    attachment_root: Path

    async def client(self, name: str, role: Role) -> ConversationClient:
        """Add a member with this name and role, and return a client acting as it."""
        ...


class _ConformanceProvider:
    """A model whose answer is chosen by the last line of the last user message:

    - `say <text>`: answers `<text>`, streamed in three pieces;
    - `slow <n>`: streams `n` words, 20 ms apart;
    - `hang`: streams `partial answer` and then never finishes;
    - `bash <command>`: runs `<command>` with the `Bash` tool, then answers `ran`;
    - `ask <question>`: asks `<question>` (options `yes` and `no`) with the
      questionnaire tool, then answers `answered <the tool's result>`;
    - `json`: submits `{"answer": "forty-two"}` through the structured-output tool;
    - `effort`: answers `effort=<the request's reasoning effort>`;
    - `system`: answers the system prompt's lines that contain `MARK`;
    - `count`: answers `users=<number of user prompts it was sent>`;
    - `history`: answers the conversation it was sent, one `u:<last line>` per user
      prompt and one `a:<text>` per answer with text, joined by ` | `;
    - `fail`: the model call fails;
    - anything else: answers `ok`.
    """

    name = "conformance"

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return model or f"conformance-{tier or 'medium'}"

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        prompts = [
            m
            for m in request.messages
            if isinstance(m, UserMessage) and not m.content.startswith("You have not called")
        ]
        line = prompts[-1].content.strip().splitlines()[-1] if prompts else ""
        command, _, argument = line.partition(" ")
        after_tool = bool(request.messages) and isinstance(request.messages[-1], ToolResultMessage)
        usage = Usage(request.model, input_tokens=1, output_tokens=1)
        if command == "fail":
            raise ProviderError("the model failed on purpose")
        if command == "bash" and not after_tool:
            call = ToolCall(id="call_bash", name="Bash", arguments={"command": argument})
            yield ToolCallChunk(call)
            yield usage
            yield Stop("tool_use")
            return
        if command == "ask" and not after_tool:
            question = {"id": "q1", "question": argument, "options": ["yes", "no"]}
            call = ToolCall(
                id="call_ask", name="AskUserQuestion", arguments={"questions": [question]}
            )
            yield ToolCallChunk(call)
            yield usage
            yield Stop("tool_use")
            return
        if command == "json" and not after_tool:
            call = ToolCall(id="call_json", name="submit_output", arguments={"answer": "forty-two"})
            yield ToolCallChunk(call)
            yield usage
            yield Stop("tool_use")
            return
        if command == "hang":
            yield TextChunk("partial answer")
            await anyio.sleep_forever()
        if command == "slow":
            for index in range(int(argument or "5")):
                await anyio.sleep(0.02)
                yield TextChunk(f"w{index} ")
            yield usage
            yield Stop()
            return
        if command == "say":
            text = argument
        elif command == "bash":
            text = "ran"
        elif command == "ask":
            result = request.messages[-1]
            text = f"answered {result.content if isinstance(result, ToolResultMessage) else ''}"
        elif command == "effort":
            text = f"effort={request.reasoning_effort}"
        elif command == "system":
            text = " ".join(part for part in request.system.split() if "MARK" in part)
        elif command == "count":
            text = f"users={len(prompts)}"
        elif command == "history":
            text = " | ".join(_seen(request))
        else:
            text = "ok"
        third = max(1, len(text) // 3)
        for start in range(0, len(text), third):
            yield TextChunk(text[start : start + third])
        yield usage
        yield Stop()


def _seen(request: ModelRequest) -> list[str]:
    """The conversation a model was sent, as the `history` command answers it."""
    seen: list[str] = []
    for message in request.messages:
        if isinstance(message, UserMessage) and message.content.strip():
            seen.append("u:" + message.content.strip().splitlines()[-1])
        elif isinstance(message, AssistantMessage) and message.text:
            seen.append("a:" + message.text)
    return seen


def conformance_provider() -> Any:
    """The provider a conformance host's machine must use (answers driven by the prompt;
    see the module documentation)."""
    return _ConformanceProvider()


class MachineHost:
    """The host of the in-process client: a [`Machine`][agentkit.conversations.Machine]
    on a SQLite file, whose attachment root is a folder of `tmp_path`."""

    def __init__(self, machine: Machine, attachment_root: Path) -> None:
        self.machine = machine
        self.attachment_root = attachment_root

    @classmethod
    @contextlib.asynccontextmanager
    async def open(cls, folder: Path, **options: Any) -> AsyncIterator[MachineHost]:
        """A fresh machine in `folder` (`options` go to `Machine`)."""
        root = folder / f"space-{uuid.uuid4().hex[:8]}"
        root.mkdir(parents=True)
        options.setdefault("store", str(folder / f"machine-{uuid.uuid4().hex[:8]}.db"))
        options.setdefault("provider", conformance_provider())
        async with Machine(attachment_roots=[root], **options) as machine:
            yield cls(machine, root)

    async def client(self, name: str, role: Role) -> ConversationClient:
        await self.machine.add_member(name, role)
        return self.machine.client(await self.machine.member(name))


# --- helpers --------------------------------------------------------------------------------


async def _follow(
    client: ConversationClient, conversation_id: str, run_id: str, after: int | None = None
) -> list[FollowEvent]:
    with anyio.fail_after(_TIMEOUT):
        return [event async for event in client.follow(conversation_id, run_id, after=after)]


async def _until(
    predicate: Callable[[], bool | Awaitable[bool]], what: str, limit: float = _TIMEOUT
) -> None:
    deadline = time.monotonic() + limit
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.01)


async def _expect(exc_type: type[BaseException], call: Awaitable[Any], what: str) -> BaseException:
    try:
        await call
    except exc_type as exc:
        return exc
    raise AssertionError(f"{what}: expected {exc_type.__name__}")


def check_resumed(full: list[FollowEvent], resumed: list[FollowEvent], after: int) -> None:
    """Check that `resumed` (a follow with `after`) continues `full` with no gap and no
    duplicate: offsets only grow and all exceed `after`; every part of `full` after `after`
    that is not a live text delta is there (deltas are kept only while the run goes, and
    the `text` part after them holds their text); it ends with `full`'s final event (and
    is empty after it)."""
    if after >= full[-1].offset:
        assert resumed == [], f"after the final event: {resumed}"
        return
    offsets = [event.offset for event in resumed]
    assert offsets == sorted(set(offsets)), f"offsets not strictly growing: {offsets}"
    assert all(offset > after for offset in offsets), f"an offset <= {after}: {offsets}"
    by_offset = {event.offset: event for event in full}
    for event in resumed:
        assert by_offset.get(event.offset) == event, f"{event} is not in the full follow"
    required = [
        e
        for e in full
        if e.offset > after
        and not (isinstance(e, OutputEvent) and isinstance(e.part, TextDeltaPart))
    ]
    assert [e for e in resumed if e in required] == required, (
        f"after {after}: missing {[e for e in required if e not in resumed]}"
    )
    assert resumed and resumed[-1] == full[-1] and isinstance(resumed[-1], FinalEvent)
    assert sum(isinstance(e, FinalEvent) for e in resumed) == 1


def _text(events: list[FollowEvent]) -> str:
    return "".join(
        e.part.text for e in events if isinstance(e, OutputEvent) and isinstance(e.part, TextPart)
    )


async def _run(
    client: ConversationClient, conversation_id: str, text: str, **options: Any
) -> list[FollowEvent]:
    accepted = await client.prompt(conversation_id, text, **options)
    return await _follow(client, conversation_id, accepted.run_id)


# --- the checks -----------------------------------------------------------------------------

ConversationCheck = Callable[[ConversationHost], Awaitable[None]]
"""One conformance check: an async function given a fresh host."""

_checks: dict[str, ConversationCheck] = {}


def _check(fn: ConversationCheck) -> ConversationCheck:
    _checks[fn.__name__.removeprefix("check_")] = fn
    return fn


@_check
async def check_create_get_list(host: ConversationHost) -> None:
    """A new conversation is private by default, talks to `rool`, has no turns, and is
    listed as a light row; names and visibility change without touching turns."""
    ada = await host.client("ada", "owner")
    assert isinstance(ada, ConversationClient) and ada.member.name == "ada"
    conversation = await ada.create_conversation(name="Plans", instructions="Be brief.")
    details = await conversation.get()
    assert (details.name, details.agent, details.visibility) == ("Plans", "rool", "private")
    assert details.creator == "ada" and details.instructions == "Be brief."
    assert details.turns == () and not details.is_running
    rows = await ada.list_conversations()
    assert [(r.id, r.name, r.agent, r.visibility, r.is_running) for r in rows] == [
        (conversation.id, "Plans", "rool", "private", False)
    ]
    await _run(ada, conversation.id, "say hello")
    before = (await conversation.get()).turns
    await conversation.rename("Renamed")
    await conversation.set_visibility("shared")
    after = await conversation.get()
    assert (after.name, after.visibility) == ("Renamed", "shared")
    assert after.turns == before
    assert [t.role for t in await conversation.list_turns()] == ["user", "agent"]


@_check
async def check_prompt_follow_turns(host: ConversationHost) -> None:
    """prompt() returns the accepted run; follow() yields live deltas, the text, and
    exactly one final `completed`; the turns keep the prompt and the answer."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("say hello world")
    assert accepted.conversation_id == conversation.id
    assert accepted.turn_id == f"u-{accepted.run_id}"
    events = await _follow(ada, conversation.id, accepted.run_id)
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    assert sum(isinstance(e, FinalEvent) for e in events) == 1
    assert _text(events) == "hello world"
    turns = await conversation.list_turns()
    assert [(t.role, t.status, t.text, t.run_id) for t in turns] == [
        ("user", "completed", "say hello world", accepted.run_id),
        ("agent", "completed", "hello world", accepted.run_id),
    ]
    assert turns[0].id == accepted.turn_id


@_check
async def check_follow_resumes_after_every_offset(host: ConversationHost) -> None:
    """follow(after=k) for every offset k of a run, while it runs and after it ended,
    continues with no gap and no duplicate."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("slow 8")
    full: list[FollowEvent] = []
    resumed: dict[int, list[FollowEvent]] = {}

    async def resume(after: int) -> None:
        resumed[after] = await _follow(ada, conversation.id, accepted.run_id, after)

    async with anyio.create_task_group() as group:
        group.start_soon(resume, -1)
        async for event in ada.follow(conversation.id, accepted.run_id):
            full.append(event)
            group.start_soon(resume, event.offset)  # during the run
    for after, events in resumed.items():
        check_resumed(full, events, after)
    for after in [-1, *(event.offset for event in full)]:  # after it ended
        check_resumed(full, await _follow(ada, conversation.id, accepted.run_id, after), after)
    assert await _follow(ada, conversation.id, accepted.run_id, full[-1].offset) == []


@_check
async def check_run_outlives_its_reader(host: ConversationHost) -> None:
    """A reader that leaves (or is cancelled) does not stop the run."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("slow 5")
    with anyio.move_on_after(0.03):
        async for _ in ada.follow(conversation.id, accepted.run_id):
            pass
    events = await _follow(ada, conversation.id, accepted.run_id)
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.status == "completed"
    assert _text(events) == "".join(f"w{i} " for i in range(5))


@_check
async def check_one_run_at_a_time(host: ConversationHost) -> None:
    """A prompt while a run is going is refused with ConversationBusyError."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    await conversation.prompt("hang")
    await _expect(ConversationBusyError, conversation.prompt("say again"), "second prompt")
    assert (await conversation.get()).is_running
    assert [row.is_running for row in await ada.list_conversations()] == [True]
    assert await conversation.cancel()


@_check
async def check_cancel_keeps_partial_output(host: ConversationHost) -> None:
    """cancel() stops the run; follow() ends with `cancelled`; what was streamed is kept
    as the agent turn, `cancelled`; the conversation takes prompts again."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("hang")
    seen: list[FollowEvent] = []

    async def follow() -> None:
        async for event in ada.follow(conversation.id, accepted.run_id):
            seen.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        await _until(lambda: bool(seen), "the first part")
        assert await conversation.cancel()
    assert isinstance(seen[-1], FinalEvent) and seen[-1].status == "cancelled"
    turns = await conversation.list_turns()
    assert [(t.role, t.status) for t in turns] == [("user", "completed"), ("agent", "cancelled")]
    assert turns[1].text == "partial answer"
    assert not await conversation.cancel()  # nothing running any more
    events = await _run(ada, conversation.id, "count")
    assert _text(events) == "users=2"  # the model sees the cancelled prompt too


@_check
async def check_cancel_stops_tool_processes(host: ConversationHost) -> None:
    """cancel() ends the tool's subprocess, not only the model call."""
    owner = await host.client("olga", "owner")
    await owner.create_agent(
        AgentDefinition(name="shell", tools=("Bash",), permission_mode="bypassPermissions")
    )
    conversation = await owner.create_conversation(agent="shell")
    pid_file = host.attachment_root / f"pid-{uuid.uuid4().hex[:6]}"
    accepted = await conversation.prompt(f"bash echo $$ > {pid_file}; exec sleep 600")
    await _until(lambda: pid_file.exists() and pid_file.read_text().strip() != "", "the tool")
    pid = int(pid_file.read_text())
    assert _alive(pid)
    assert await conversation.cancel()
    await _until(lambda: not _alive(pid), f"process {pid} to end", limit=10)
    events = await _follow(owner, conversation.id, accepted.run_id)
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "cancelled"
    assert any(isinstance(e, OutputEvent) and isinstance(e.part, ToolCallPart) for e in events)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as stat:
        return stat.read().split(") ")[-1][:1] != "Z"  # a zombie is gone but not reaped
    return True


@_check
async def check_error_is_final(host: ConversationHost) -> None:
    """A failing model call ends the run with one final `error` that says why."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    events = await _run(ada, conversation.id, "fail")
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.status == "error"
    assert final.error is not None and "failed on purpose" in final.error
    turns = await conversation.list_turns()
    assert turns[-1].status == "error" and "failed on purpose" in (turns[-1].error or "")
    events = await _run(ada, conversation.id, "count")  # the conversation goes on
    assert _text(events) == "users=2"  # and the model sees the failed prompt too


@_check
async def check_effort_and_structured_output(host: ConversationHost) -> None:
    """`effort` reaches the model; `output_schema` gives a `json` part."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    assert _text(await _run(ada, conversation.id, "effort", effort="high")) == "effort=high"
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    events = await _run(ada, conversation.id, "json", output_schema=schema)
    parts = [e.part for e in events if isinstance(e, OutputEvent)]
    assert JsonPart(value={"answer": "forty-two"}) in parts
    turn = (await conversation.list_turns())[-1]
    assert JsonPart(value={"answer": "forty-two"}) in turn.parts
    assert not any(isinstance(p, ToolCallPart) for p in turn.parts)


@_check
async def check_replace_turn(host: ConversationHost) -> None:
    """replace_turn drops that user turn and every turn after it; the run starts there."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    for text in ("say one", "say two", "say three"):
        await _run(ada, conversation.id, text)
    turns = await conversation.list_turns()
    second = turns[2]
    assert second.role == "user" and second.text == "say two"
    accepted = await conversation.prompt("count", replace_turn=second.id)
    await _follow(ada, conversation.id, accepted.run_id)
    after = await conversation.list_turns()
    assert [t.text for t in after] == ["say one", "one", "count", "users=2"]
    await _expect(Exception, conversation.prompt("x", replace_turn="u-nothing"), "unknown turn")


@_check
async def check_attachments(host: ConversationHost) -> None:
    """Attachments are existing files under the roots; anything else is refused before
    a run is accepted (missing, outside, `..`, a link out, a folder, a relative path)."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    root = host.attachment_root
    (root / "notes.txt").write_text("notes")
    outside = root.parent / f"outside-{uuid.uuid4().hex[:6]}.txt"
    outside.write_text("secret")
    (root / "link.txt").symlink_to(outside)
    (root / "sub").mkdir()
    refused = [
        str(root / "missing.txt"),
        str(outside),
        f"{root}/../{outside.name}",
        str(root / "link.txt"),
        str(root / "sub"),
        "notes.txt",
    ]
    for path in refused:
        error = await _expect(
            AttachmentError, conversation.prompt("say x", attachments=[path]), path
        )
        assert str(error)
    assert await conversation.list_turns() == []
    events = await _run(ada, conversation.id, "say read", attachments=[str(root / "notes.txt")])
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    user = (await conversation.list_turns())[0]
    assert [p.type for p in user.parts] == ["text", "attachment"]
    assert user.parts[1].model_dump()["path"] == str(root / "notes.txt")


@_check
async def check_upload(host: ConversationHost) -> None:
    """upload() stores a local file or bytes in the member's folder under the attachment
    root and answers its path, which a prompt attaches; a taken name gets `-2`, nothing
    is replaced; directories are stripped; bad names and viewers are refused."""
    ada = await host.client("ada", "editor")
    vic = await host.client("vic", "viewer")
    local = host.attachment_root.parent / f"local-{uuid.uuid4().hex[:6]}"
    local.mkdir()
    (local / "notes.txt").write_text("some notes")
    folder = host.attachment_root / "uploads" / ada.member.id
    stored = await ada.upload(local / "notes.txt")
    assert (stored.name, stored.size, stored.path) == (
        "notes.txt",
        10,
        str(folder / "notes.txt"),
    )
    again = await ada.upload(b"other", filename="notes.txt")
    assert (again.name, again.size) == ("notes-2.txt", 5)
    assert (folder / "notes.txt").read_text() == "some notes"
    assert (folder / "notes-2.txt").read_bytes() == b"other"
    stripped = await ada.upload(b"", filename="dir/sub/plain.md")
    assert (stripped.name, stripped.size) == ("plain.md", 0)
    for bad in ("../escape.txt", "a\0b", "bad\nname", ".hidden", "", "dir/", "x" * 300):
        error = await _expect(UploadError, ada.upload(b"x", filename=bad), repr(bad))
        assert str(error)
    await _expect(UploadError, ada.upload(local / "missing.txt"), "a missing local file")
    await _expect(AccessDeniedError, vic.upload(b"x", filename="v.txt"), "a viewer uploading")
    assert sorted(p.name for p in folder.iterdir()) == ["notes-2.txt", "notes.txt", "plain.md"]
    assert not (folder.parent / "vic").exists()
    conversation = await ada.create_conversation()
    events = await _run(ada, conversation.id, "say read", attachments=[stored.path])
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    user = (await conversation.list_turns())[0]
    assert user.parts[1].model_dump()["path"] == stored.path


@_check
async def check_agents(host: ConversationHost) -> None:
    """rool always exists and cannot be deleted; owners manage other agents; replacing
    an agent changes no turn and applies to runs accepted afterwards."""
    owner = await host.client("olga", "owner")
    editor = await host.client("ed", "editor")
    assert (await owner.list_agents())[0].name == "rool"
    await _expect(Exception, owner.delete_agent("rool"), "deleting rool")
    definition = AgentDefinition(name="marker", instructions="MARK-ONE")
    await _expect(AccessDeniedError, editor.create_agent(definition), "an editor's agent")
    await owner.create_agent(definition)
    await _expect(Exception, owner.create_agent(definition), "the same name twice")
    conversation = await owner.create_conversation(agent="marker")
    assert _text(await _run(owner, conversation.id, "system")) == "MARK-ONE"
    await owner.replace_agent(AgentDefinition(name="marker", instructions="MARK-TWO"))
    assert (await conversation.list_turns())[1].text == "MARK-ONE"
    assert _text(await _run(owner, conversation.id, "system")) == "MARK-TWO"
    await _expect(AccessDeniedError, editor.delete_agent("marker"), "an editor deleting")
    await owner.delete_agent("marker")
    assert "marker" not in [a.name for a in await owner.list_agents()]
    assert len(await conversation.list_turns()) == 4
    await _expect(AgentDeletedError, conversation.prompt("say x"), "a deleted agent")
    await owner.create_agent(AgentDefinition(name="marker", instructions="MARK-NEW"))
    await _expect(AgentDeletedError, conversation.prompt("say x"), "a newcomer of the name")
    await _expect(
        MachineAgentNotFoundError, owner.create_conversation(agent="nobody"), "no such agent"
    )


@_check
async def check_watch_across_runs_and_clients(host: ConversationHost) -> None:
    """watch() delivers a view at once and after every change: another client's runs
    (live output, then saved turns), across two runs, and a rename; stop() ends it."""
    ada = await host.client("ada", "editor")
    bob = await host.client("bob", "editor")
    conversation = await ada.create_conversation(visibility="shared")
    views: list[ConversationView] = []
    stop = await bob.watch(conversation.id, views.append)
    await _until(lambda: any(not v.loading for v in views), "the first view")
    assert views[0].loading
    for number in (1, 2):
        accepted = await conversation.prompt(f"slow {number + 2}")
        await _follow(ada, conversation.id, accepted.run_id)
        await _until(functools.partial(_settled, views, 2 * number), f"run {number} watched")
        assert any(v.is_running and v.active_run_id == accepted.run_id for v in views)
        assert any(v.is_running and v.output for v in views)
    final = views[-1]
    assert [t.status for t in final.turns] == ["completed"] * 4
    assert final.turns[-1].text == "w0 w1 w2 w3 "
    stop()
    count = len(views)
    await _run(ada, conversation.id, "say after")
    await anyio.sleep(0.2)
    assert len(views) == count, "a stopped watch delivered a view"


def _settled(views: list[ConversationView], turns: int) -> bool:
    return bool(views) and not views[-1].is_running and len(views[-1].turns) == turns


@_check
async def check_watch_reports_deletion(host: ConversationHost) -> None:
    """A watched conversation that is deleted gives a view with an error."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    views: list[ConversationView] = []
    await conversation.watch(views.append)
    await _until(lambda: any(not v.loading for v in views), "the first view")
    await conversation.delete()
    await _until(lambda: views[-1].error is not None, "the error view")


@_check
async def check_delete(host: ConversationHost) -> None:
    """delete() takes the conversation, its runs and its turns; every path then says
    ConversationNotFoundError."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("hang")
    await conversation.delete()
    for call in _paths(ada, conversation.id, accepted.run_id):
        await _expect(ConversationNotFoundError, call(), "a deleted conversation")
    assert await ada.list_conversations() == []


def _paths(
    client: ConversationClient, conversation_id: str, run_id: str
) -> list[Callable[[], Awaitable[Any]]]:
    async def follow() -> None:
        async for _ in client.follow(conversation_id, run_id):
            pass

    async def watch() -> None:
        stop = await client.watch(conversation_id, lambda view: None)
        stop()

    return [
        lambda: client.get_conversation(conversation_id),
        lambda: client.list_turns(conversation_id),
        lambda: client.prompt(conversation_id, "say x"),
        follow,
        watch,
        lambda: client.cancel(conversation_id),
        lambda: client.rename_conversation(conversation_id, "x"),
        lambda: client.set_visibility(conversation_id, "shared"),
        lambda: client.delete_conversation(conversation_id),
        lambda: client.fork(conversation_id),
    ]


@_check
async def check_foreign_private_is_not_found(host: ConversationHost) -> None:
    """Another member's private conversation answers exactly like a missing id, on
    every path, for every role; the list never shows it."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    accepted = await conversation.prompt("say mine")
    await _follow(ada, conversation.id, accepted.run_id)
    missing = str(uuid.uuid4())
    others: list[tuple[str, Role]] = [("olga", "owner"), ("ed", "editor"), ("vic", "viewer")]
    for name, role in others:
        other = await host.client(name, role)
        assert await other.list_conversations() == []
        for foreign, absent in zip(
            _paths(other, conversation.id, accepted.run_id),
            _paths(other, missing, accepted.run_id),
            strict=True,
        ):
            one = await _expect(ConversationNotFoundError, foreign(), f"{role}, foreign")
            two = await _expect(ConversationNotFoundError, absent(), f"{role}, missing")
            assert isinstance(one, LookupError)
            assert str(one).replace(conversation.id, "ID") == str(two).replace(missing, "ID")
    assert len(await conversation.list_turns()) == 2


# --- forks ------------------------------------------------------------------------------------


def _shown(turns: Any) -> list[tuple[str, str, str]]:
    """What turns show, without their ids."""
    return [(turn.role, turn.status, turn.text) for turn in turns]


@_check
async def check_fork(host: ConversationHost) -> None:
    """fork() makes a private conversation of the same agent and instructions holding the
    first `turn` prompts with their answers (all by default): its model sees exactly
    those next, its copied runs are followed like the original's, and the original does
    not change and still takes prompts."""
    ada = await host.client("ada", "editor")
    original = await ada.create_conversation(name="Plans", instructions="MARK-PLANS")
    await original.set_visibility("shared")
    for text in ("say one", "say two", "say three"):
        await _run(ada, original.id, text)
    before = await original.get()
    fork = await ada.fork(original.id, turn=2)
    assert fork.id != original.id and fork.name == "Plans (fork)"
    assert (fork.visibility, fork.creator_id, fork.agent_id) == (
        "private",
        ada.member.id,
        before.agent_id,
    )
    assert fork.instructions == "MARK-PLANS" and not fork.is_running
    assert _shown(fork.turns) == _shown(before.turns[:4])
    assert {turn.run_id for turn in fork.turns}.isdisjoint(t.run_id for t in before.turns)
    assert [t.created_at for t in fork.turns] == [t.created_at for t in before.turns[:4]]
    copied = fork.turns[3].run_id
    assert copied is not None
    events = await _follow(ada, fork.id, copied)
    assert _text(events) == "two" and isinstance(events[-1], FinalEvent)
    assert events[-1].status == "completed"
    assert _shown(await ada.list_turns(fork.id)) == _shown(fork.turns)
    answer = _text(await _run(ada, fork.id, "history"))
    assert answer == "u:say one | a:one | u:say two | a:two | u:history"
    assert _text(await _run(ada, fork.id, "system")) == "MARK-PLANS"
    assert _shown((await original.get()).turns) == _shown(before.turns)
    answer = _text(await _run(ada, original.id, "history"))
    assert answer == "u:say one | a:one | u:say two | a:two | u:say three | a:three | u:history"
    everything = await ada.conversation(original.id).fork(name="All of it")
    assert everything.name == "All of it" and len(everything.turns) == 8
    empty = await ada.fork(original.id, turn=0)
    assert empty.turns == () and empty.instructions == "MARK-PLANS"
    assert _text(await _run(ada, empty.id, "history")) == "u:history"
    for bad in (9, -1):
        error = await _expect(ConversationError, ada.fork(original.id, turn=bad), f"turn {bad}")
        assert "turn" in str(error)
    listed = [row.id for row in await ada.list_conversations()]
    assert fork.id in listed and everything.id in listed and empty.id in listed


@_check
async def check_fork_access(host: ConversationHost) -> None:
    """A fork is private to whoever forks; members who see a conversation and create
    conversations fork it; a viewer may not; a hidden conversation is missing."""
    ada = await host.client("ada", "editor")
    bob = await host.client("bob", "editor")
    vic = await host.client("vic", "viewer")
    conversation = await ada.create_conversation(visibility="shared")
    await _run(ada, conversation.id, "say mine")
    fork = await bob.fork(conversation.id)
    assert fork.creator == "bob" and fork.visibility == "private"
    assert _shown(fork.turns) == [("user", "completed", "say mine"), ("agent", "completed", "mine")]
    await _expect(ConversationNotFoundError, ada.get_conversation(fork.id), "bob's fork")
    await _expect(ConversationNotFoundError, ada.fork(fork.id), "forking bob's fork")
    await _expect(AccessDeniedError, vic.fork(conversation.id), "a viewer's fork")
    private = await ada.create_conversation()
    await _expect(ConversationNotFoundError, bob.fork(private.id), "a private one")
    await _expect(ConversationNotFoundError, vic.fork(private.id), "a viewer, private")
    await _expect(ConversationNotFoundError, bob.fork(str(uuid.uuid4())), "a missing one")


@_check
async def check_fork_copies_only_ended_and_kept_turns(host: ConversationHost) -> None:
    """A run still going is not copied; a cancelled turn is copied with what it had
    streamed (and its model sees it as the original's would); replaced turns are not."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    await _run(ada, conversation.id, "say one")
    await _run(ada, conversation.id, "say two")
    turns = await conversation.list_turns()
    accepted = await conversation.prompt("say deux", replace_turn=turns[2].id)
    await _follow(ada, conversation.id, accepted.run_id)
    hang = await conversation.prompt("hang")
    seen: list[FollowEvent] = []

    async def follow() -> None:
        async for event in ada.follow(conversation.id, hang.run_id):
            seen.append(event)

    async with anyio.create_task_group() as group:
        group.start_soon(follow)
        await _until(lambda: bool(seen), "the running run's first part")
        running = await ada.fork(conversation.id)
        assert not running.is_running
        assert [t.text for t in running.turns] == ["say one", "one", "say deux", "deux"]
        await _expect(ConversationError, ada.fork(conversation.id, turn=3), "the running turn")
        assert (await conversation.get()).is_running
        assert await conversation.cancel()
    cancelled = await ada.fork(conversation.id)
    assert _shown(cancelled.turns)[4:] == [
        ("user", "completed", "hang"),
        ("agent", "cancelled", "partial answer"),
    ]
    expected = "u:say one | a:one | u:say deux | a:deux | u:hang | a:partial answer | u:history"
    assert _text(await _run(ada, cancelled.id, "history")) == expected
    assert _text(await _run(ada, conversation.id, "history")) == expected
    assert _text(await _run(ada, running.id, "history")) == expected.replace(
        "u:hang | a:partial answer | ", ""
    )


@_check
async def check_fork_of_a_deleted_agent_is_refused(host: ConversationHost) -> None:
    """A conversation whose agent was deleted stays readable but is not forked."""
    owner = await host.client("olga", "owner")
    await owner.create_agent(AgentDefinition(name="gone", instructions="soon gone"))
    conversation = await owner.create_conversation(agent="gone")
    await _run(owner, conversation.id, "say hi")
    await owner.delete_agent("gone")
    await _expect(AgentDeletedError, owner.fork(conversation.id), "a deleted agent's fork")
    assert [row.id for row in await owner.list_conversations()] == [conversation.id]


# --- busy conversations: enqueue, interrupt -------------------------------------------------


async def _turns_count(client: ConversationClient, conversation_id: str, count: int) -> bool:
    details = await client.get_conversation(conversation_id)
    return len(details.turns) == count and not details.is_running


@_check
async def check_enqueue_runs_in_order(host: ConversationHost) -> None:
    """`if_busy="enqueue"` on a busy conversation queues the prompt (`queued`, the run id it
    will have); the queue is listed with the conversation and in the watch's views; once
    the running run ends (here: cancelled), the queued prompts run one after the other, in
    order, each seeing the turns before it. `reject` (the default) stays busy; `enqueue`
    on an idle conversation starts at once."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    views: list[ConversationView] = []
    stop = await conversation.watch(views.append)
    first = await conversation.prompt("hang")
    await _expect(ConversationBusyError, conversation.prompt("say no"), "reject")
    texts = ["say one", "say two", "count"]
    queued = [await conversation.prompt(text, if_busy="enqueue") for text in texts]
    assert [q.status for q in queued] == ["queued"] * 3 and first.status == "running"
    assert len({q.run_id for q in queued}) == 3 and all(
        q.turn_id == f"u-{q.run_id}" for q in queued
    )
    details = await conversation.get()
    assert [(q.id, q.prompt, q.member, q.status) for q in details.queued] == [
        (q.run_id, text, "ada", "queued") for q, text in zip(queued, texts, strict=True)
    ]
    await _until(lambda: bool(views) and len(views[-1].queued) == 3, "the queue in a view")
    assert await conversation.cancel()
    await _until(functools.partial(_turns_count, ada, conversation.id, 8), "the queue drained")
    details = await conversation.get()
    assert details.queued == ()
    assert [t.run_id for t in details.turns[::2]] == [first.run_id] + [q.run_id for q in queued]
    assert [t.text for t in details.turns[3::2]] == ["one", "two", "users=4"]
    assert [t.status for t in details.turns[1::2]] == ["cancelled"] + ["completed"] * 3
    events = await _follow(ada, conversation.id, queued[0].run_id)
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    await _until(lambda: views[-1].queued == () and len(views[-1].turns) == 8, "the last view")
    stop()
    idle = await conversation.prompt("say now", if_busy="enqueue")
    assert idle.status == "running"
    assert _text(await _follow(ada, conversation.id, idle.run_id)) == "now"


@_check
async def check_cancel_queued(host: ConversationHost) -> None:
    """`cancel_queued` removes a queued prompt (it never runs); an unknown id is
    `QueuedPromptNotFoundError`, one that started `QueuedPromptStartedError`; a viewer
    may not; a member who cannot see the conversation gets ConversationNotFoundError."""
    ada = await host.client("ada", "editor")
    vic = await host.client("vic", "viewer")
    ed = await host.client("ed", "editor")
    conversation = await ada.create_conversation(visibility="shared")
    private = await ada.create_conversation()
    await conversation.prompt("hang")
    dropped = await conversation.prompt("say dropped", if_busy="enqueue")
    kept = await conversation.prompt("say kept", if_busy="enqueue")
    await _expect(AccessDeniedError, vic.cancel_queued(conversation.id, kept.run_id), "a viewer")
    await _expect(
        ConversationNotFoundError, ed.cancel_queued(private.id, kept.run_id), "not visible"
    )
    await ed.cancel_queued(conversation.id, dropped.run_id)  # any member who may prompt
    assert [q.id for q in (await conversation.get()).queued] == [kept.run_id]
    for unknown in (dropped.run_id, "nope", ""):
        await _expect(
            QueuedPromptNotFoundError, conversation.cancel_queued(unknown), f"unknown {unknown!r}"
        )
    assert await conversation.cancel()
    await _until(functools.partial(_turns_count, ada, conversation.id, 4), "the kept one ran")
    turns = await conversation.list_turns()
    assert [t.text for t in turns[2:]] == ["say kept", "kept"]
    await _expect(
        QueuedPromptStartedError, conversation.cancel_queued(kept.run_id), "a started one"
    )


async def _first_part(client: ConversationClient, conversation_id: str, run_id: str) -> None:
    """Once the run has streamed its first part."""
    with anyio.fail_after(_TIMEOUT):
        async with anyio.create_task_group() as group:

            async def follow() -> None:
                async for event in client.follow(conversation_id, run_id):
                    if isinstance(event, OutputEvent):
                        group.cancel_scope.cancel()

            group.start_soon(follow)


@_check
async def check_interrupt(host: ConversationHost) -> None:
    """`if_busy="interrupt"` ends the running run `cancelled` (what it streamed kept) and
    starts the new one at once, before what was queued (which runs after it, not
    cancelled); on an idle conversation it just starts."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    first = await conversation.prompt("hang")
    await _first_part(ada, conversation.id, first.run_id)
    waiting = await conversation.prompt("say queued", if_busy="enqueue")
    second = await conversation.prompt("say instead", if_busy="interrupt")
    assert second.status == "running" and second.run_id != first.run_id
    ended = await _follow(ada, conversation.id, first.run_id)
    assert isinstance(ended[-1], FinalEvent) and ended[-1].status == "cancelled"
    assert _text(await _follow(ada, conversation.id, second.run_id)) == "instead"
    await _until(functools.partial(_turns_count, ada, conversation.id, 6), "the queued one ran")
    turns = await conversation.list_turns()
    assert [t.run_id for t in turns[::2]] == [first.run_id, second.run_id, waiting.run_id]
    assert [t.status for t in turns] == ["completed", "cancelled"] + ["completed"] * 4
    assert [t.text for t in turns[1::2]] == ["partial answer", "instead", "queued"]
    third = await conversation.prompt("say idle", if_busy="interrupt")
    assert _text(await _follow(ada, conversation.id, third.run_id)) == "idle"
    later: Any = "later"
    await _expect(ConversationError, conversation.prompt("say x", if_busy=later), "a bad if_busy")


# --- the access matrix ----------------------------------------------------------------------

Outcome = Literal["ok", "not_found", "denied"]

Actor = Literal["creator-owner", "creator-editor", "owner", "editor", "viewer"]
"""Who acts: the conversation's creator (an owner or an editor), or another member."""

ACTORS: tuple[Actor, ...] = ("creator-owner", "creator-editor", "owner", "editor", "viewer")
"""Every actor of the access matrix."""

VISIBILITIES: tuple[Visibility, ...] = ("private", "shared")


async def _op_get(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.get_conversation(cid)


async def _op_list_turns(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.list_turns(cid)


async def _op_list(c: ConversationClient, cid: str, run_id: str) -> None:
    if cid not in [row.id for row in await c.list_conversations()]:
        raise ConversationNotFoundError(cid)


async def _op_prompt(c: ConversationClient, cid: str, run_id: str) -> None:
    accepted = await c.prompt(cid, "say again")
    await _follow(c, cid, accepted.run_id)


async def _op_follow(c: ConversationClient, cid: str, run_id: str) -> None:
    await _follow(c, cid, run_id)


async def _op_watch(c: ConversationClient, cid: str, run_id: str) -> None:
    stop = await c.watch(cid, lambda view: None)
    stop()


async def _op_cancel(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.cancel(cid)


async def _op_rename(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.rename_conversation(cid, "renamed")


async def _op_visibility(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.set_visibility(cid, "shared")


async def _op_delete(c: ConversationClient, cid: str, run_id: str) -> None:
    await c.delete_conversation(cid)


async def _op_fork(c: ConversationClient, cid: str, run_id: str) -> None:
    fork = await c.fork(cid)
    assert fork.creator_id == c.member.id and fork.visibility == "private"


ACCESS_OPERATIONS: Mapping[str, Callable[[ConversationClient, str, str], Awaitable[None]]] = {
    "get": _op_get,
    "list_turns": _op_list_turns,
    "list": _op_list,
    "prompt": _op_prompt,
    "follow": _op_follow,
    "watch": _op_watch,
    "cancel": _op_cancel,
    "rename": _op_rename,
    "visibility": _op_visibility,
    "delete": _op_delete,
    "fork": _op_fork,
}
"""Every operation on a conversation, by name: `op(client, conversation_id, run_id)`
(`list` raises `ConversationNotFoundError` when the conversation is not listed)."""

_READS = frozenset({"get", "list_turns", "list", "follow", "watch"})


def expected_access(actor: Actor, visibility: Visibility, operation: str) -> Outcome:
    """What an operation must give: hidden conversations do not exist; viewers only read."""
    creator = actor.startswith("creator-")
    if visibility == "private" and not creator:
        return "not_found"
    if operation in _READS or actor != "viewer":
        return "ok"
    return "denied"


async def check_access_case(
    host: ConversationHost, actor: Actor, visibility: Visibility, operation: str
) -> None:
    """One cell of the matrix: a fresh conversation with one completed run, the operation
    done by `actor`, and the outcome `expected_access` gives."""
    creator_role: Role = "owner" if actor == "creator-owner" else "editor"
    suffix = uuid.uuid4().hex[:6]
    creator = await host.client(f"creator-{suffix}", creator_role)
    conversation = await creator.create_conversation(visibility=visibility)
    accepted = await conversation.prompt("say first")
    await _follow(creator, conversation.id, accepted.run_id)
    if actor == "creator-owner" or actor == "creator-editor":
        client = creator
    else:
        client = await host.client(f"{actor}-{suffix}", actor)
    expected = expected_access(actor, visibility, operation)
    call = ACCESS_OPERATIONS[operation](client, conversation.id, accepted.run_id)
    if expected == "ok":
        await call
    elif expected == "not_found":
        error = await _expect(ConversationNotFoundError, call, f"{actor} {operation}")
        assert str(error) == f"no conversation {conversation.id!r}" or operation == "list"
    else:
        await _expect(AccessDeniedError, call, f"{actor} {operation}")
    if operation != "delete" or expected != "ok":
        assert len(await creator.list_turns(conversation.id)) in (2, 4)


@_check
async def check_access_matrix(host: ConversationHost) -> None:
    """Every role x visibility x operation gives what `expected_access` says."""
    for actor in ACTORS:
        for visibility in VISIBILITIES:
            for operation in ACCESS_OPERATIONS:
                try:
                    await check_access_case(host, actor, visibility, operation)
                except AssertionError as exc:
                    exc.add_note(f"access case: {actor}, {visibility}, {operation}")
                    raise


@_check
async def check_pages(host: ConversationHost) -> None:
    """Every list is a page: `limit` 1..1000 (else `InvalidPageError`) and an opaque
    `next` cursor; what is created while paging never shifts a page's boundary."""
    ada = await host.client("ada", "editor")
    made = [(await ada.create_conversation(name=f"n{i}")).id for i in range(5)]
    seen: list[str] = []
    page = await ada.list_conversations(limit=2)
    assert len(page) == 2 and page.next is not None
    seen.extend(row.id for row in page)
    late = (await ada.create_conversation(name="late")).id
    while page.next is not None:
        page = await ada.list_conversations(limit=2, cursor=page.next)
        seen.extend(row.id for row in page)
    assert seen == made[::-1] and late not in seen
    for limit in (0, 1001):
        await _expect(InvalidPageError, ada.list_conversations(limit=limit), f"limit={limit}")
    await _expect(InvalidPageError, ada.list_conversations(cursor="nope"), "a made-up cursor")
    agents = await ada.list_agents(limit=1)
    assert [a.name for a in agents] == ["rool"] and agents.next is None
    conversation = ada.conversation(made[0])
    await _run(ada, conversation.id, "say one")
    await _run(ada, conversation.id, "say two")
    first = await conversation.list_turns(limit=3)
    assert [t.role for t in first] == ["user", "agent", "user"] and first.next is not None
    rest = await conversation.list_turns(limit=3, cursor=first.next)
    assert [t.role for t in rest] == ["agent"] and rest.next is None


# --- stream on create, wait, runs without a conversation ------------------------------------


def _deltas(events: list[FollowEvent]) -> list[str]:
    return [
        e.part.text
        for e in events
        if isinstance(e, OutputEvent) and isinstance(e.part, TextDeltaPart)
    ]


@_check
async def check_stream_shows_every_delta(host: ConversationHost) -> None:
    """stream() starts a run and reads it from its first event: the run's ids before any
    event, every text delta of a fast model as an event of its own, the offsets of the
    run's follow (which resumes after any of them), and one final event."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    with anyio.fail_after(_TIMEOUT):
        async with await conversation.stream("say abcdefghi") as stream:
            assert stream.conversation_id == conversation.id
            assert stream.accepted.turn_id == f"u-{stream.run_id}"
            events = [event async for event in stream]
    assert _deltas(events) == ["abc", "def", "ghi"]  # the model's three chunks, live
    assert _text(events) == "abcdefghi"
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    assert sum(isinstance(e, FinalEvent) for e in events) == 1
    for after in [-1, *(event.offset for event in events)]:
        check_resumed(events, await _follow(ada, conversation.id, stream.run_id, after), after)
    turns = await conversation.list_turns()
    assert [(t.role, t.text) for t in turns] == [("user", "say abcdefghi"), ("agent", "abcdefghi")]
    await conversation.prompt("hang")  # a busy conversation refuses a stream as a prompt
    await _expect(ConversationBusyError, conversation.stream("say no"), "stream while busy")
    assert await conversation.cancel()
    vic = await host.client("vic", "viewer")
    await _expect(ConversationNotFoundError, vic.stream(conversation.id, "say x"), "private")


@_check
async def check_prompt_waits_for_the_end(host: ConversationHost) -> None:
    """prompt(wait=s) gives the ended run (`RunResult`: status, text, structured output,
    accounting, error) when it ends within `s` seconds, else the accepted run; `wait`
    is above 0 and at most `MAX_WAIT`."""
    ada = await host.client("ada", "editor")
    conversation = await ada.create_conversation()
    result = await conversation.prompt("say all done", wait=_TIMEOUT)
    assert isinstance(result, RunResult), result
    assert (result.conversation_id, result.turn_id) == (conversation.id, f"u-{result.run_id}")
    assert (result.status, result.text, result.error) == ("completed", "all done", None)
    assert result.accounting.model_calls == 1 and result.accounting.total.output_tokens == 1
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    result = await conversation.prompt("json", output_schema=schema, wait=_TIMEOUT)
    assert isinstance(result, RunResult) and result.structured_output == {"answer": "forty-two"}
    result = await conversation.prompt("fail", wait=_TIMEOUT)
    assert isinstance(result, RunResult) and result.status == "error"
    assert result.error is not None and "failed on purpose" in result.error and not result.text
    started = time.monotonic()
    accepted = await conversation.prompt("hang", wait=0.5)  # a slow model: the bound
    assert not isinstance(accepted, RunResult) and time.monotonic() - started >= 0.5
    assert (await conversation.get()).active_run_id == accepted.run_id
    assert await conversation.cancel()
    for bad in (0, -1, MAX_WAIT + 1, float("nan")):
        await _expect(ConversationError, conversation.prompt("say x", wait=bad), f"wait={bad}")
    assert len(await conversation.list_turns()) == 8  # four runs: nothing more


@_check
async def check_run_without_a_conversation(host: ConversationHost) -> None:
    """run(agent, text) makes a private conversation of the member's and its run in one
    call (waitable); stream_run() streams it; a refused prompt leaves no conversation."""
    ada = await host.client("ada", "editor")
    result = await ada.run("rool", "say made", wait=_TIMEOUT)
    assert isinstance(result, RunResult) and result.text == "made"
    details = await ada.get_conversation(result.conversation_id)
    assert (details.agent, details.visibility, details.creator) == ("rool", "private", "ada")
    assert [t.text for t in details.turns] == ["say made", "made"]
    accepted = await ada.run("rool", "say later")
    events = await _follow(ada, accepted.conversation_id, accepted.run_id)
    assert _text(events) == "later"
    with anyio.fail_after(_TIMEOUT):
        async with await ada.stream_run("rool", "say abcdefghi") as stream:
            events = [event async for event in stream]
    assert _deltas(events) == ["abc", "def", "ghi"] and _text(events) == "abcdefghi"
    made = {row.id for row in await ada.list_conversations()}
    assert made == {result.conversation_id, accepted.conversation_id, stream.conversation_id}
    outside = str(host.attachment_root.parent / "outside.txt")
    loud: Any = "loud"
    refused: list[tuple[type[BaseException], Callable[[], Awaitable[Any]]]] = [
        (MachineAgentNotFoundError, lambda: ada.run("nobody", "say x")),
        (AttachmentError, lambda: ada.run("rool", "say x", attachments=[outside])),
        (ConversationError, lambda: ada.run("rool", "   ")),
        (ConversationError, lambda: ada.run("rool", "say x", effort=loud)),
        (AttachmentError, lambda: ada.stream_run("rool", "say x", attachments=[outside])),
    ]
    for exc_type, call in refused:
        await _expect(exc_type, call(), f"refused {exc_type.__name__}")
    assert {row.id for row in await ada.list_conversations()} == made
    vic = await host.client("vic", "viewer")
    await _expect(AccessDeniedError, vic.run("rool", "say x"), "a viewer's run")
    await _expect(AccessDeniedError, vic.stream_run("rool", "say x"), "a viewer's stream")
    assert await vic.list_conversations() == []


async def _request_part(
    client: ConversationClient, conversation_id: str, run_id: str
) -> PermissionRequestPart | QuestionPart:
    """The request the run waits on, read from its follow (a waiting run's follow does
    not end: it is left once the request is read)."""
    with anyio.fail_after(_TIMEOUT):
        events = client.follow(conversation_id, run_id)
        async with contextlib.aclosing(events):  # type: ignore[type-var]
            async for event in events:
                if isinstance(event, OutputEvent) and isinstance(
                    event.part, PermissionRequestPart | QuestionPart
                ):
                    return event.part
    raise AssertionError(f"run {run_id} ended without asking")


async def _gate(host: ConversationHost) -> tuple[ConversationClient, str]:
    """An owner, and a shared conversation whose agent's Bash calls need consent."""
    owner = await host.client("olga", "owner")
    await owner.create_agent(
        AgentDefinition(name="gate", tools=("Bash", "AskUserQuestion"), permission_mode="default")
    )
    conversation = await owner.create_conversation(agent="gate", visibility="shared")
    return owner, conversation.id


@_check
async def check_decide_allow_deny_and_refusals(host: ConversationHost) -> None:
    """A waiting run shows its request (follow, details) and keeps the conversation
    busy; an editor decides it (a viewer may not: 403; a conversation or run it cannot
    see: 404; an unknown request: 422; a decided one: 409); denied, the model is told."""
    olga, conversation_id = await _gate(host)
    bob = await host.client("bob", "editor")
    vic = await host.client("vic", "viewer")
    accepted = await olga.prompt(conversation_id, "bash echo decided")
    request = await _request_part(olga, conversation_id, accepted.run_id)
    assert isinstance(request, PermissionRequestPart)
    assert (request.tool, request.input, request.effect) == (
        "Bash",
        {"command": "echo decided"},
        "execute",
    )
    # Stored as waiting a moment after its request is streamed (one store transaction).
    found: list[ConversationDetails] = []

    async def listed() -> bool:
        found[:] = [await bob.get_conversation(conversation_id)]
        return bool(found[0].pending_requests)

    await _until(listed, "the request in the conversation's details")
    details = found[0]
    assert details.is_running and details.active_run_id == accepted.run_id
    (pending,) = details.pending_requests
    assert (pending.request_id, pending.kind, pending.run_id) == (
        request.request_id,
        "permission",
        accepted.run_id,
    )
    await _expect(ConversationBusyError, bob.prompt(conversation_id, "say x"), "a waiting run")
    run_id, request_id = accepted.run_id, request.request_id
    await _expect(
        AccessDeniedError,
        vic.decide(conversation_id, run_id, request_id, allow=True),
        "a viewer's decision",
    )
    await _expect(
        ConversationNotFoundError,
        bob.decide("no-such-conversation", run_id, request_id, allow=True),
        "a decision in a conversation it cannot see",
    )
    mine = await bob.create_conversation()
    await _expect(
        RunNotFoundError,
        bob.decide(mine.id, run_id, request_id, allow=True),
        "a decision on another conversation's run",
    )
    await _expect(
        RequestNotFoundError,
        bob.decide(conversation_id, run_id, "no-such-request", allow=True),
        "an unknown request",
    )
    await _expect(
        RequestNotFoundError,
        bob.answer(conversation_id, run_id, request_id, {"q1": "yes"}),
        "answering a permission request",
    )
    await bob.decide(conversation_id, run_id, request_id, allow=True)
    await _expect(
        RequestAlreadyDecidedError,
        olga.decide(conversation_id, run_id, request_id, allow=False),
        "a second decision",
    )
    events = await _follow(olga, conversation_id, run_id)
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"
    kinds = [e.part.type for e in events if isinstance(e, OutputEvent)]
    assert kinds.index("permission_request") < kinds.index("permission_decision")
    assert kinds.index("permission_decision") < kinds.index("tool_result")
    result = next(
        e.part for e in events if isinstance(e, OutputEvent) and isinstance(e.part, ToolResultPart)
    )
    assert result.output == "decided\n" and not result.is_error
    assert (await olga.get_conversation(conversation_id)).pending_requests == ()
    # Denied: the model gets the message as the tool's error, and the run completes.
    denied = await olga.prompt(conversation_id, "bash echo never")
    request = await _request_part(olga, conversation_id, denied.run_id)
    await olga.decide(
        conversation_id, denied.run_id, request.request_id, allow=False, message="not now"
    )
    events = await _follow(olga, conversation_id, denied.run_id)
    result = next(
        e.part for e in events if isinstance(e, OutputEvent) and isinstance(e.part, ToolResultPart)
    )
    assert result.is_error and result.output == "permission denied: not now"
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "completed"


@_check
async def check_answer_remember_and_cancel_waiting(host: ConversationHost) -> None:
    """A question is answered (the answers are the tool's result); `remember` allows the
    same call later without asking; a waiting run is cancelled like a running one."""
    olga, conversation_id = await _gate(host)
    asked = await olga.prompt(conversation_id, "ask Ready?")
    question = await _request_part(olga, conversation_id, asked.run_id)
    assert isinstance(question, QuestionPart)
    assert question.questions[0]["question"] == "Ready?"
    await _expect(
        RequestNotFoundError,
        olga.decide(conversation_id, asked.run_id, question.request_id, allow=True),
        "deciding a question",
    )
    await olga.answer(conversation_id, asked.run_id, question.request_id, {"q1": "yes"})
    events = await _follow(olga, conversation_id, asked.run_id)
    assert _text(events) == 'answered {"q1": "yes"}'
    remembered = await olga.prompt(conversation_id, "bash echo kept")
    request = await _request_part(olga, conversation_id, remembered.run_id)
    await olga.decide(
        conversation_id, remembered.run_id, request.request_id, allow=True, remember=True
    )
    events = await _follow(olga, conversation_id, remembered.run_id)
    decision = next(
        e.part
        for e in events
        if isinstance(e, OutputEvent) and isinstance(e.part, PermissionDecisionPart)
    )
    assert decision.remember and decision.rule == "Bash(echo kept)"
    events = await _run(olga, conversation_id, "bash echo kept")  # no one is asked again
    assert not any(
        isinstance(e, OutputEvent) and isinstance(e.part, PermissionRequestPart) for e in events
    )
    assert _text(events) == "ran"
    waiting = await olga.prompt(conversation_id, "bash echo cancelled")
    await _request_part(olga, conversation_id, waiting.run_id)
    assert await olga.cancel(conversation_id)
    events = await _follow(olga, conversation_id, waiting.run_id)
    assert isinstance(events[-1], FinalEvent) and events[-1].status == "cancelled"
    details = await olga.get_conversation(conversation_id)
    assert not details.is_running and details.pending_requests == ()
    assert _text(await _run(olga, conversation_id, "say again")) == "again"


CONVERSATION_CHECKS: Mapping[str, ConversationCheck] = dict(_checks)
"""Every conformance check by name, in order."""


async def conversation_conformance(
    make_host: Callable[[], contextlib.AbstractAsyncContextManager[ConversationHost]],
) -> None:
    """Run every check, each on a fresh host from `make_host()`.

    Raises:
        ExceptionGroup: One exception per failed check, each with a note naming it.
    """
    await run_checks("conversation", CONVERSATION_CHECKS, make_host, limit=_TIMEOUT * 4)


class ConversationConformance:
    """Mix-in for pytest: the conformance suite as one test per check.

    Subclass it in a test module (name the subclass `Test...`) and define a
    `conversation_host` fixture giving a fresh host. Each test takes anyio's
    `anyio_backend` fixture, so it runs under asyncio and trio.
    """


add_tests(ConversationConformance, CONVERSATION_CHECKS, "conversation_host", limit=_TIMEOUT * 4)
