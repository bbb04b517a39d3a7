"""LLM room agents' bounded context: a window of the room's recent events (cut by count
and by estimated tokens) instead of a transcript that grows with the room, a running
summary of what left the window, and every run recorded on its request."""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from agentkit import AgentSpec, Runtime
from agentkit.messages import UserMessage
from agentkit.providers import ModelRequest
from agentkit.rooms import EventInput, RoomAgentRequest, RoomEvent, Rooms, SpecRoomAgent
from agentkit.rooms._spec_agent import SUMMARY_METADATA_KEY
from agentkit.testing import FunctionProvider

pytestmark = pytest.mark.anyio

SPEC = AgentSpec(id="helper", system_prompt="Answer in the room.")
SESSION = "room-agent:{room}:helper"
MARK = "The event to answer:\n"


class Recording(SpecRoomAgent):
    """A `SpecRoomAgent` that keeps the requests it was given (to read `request.runs`)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(SPEC, **options)
        self.requests: list[RoomAgentRequest] = []

    async def handle(self, request: RoomAgentRequest) -> list[EventInput]:
        self.requests.append(request)
        return await super().handle(request)

    async def delegate(self, request: RoomAgentRequest) -> Any:
        self.requests.append(request)
        return await super().delegate(request)


class Model:
    """Answers `answer <n>` and summarises as `summary <n>`, recording every request."""

    def __init__(self) -> None:
        self.answers = 0
        self.summaries = 0
        self.provider = FunctionProvider(self.respond, record=True)

    def respond(self, request: ModelRequest) -> Any:
        if "running summary" in prompt_of(request):
            self.summaries += 1
            return f"summary {self.summaries}"
        self.answers += 1
        if any(tool.name == "submit_output" for tool in request.tools):
            answer = {"answer": f"answer {self.answers}"}
            return {"tool_calls": [{"name": "submit_output", "input": answer}]}
        return f"answer {self.answers}"

    @property
    def requests(self) -> list[ModelRequest]:
        return self.provider.requests

    def summarising(self) -> list[ModelRequest]:
        return [r for r in self.requests if "running summary" in prompt_of(r)]

    def answering(self) -> list[ModelRequest]:
        return [r for r in self.requests if "running summary" not in prompt_of(r)]


def prompt_of(request: ModelRequest) -> str:
    """The one user message of a request."""
    (message,) = request.messages
    assert isinstance(message, UserMessage)
    return message.content


def positions(text: str) -> list[int]:
    """The positions of the event lines (`[12] ...`) in a piece of prompt."""
    return [int(p) for p in re.findall(r"^\[(\d+)\] ", text, flags=re.MULTILINE)]


def context_of(prompt: str) -> str:
    """The part of a prompt before the event to answer."""
    context, marked, _ = prompt.partition(MARK)
    assert marked, prompt
    return context


@asynccontextmanager
async def host(tmp_path: Path, model: Model) -> AsyncIterator[tuple[Runtime, Rooms]]:
    async with (
        Runtime(provider=model.provider, store=str(tmp_path / "rooms.db")) as runtime,
        Rooms(runtime=runtime, poll_interval=0.05, shutdown_timeout=1) as rooms,
    ):
        yield runtime, rooms


def chat(text: str) -> EventInput:
    return EventInput(type="chat.message", payload={"text": text})


def follow(rooms: Rooms, room_id: str, after: int) -> aclosing[AsyncGenerator[RoomEvent, None]]:
    """Ada's subscription after `after`, closed when left."""
    events = rooms.client("ada").subscribe(room_id, after=after)
    return aclosing(cast("AsyncGenerator[RoomEvent, None]", events))


async def say(rooms: Rooms, room_id: str, text: str) -> RoomEvent:
    """Ada says `text`; the helper's answer to it."""
    ada = rooms.client("ada")
    (position,) = await ada.publish(room_id, chat(text))
    with anyio.fail_after(10):
        async with follow(rooms, room_id, position) as events:
            async for event in events:
                if event.author == "agent:helper":
                    assert event.payload["reply_to"] == position
                    return event
    raise AssertionError("no answer")


