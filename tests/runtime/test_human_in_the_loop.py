"""Human in the loop: a call that needs consent (or a question) makes its run wait for a
person, holding no task; a decision through any runtime sharing the store resumes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import Allow, Ask, Deny, PermissionRequest, Runtime, SessionBusyError
from agentkit.errors import RequestDecidedError, UnknownRequestError
from agentkit.events import (
    AgentMessage,
    PermissionDecisionEvent,
    PermissionRequestEvent,
    QuestionAnswerEvent,
    QuestionEvent,
    ToolResult,
)
from agentkit.providers import ToolResultMessage
from agentkit.runtime import PendingRequest, Run
from agentkit.stores import SQLiteStore, Store, open_store
from agentkit.testing import ScriptedProvider, assert_stream_invariants
from support.hitl import RAN, SPEC, bash, provider, tools
from support.paths import SRC
from support.pg import new_schema, schema_url

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
CHILD = HERE / "hitl_child.py"


def _runtime(model: ScriptedProvider, **options: Any) -> Runtime:
    options.setdefault("agents", [SPEC])
    return Runtime(provider=model, tools=tools(), builtin_tools=False, **options)


async def _request(run: Run) -> AgentMessage:
    """The run's first request to a person, once the run is stored as waiting."""
    async for event in run.events():
        if isinstance(event, PermissionRequestEvent | QuestionEvent):
            await _until_status(run, "waiting")
            return event
    raise AssertionError("the run ended without asking")


async def _until_status(run: Run, status: str) -> None:
    # The request event is written just before the run is stored as waiting (in the same
    # task, with nothing between them to wait on from here): poll the in-memory flag.
    while (status == "waiting") != run.waiting:  # noqa: ASYNC110
        await anyio.sleep(0.005)


async def _first(run: Run, kind: type[Any]) -> Any:
    return next(iter([event async for event in run.events() if isinstance(event, kind)]))


def _results(events: list[AgentMessage]) -> list[ToolResult]:
    return [event for event in events if isinstance(event, ToolResult)]


async def _stored_log(store: Store, run_id: str) -> list[AgentMessage]:
    entries = await store.read_events(run_id)
    offsets = [entry.offset for entry in entries]
    assert offsets == sorted(set(offsets)), offsets
    events = [entry.event for entry in entries]
    assert_stream_invariants(events)
    return events


# --- deciding in one process --------------------------------------------------------------


async def test_allow_runs_the_call_and_the_run_completes() -> None:
    RAN.clear()
    model = provider(bash("git status"), "all clean")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "check")
        request = await _request(run)
        assert isinstance(request, PermissionRequestEvent)
        assert (request.tool_name, request.input, request.effect) == (
            "Bash",
            {"command": "git status"},
            "execute",
        )
        assert RAN == []  # nothing ran before the decision
        record = await runtime.store.get_run(run.id)
        assert record is not None and (record.status, record.owner) == ("waiting", None)
        pending = run.pending_requests()
        assert pending == await runtime.pending_requests(run.id)
        assert pending == [
            PendingRequest(
                request_id=request.request_id,
                run_id=run.id,
                kind="permission",
                tool_use_id=request.tool_use_id,
                tool_name="Bash",
                input={"command": "git status"},
                effect="execute",
            )
        ]
        assert runtime.get_run(run.id) is None  # no task here while it waits
        await run.decide(request.request_id, allow=True)
        outcome = await run.wait()
        assert outcome.ok and outcome.text == "all clean"
        assert RAN == ["git status"]
        assert outcome.accounting.model_calls == 2 and outcome.accounting.tool_calls == 1
        events = [event async for event in run.events()]
        assert_stream_invariants(events)
        types = [event.type for event in events if event.type != "text_delta"]
        assert types[2:6] == [
            "tool_use",
            "permission_request",
            "permission_decision",
            "tool_result",
        ]
        stored = await _stored_log(runtime.store, run.id)
        assert [e for e in events if e.type != "text_delta"] == stored
        assert run.pending_requests() == [] and await runtime.pending_requests(run.id) == []


async def test_deny_reaches_the_model_and_the_run_completes() -> None:
    model = provider(bash("rm -rf /"), "ok, I will not")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "clean")
        request = await _request(run)
        await runtime.decide(run.id, request.request_id, allow=False, message="not on my disk")
        outcome = await run.wait()
        assert outcome.ok and outcome.accounting.permission_denials == 1
        (result,) = _results([e async for e in run.events()])
        assert result.is_error and result.output == "permission denied: not on my disk"
        tool_message = model.requests[1].messages[-1]
        assert isinstance(tool_message, ToolResultMessage)
        assert tool_message.content == "permission denied: not on my disk"
        decision = await _first(run, PermissionDecisionEvent)
        assert (decision.decision, decision.message) == ("deny", "not on my disk")


async def test_updated_input_runs_instead_and_is_checked_like_the_models() -> None:
    RAN.clear()
    model = provider(bash("rm -rf build"), bash("ls"), "done")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "clean")
        request = await _request(run)
        with pytest.raises(ValueError, match=r"^updated_input: must be a JSON object"):
            await run.decide(request.request_id, allow=True, updated_input="rm -rf dist")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"^message: must be a string"):
            await run.decide(request.request_id, allow=False, message=3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match=r"^message: 20,001 characters"):
            await run.decide(request.request_id, allow=False, message="x" * 20_001)
        await run.decide(request.request_id, allow=True, updated_input={"command": "rm -r build"})
        second = await _request_after(run, request.request_id)
        await run.decide(second.request_id, allow=True, updated_input={"command": 7})
        outcome = await run.wait()
        assert outcome.ok
        first, invalid = _results([e async for e in run.events()])
        assert first.output == "ran rm -r build" and RAN == ["rm -r build"]
        assert invalid.is_error and "changed input: invalid arguments" in invalid.output


async def _request_after(run: Run, request_id: str) -> AgentMessage:
    async for event in run.events():
        if isinstance(event, PermissionRequestEvent | QuestionEvent) and (
            event.request_id != request_id
        ):
            await _until_status(run, "waiting")
            return event
    raise AssertionError("the run ended without asking again")


async def test_a_handler_decides_first_and_may_leave_it_to_a_person() -> None:
    asked: list[str] = []

    async def handler(request: PermissionRequest) -> Allow | Deny | Ask:
        command = request.input["command"]
        asked.append(command)
        if command == "ls":
            return Allow()
        if command == "rm x":
            return Deny("handler says no")
        return Ask()

    model = provider(bash("ls", "rm x", "git push"), "done")
    async with _runtime(model, permission_handler=handler) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        assert isinstance(request, PermissionRequestEvent)
        assert request.input == {"command": "git push"} and asked == ["ls", "rm x", "git push"]
        await run.decide(request.request_id, allow=True)
        outcome = await run.wait()
        assert outcome.ok and asked == ["ls", "rm x", "git push"]  # not asked again
        listed, denied, pushed = _results([e async for e in run.events()])
        assert listed.output == "ran ls" and pushed.output == "ran git push"
        assert denied.output == "permission denied: handler says no"
        # The results of the calls before the one that waited were stored with it.
        transcript = await runtime.store.load_transcript(run.session_id)
        assert [m.role for m in transcript] == [
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "assistant",
        ]


async def test_a_question_waits_for_its_answers() -> None:
    questions = [
        {"question": "Which branch?", "options": ["main", "dev"]},
        {"id": "why", "question": "Why?"},
    ]
    model = provider(
        {"tool_calls": [{"name": "questionnaire", "input": {"questions": questions}}]}, "merged"
    )
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "merge")
        request = await _request(run)
        assert isinstance(request, QuestionEvent)
        assert request.questions == [
            {"id": "q1", "question": "Which branch?", "options": ["main", "dev"]},
            {"id": "why", "question": "Why?"},
        ]
        (pending,) = run.pending_requests()
        assert pending.kind == "question" and pending.questions == request.questions
        with pytest.raises(UnknownRequestError, match="question: answer it instead"):
            await run.decide(request.request_id, allow=True)
        with pytest.raises(ValueError, match=r"^answers: must be given"):
            await run.answer(request.request_id, None)
        await run.answer(request.request_id, {"q1": "main", "why": "release"})
        outcome = await run.wait()
        assert outcome.ok and outcome.text == "merged"
        tool_message = model.requests[1].messages[-1]
        assert isinstance(tool_message, ToolResultMessage)
        assert tool_message.content == '{"q1": "main", "why": "release"}'
        answer = await _first(run, QuestionAnswerEvent)
        assert answer.answers == {"q1": "main", "why": "release"}