def line(event: RoomEvent) -> str:
    return f"[{event.position}] {event.author} ({event.type}): {event.payload['text']}"


async def test_forty_events_make_forty_requests_of_one_message(tmp_path: Path) -> None:
    model = Model()
    async with host(tmp_path, model) as (runtime, rooms):
        room = await rooms.client("ada").create_room("lab")
        helper = Recording()  # window=20, overflow="drop"
        await rooms.register_agent(room.id, helper)
        for n in range(1, 41):
            answer = await say(rooms, room.id, f"message {n}")
            assert answer.payload["text"] == f"answer {n}"
        log = await rooms.client("ada").read(room.id, limit=1000)
        assert len(log) == 80  # 40 messages (odd positions), 40 answers (even)
        # Every request is one user message, on the 40th event as on the first (the
        # system prompt travels apart): no transcript grows with the room.
        assert len(model.requests) == 40
        assert all(len(r.messages) == 1 for r in model.requests)
        assert all(r.system == "Answer in the room." for r in model.requests)
        last = prompt_of(model.requests[-1])
        # Exactly the last 20 events before the 40th message (its answers included,
        # since the agent reads chat.message), oldest first, then the event, marked.
        window = log[58:78]
        expected = "\n".join(line(e) for e in window)
        assert f"oldest first:\n{expected}\n\n{MARK}{line(log[78])}" in last
        assert positions(context_of(last)) == list(range(59, 79))
        # Fewer events than the window: all of them; none for the first message.
        assert prompt_of(model.requests[0]) == "member:ada (chat.message): message 1"
        assert positions(context_of(prompt_of(model.requests[5]))) == list(range(1, 11))
        # Each event's run was recorded on its request, and stays readable: stored
        # under its id, in the agent's one session, with the prompt the model was given.
        assert [len(r.runs) for r in helper.requests] == [1] * 40
        session = SESSION.format(room=room.id)
        stored = await runtime.store.list_runs(session)
        assert {r.id for r in stored} == {r.runs[0] for r in helper.requests}
        events = await runtime.store.read_events(helper.requests[-1].runs[0])
        assert events[0].event.type == "turn_start"
        assert getattr(events[0].event, "user_prompt", None) == last
        assert len(await runtime.store.load_transcript(session)) == 2  # the last run's only


async def test_window_tokens_cut_the_oldest_events_first(tmp_path: Path) -> None:
    model = Model()
    async with host(tmp_path, model) as (_, rooms):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        # Nine lines of 51 characters (52 with their newline) before the agent comes.
        for n in range(1, 10):
            await ada.publish(room.id, chat(f"{n}" * 20))
        line_of_nine = "[9] member:ada (chat.message): " + "9" * 20
        assert len(line_of_nine) == 51
        # 39 tokens estimated at 4 characters each: 156 characters, 3 lines exactly.
        await rooms.register_agent(room.id, Recording(window=8, window_tokens=39))
        await say(rooms, room.id, "count")
        await rooms.remove_agent(room.id, "helper")
        # The newest line, the answer at 11, is 42 characters (43 with its newline): it
        # fits in 13 tokens (52 characters), not in 10 (40).
        await rooms.register_agent(room.id, Recording(id="one", window_tokens=13))
        await rooms.register_agent(room.id, Recording(id="none", window_tokens=10))
        await ada.publish(room.id, chat("x"))
        with anyio.fail_after(10):
            while len(model.requests) < 3:  # noqa: ASYNC110 - a provider's list
                await anyio.sleep(0.01)
    cut = prompt_of(model.requests[0])
    assert positions(context_of(cut)) == [7, 8, 9]  # 6 and older cut, not the newest
    assert "[6]" not in cut and line_of_nine in cut
    # One agent got the answer to "count" (position 11) alone; the other nothing, and
    # its prompt is the event's line, as when the room is empty.
    one, none = sorted((prompt_of(r) for r in model.requests[1:]), key=len, reverse=True)
    assert positions(context_of(one)) == [11]
    assert none == "member:ada (chat.message): x"