async def test_remember_allows_matching_calls_in_the_session_only() -> None:
    RAN.clear()
    model = provider(
        bash("git status"),
        "first",  # run 1: asks, remembered
        bash("git status"),
        "second",  # run 2, same session: does not ask
        bash("git push"),
        "third",  # run 3: another command asks
        bash("git status"),
        "fourth",  # run 4, another session: asks
    )
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "one")
        request = await _request(run)
        await run.decide(request.request_id, allow=True, remember=True)
        await run.wait()
        decision = await _first(run, PermissionDecisionEvent)
        assert decision.remember and decision.rule == "Bash(git status)"
        session = await runtime.store.get_session(run.session_id)
        assert session is not None
        assert session.metadata["agentkit.permissions"] == {"allow": ["Bash(git status)"]}

        again = await runtime.start(SPEC, "two", session_id=run.session_id)
        assert (await again.wait()).text == "second"
        assert not [e async for e in again.events() if isinstance(e, PermissionRequestEvent)]

        third = await runtime.start(SPEC, "three", session_id=run.session_id)
        request = await _request(third)
        assert isinstance(request, PermissionRequestEvent) and request.input == {
            "command": "git push"
        }
        await third.decide(request.request_id, allow=False)
        await third.wait()

        elsewhere = await runtime.start(SPEC, "four")
        request = await _request(elsewhere)
        await elsewhere.decide(request.request_id, allow=True)
        assert (await elsewhere.wait()).text == "fourth"
        assert RAN == ["git status", "git status", "git status"]


async def test_unknown_and_decided_requests_are_told_apart() -> None:
    model = provider(bash("ls"), "done")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        with pytest.raises(UnknownRequestError):
            await run.decide("not-a-request", allow=True)
        with pytest.raises(UnknownRequestError):
            await runtime.decide("not-a-run", request.request_id, allow=True)
        results: list[str] = []

        async def decide() -> None:
            try:
                await run.decide(request.request_id, allow=True)
                results.append("won")
            except RequestDecidedError:
                results.append("decided")

        async with anyio.create_task_group() as tg:
            tg.start_soon(decide)
            tg.start_soon(decide)
        assert sorted(results) == ["decided", "won"]
        await run.wait()
        with pytest.raises(RequestDecidedError, match="decided already"):
            await run.decide(request.request_id, allow=False)


async def test_a_waiting_run_keeps_its_session_busy() -> None:
    model = provider(bash("ls"), "done", "again")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        with pytest.raises(SessionBusyError):
            await runtime.start(SPEC, "meanwhile", session_id=run.session_id)
        await run.decide(request.request_id, allow=True)
        await run.wait()
        later = await runtime.start(SPEC, "later", session_id=run.session_id)
        assert (await later.wait()).text == "again"


async def test_cancelling_a_waiting_run_ends_it_interrupted() -> None:
    model = provider(bash("ls"), "unused", "next")
    async with _runtime(model) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        run.cancel()
        outcome = await run.wait()
        assert outcome.status == "interrupted"
        decision = await _first(run, PermissionDecisionEvent)
        assert (decision.decision, decision.message) == ("deny", "the run was cancelled")
        assert_stream_invariants([e async for e in run.events()])
        with pytest.raises(RequestDecidedError):
            await run.decide(request.request_id, allow=True)
        later = await runtime.start(SPEC, "later", session_id=run.session_id)
        assert (await later.wait()).text == "unused"


# --- durable: across runtimes, restarts and processes --------------------------------------