async def test_the_window_counts_only_what_the_agent_may_read(tmp_path: Path) -> None:
    model = Model()
    async with host(tmp_path, model) as (_, rooms):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        # 20 chat messages, then 10 notes: the agent reads chat.message only.
        for n in range(1, 31):
            kind = "chat.message" if n <= 20 else "notes.added"
            await ada.publish(room.id, EventInput(type=kind, payload={"text": f"event {n}"}))
        await rooms.register_agent(room.id, Recording(window=4))
        await say(rooms, room.id, "now")
    context = context_of(prompt_of(model.requests[0]))
    assert positions(context) == [17, 18, 19, 20]
    assert "notes.added" not in context


async def test_overflow_summarize_folds_what_left_the_window_into_a_summary(
    tmp_path: Path,
) -> None:
    model = Model()
    async with host(tmp_path, model) as (runtime, rooms):
        room = await rooms.client("ada").create_room("lab")
        helper = Recording(window=3, overflow="summarize")
        await rooms.register_agent(room.id, helper)
        for n in range(1, 9):
            await say(rooms, room.id, f"message {n}")
        session = await runtime.store.get_session(SESSION.format(room=room.id))
    assert session is not None
    # The first two messages leave nothing behind the window; from the third on, each
    # summarisation run gets the previous summary and only the events that left since:
    # position 1, then the message and answer that followed it, two by two.
    summaries = [prompt_of(r) for r in model.summarising()]
    assert [positions(p) for p in summaries] == [[1], [2, 3], [4, 5], [6, 7], [8, 9], [10, 11]]
    assert "There is no summary yet." in summaries[0]
    for n, prompt in enumerate(summaries[1:], start=1):
        assert f"(up to position {2 * n - 1}):\nsummary {n}\n" in prompt
    # Each answer after a summary has it before the window of the last 3 events.
    answers = [prompt_of(r) for r in model.answering()]
    assert len(answers) == 8 and all(len(r.messages) == 1 for r in model.requests)
    for n, prompt in enumerate(answers[2:], start=1):
        event = 2 * n + 3  # the message answered by the 3rd, 4th, ... answer
        assert prompt.startswith(f"Summary of the room before position {event - 3}:\n")
        assert f"\nsummary {n}\n\n" in prompt
        assert positions(context_of(prompt)) == [event - 3, event - 2, event - 1]
    assert positions(context_of(answers[1])) == [1, 2] and "Summary" not in answers[1]
    # The summary is kept with the session, with the last position it covers.
    assert session.metadata[SUMMARY_METADATA_KEY] == {"text": "summary 6", "upTo": 11}
    # Both runs of an event are recorded, the answer's last (stamped on what it publishes).
    assert [len(r.runs) for r in helper.requests] == [1, 1] + [2] * 6


async def test_a_summary_survives_a_restart_and_is_not_redone(tmp_path: Path) -> None:
    model = Model()
    async with host(tmp_path, model) as (_, rooms):
        room = await rooms.client("ada").create_room("lab")
        await rooms.register_agent(room.id, Recording(window=2, overflow="summarize"))
        for n in range(1, 4):
            await say(rooms, room.id, f"message {n}")
    assert [positions(prompt_of(r)) for r in model.summarising()] == [[1, 2]]
    async with host(tmp_path, model) as (_, rooms):
        await rooms.register_agent(room.id, Recording(window=2, overflow="summarize"))
        await say(rooms, room.id, "message 4")
    last = model.summarising()[-1]
    assert positions(prompt_of(last)) == [3, 4]  # not 1 and 2 again
    assert "(up to position 2):\nsummary 1\n" in prompt_of(last)
    assert "\nsummary 2\n" in prompt_of(model.answering()[-1])