async def test_a_new_runtime_over_the_same_file_resumes_it(tmp_path: Path) -> None:
    RAN.clear()
    path = tmp_path / "hitl.db"
    async with _runtime(provider(bash("make"), "unused"), store=str(path)) as first:
        run = await first.start(SPEC, "build")
        request = await _request(run)
    # The first runtime is gone; the run waits in the file, holding nothing.
    store = SQLiteStore(path)
    try:
        record = await store.get_run(run.id)
        assert record is not None and record.status == "waiting"
    finally:
        await store.aclose()
    model = provider("built")
    async with _runtime(model, store=str(path)) as second:
        (pending,) = await second.pending_requests(run.id)
        assert pending.request_id == request.request_id and pending.input == {"command": "make"}
        resumed = await second.decide(run.id, request.request_id, allow=True)
        assert resumed.id == run.id and resumed is not run
        outcome = await resumed.wait()
        assert outcome.ok and outcome.text == "built" and RAN == ["make"]
        # The same turn, its log whole: one turn_start ... one turn_end.
        events = await _stored_log(second.store, run.id)
        assert [e.type for e in events] == [
            "turn_start",
            "session_init",
            "tool_use",
            "permission_request",
            "permission_decision",
            "tool_result",
            "text",
            "result",
            "turn_end",
        ]
        assert events[0].turn_id == events[-1].turn_id == run.turn_id
        # The model saw the whole transcript, and the system prompt of the stored session.
        assert model.requests[0].system == "Be careful."
        assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "tool"]


def _child(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), url],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE.parent)])},
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield str(tmp_path / "killed.db")
        return
    with new_schema("hitl") as schema:
        yield schema_url(schema)


async def test_a_run_survives_the_sigkill_of_its_process(store_url: str) -> None:
    RAN.clear()
    child = _child(store_url)
    try:
        assert child.stdout is not None
        line = await anyio.to_thread.run_sync(child.stdout.readline)
        run_id, request_id = line.split()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    async with _runtime(
        provider("cleaned"), store=store_url, lease_duration=1.0, heartbeat_interval=0.2
    ) as runtime:
        # Its process is dead and its lease long gone: the run still waits.
        record = await runtime.store.get_run(run_id)
        assert record is not None and record.status == "waiting"
        follower = runtime.follow(run_id, poll_interval=0.05)
        seen = [await follower.__anext__() for _ in range(4)]
        assert seen[-1].event.type == "permission_request"
        resumed = await runtime.decide(run_id, request_id, allow=True)
        rest = [entry async for entry in follower]
        assert rest[0].event.type == "permission_decision" and rest[-1].event.type == "turn_end"
        outcome = await resumed.wait()
        assert outcome.ok and RAN == ["rm -rf build"]
        await _stored_log(runtime.store, run_id)


@pytest.mark.postgres
async def test_postgres_a_second_runtime_decides_and_one_of_two_wins() -> None:
    with new_schema("hitl") as schema:
        url = schema_url(schema)
        async with (
            _runtime(provider(bash("deploy"), "unused"), store=url) as first,
            _runtime(provider("deployed"), store=url) as second,
            _runtime(provider("deployed too"), store=url) as third,
        ):
            run = await first.start(SPEC, "ship it")
            request = await _request(run)
            follower = first.follow(run.id, poll_interval=0.05)  # on the store: waits on
            results: dict[str, str] = {}

            resumed: list[Run] = []

            async def decide(name: str, runtime: Runtime) -> None:
                try:
                    resumed.append(await runtime.decide(run.id, request.request_id, allow=True))
                    results[name] = "won"
                except RequestDecidedError:
                    results[name] = "lost"

            async with anyio.create_task_group() as tg:
                tg.start_soon(decide, "second", second)
                tg.start_soon(decide, "third", third)
            assert sorted(results.values()) == ["lost", "won"]
            winner = second if results["second"] == "won" else third
            outcome = await resumed[0].wait()
            assert outcome.ok and outcome.text in ("deployed", "deployed too")
            entries = [entry async for entry in follower]
            assert entries[-1].event.type == "turn_end"
            record = await first.store.get_run(run.id)
            assert record is not None and record.owner == winner.instance_id
            events = await _stored_log(first.store, run.id)
            assert sum(isinstance(e, PermissionDecisionEvent) for e in events) == 1


# --- leases and deadlines -----------------------------------------------------------------


async def test_leases_leave_a_waiting_run_alone(tmp_path: Path) -> None:
    url = str(tmp_path / "leases.db")
    async with _runtime(
        provider(bash("ls"), "done"), store=url, heartbeat_interval=0.05, lease_duration=0.2
    ) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        store = open_store(url)
        try:
            # Several lease durations pass, with sweeps in this runtime and a new one.
            async with _runtime(provider(), store=url, heartbeat_interval=0.05, lease_duration=0.2):
                await anyio.sleep(0.6)
            assert (await store.get_run(run.id)).status == "waiting"  # type: ignore[union-attr]
        finally:
            await store.aclose()
        await run.decide(request.request_id, allow=True)
        assert (await run.wait()).ok


async def test_a_deadline_denies_once_with_two_runtimes_sweeping(tmp_path: Path) -> None:
    url = str(tmp_path / "deadline.db")
    options: dict[str, Any] = {"store": url, "heartbeat_interval": 0.05, "lease_duration": 2.0}
    async with (
        _runtime(provider(bash("ls"), "unused"), request_timeout=0.3, **options) as first,
        _runtime(provider("denied then"), **options) as second,
        _runtime(provider("denied then"), **options) as third,
    ):
        run = await first.start(SPEC, "go")
        request = await _request(run)
        assert isinstance(request, PermissionRequestEvent) and request.deadline is not None
        follower = first.follow(run.id, poll_interval=0.05)
        entries = [entry async for entry in follower]
        events = [entry.event for entry in entries]
        decisions = [e for e in events if isinstance(e, PermissionDecisionEvent)]
        assert len(decisions) == 1
        assert (decisions[0].decision, decisions[0].message) == (
            "deny",
            "no decision within 0.3 seconds",
        )
        (result,) = _results(events)
        assert result.output == "permission denied: no decision within 0.3 seconds"
        assert events[-1].type == "turn_end" and events[-1].status == "completed"
        assert_stream_invariants(await _stored_log(second.store, run.id))
        del third


async def test_a_traced_run_that_waits_ends_its_span_as_waiting() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import StatusCode

    exporter = InMemorySpanExporter()
    tracing = TracerProvider()
    tracing.add_span_processor(SimpleSpanProcessor(exporter))
    async with _runtime(provider(bash("ls"), "done"), tracer_provider=tracing) as runtime:
        run = await runtime.start(SPEC, "go")
        request = await _request(run)
        (agent,) = [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]
        assert (agent.attributes or {})["agentkit.run.waiting"] is True
        assert agent.status.status_code is not StatusCode.ERROR
        await run.decide(request.request_id, allow=True)
        assert (await run.wait()).ok


async def test_an_agent_streams_the_request_and_goes_on_when_decided() -> None:
    from agentkit import Agent

    async with _runtime(provider()) as runtime:
        # The `test` model calls each tool it is offered (here `Bash`), then answers.
        agent = Agent("test", instructions="Check.", tools=tools()[:1], runtime=runtime)
        run = await agent.start("how long?")
        seen: list[str] = []
        async for event in run.events():
            seen.append(event.type)
            if isinstance(event, PermissionRequestEvent):
                await _until_status(run, "waiting")
                await runtime.decide(run.id, event.request_id, allow=True)
        assert (await run.wait()).ok
        assert "permission_request" in seen and "permission_decision" in seen


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_remembering_never_widens_what_was_allowed(tmp_path: Path) -> None:
    from agentkit.engine import rule_for
    from agentkit.tools import ToolContext, builtin_tools

    registry = builtin_tools("claude")
    bash_tool, read_tool = registry.get("Bash"), registry.get("Read")
    context = ToolContext(working_dir=tmp_path, run_id="r", session_id="s", agent_id="a")
    assert rule_for(bash_tool, "Bash", {"command": "git status"}, context) == "Bash(git status)"
    # A wildcard, or a command the allowlist syntax cannot match: the exact call.
    for command in ("rm *.py", "ls; rm x"):
        exact = {"tool": "Bash", "input": {"command": command}}
        assert rule_for(bash_tool, "Bash", {"command": command}, context) == exact
    assert rule_for(read_tool, "Read", {"file_path": "src/a.py"}, context) == "Read(src/a.py)"
    # A tool without specifiers, or an action: the exact call.
    assert rule_for(tools()[1], "Read", {"file_path": "a"}, context) == {
        "tool": "Read",
        "input": {"file_path": "a"},
    }
    assert rule_for(None, "notes__create", {"title": "x"}, context) == {
        "tool": "notes__create",
        "input": {"title": "x"},
    }


@pytest.mark.parametrize("timeout", [0, -1, float("inf"), "soon"])
def test_a_bad_request_timeout_is_refused(timeout: Any) -> None:
    with pytest.raises(ValueError, match="request_timeout must be a positive number"):
        Runtime(request_timeout=timeout)