async def test_a_spec_with_an_output_schema_summarises_in_text(tmp_path: Path) -> None:
    model = Model()
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    spec = AgentSpec(id="helper", system_prompt="Answer in the room.", output_schema=schema)
    async with host(tmp_path, model) as (_, rooms):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        await rooms.register_agent(room.id, SpecRoomAgent(spec, window=1, overflow="summarize"))
        for n in range(1, 4):
            (position,) = await ada.publish(room.id, chat(f"message {n}"))
            with anyio.fail_after(10):
                while not await ada.read(room.id, after=position):  # noqa: ASYNC110
                    await anyio.sleep(0.01)
        answers = await ada.read(room.id, types=["chat.message"], limit=100)
    assert [e.payload for e in answers[1::2]] == [{"answer": f"answer {n}"} for n in (1, 2, 3)]
    # The summarisation runs are offered no submit_output: they answer in text, which
    # the answers' prompts then hold.
    summarising = model.summarising()
    assert len(summarising) == 2 and all(not r.tools for r in summarising)
    assert "\nsummary 2\n" in prompt_of(model.answering()[-1])
    assert all(r.tools for r in model.answering())


async def test_a_run_that_timed_out_leaves_the_session_free(tmp_path: Path) -> None:
    calls = 0

    async def hang() -> AsyncIterator[str]:
        await anyio.sleep_forever()
        yield "never"

    def respond(request: ModelRequest) -> Any:
        nonlocal calls
        calls += 1
        return hang() if calls == 1 else f"fine {calls}"

    model = Model()
    model.provider = FunctionProvider(respond, record=True)
    async with host(tmp_path, model) as (runtime, rooms):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        helper = Recording(handler_timeout=0.3)
        await rooms.register_agent(room.id, helper)
        (position,) = await ada.publish(room.id, chat("one"))
        with anyio.fail_after(10):
            async with follow(rooms, room.id, position) as events:
                failure = await anext(events)
        assert failure.type == "agent.failed" and "longer than 0.3 s" in failure.payload["error"]
        answer = await say(rooms, room.id, "two")
        assert answer.payload["text"] == "fine 2"
        runs = await runtime.store.list_runs(SESSION.format(room=room.id))
    assert [r.status for r in runs] == ["interrupted", "completed"]
    assert [r.id for r in runs] == [request.runs[0] for request in helper.requests]
    # The unanswered message is in the window; the agent.failed event (for owners) is not.
    assert positions(context_of(prompt_of(model.requests[-1]))) == [1]


async def test_a_delegation_gets_the_same_context_and_its_task(tmp_path: Path) -> None:
    model = Model()
    async with host(tmp_path, model) as (_, rooms):
        ada = rooms.client("ada")
        room = await ada.create_room("lab")
        for n in range(1, 6):
            await ada.publish(room.id, chat(f"message {n}"))
        helper = Recording(window=3)
        await rooms.register_agent(room.id, helper)
        asked = await ada.delegate(room.id, "helper", {"sum": [1, 2]})
        with anyio.fail_after(10):
            done = await ada.wait_delegation(room.id, asked.id)
    assert (done.status, done.result) == ("completed", "answer 1")
    prompt = prompt_of(model.requests[-1])
    # The window before delegation.requested (which the agent's grant does not read).
    context, marked, task = prompt.partition("The task member:ada delegated to you:\n")
    assert marked and task == '{"sum": [1, 2]}'
    assert positions(context) == [3, 4, 5]
    assert len(helper.requests[0].runs) == 1


def test_bad_options_are_clear_errors() -> None:
    for window in (0, 1001, True, 2.5):
        with pytest.raises(ValueError, match="window must be an integer from 1 to 1000"):
            SpecRoomAgent(SPEC, window=window)  # type: ignore[arg-type]
    for tokens in (0, -3, 1.5):
        with pytest.raises(ValueError, match="window_tokens must be a positive integer"):
            SpecRoomAgent(SPEC, window_tokens=tokens)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="overflow must be 'drop' or 'summarize'"):
        SpecRoomAgent(SPEC, overflow="forget")  # type: ignore[arg-type]
    agent = SpecRoomAgent(SPEC, window=1000, window_tokens=1, overflow="summarize")
    assert (agent.window, agent.window_tokens, agent.overflow) == (1000, 1, "summarize")
