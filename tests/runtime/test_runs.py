"""Runs are logs: replay from an offset, many readers, readers never affect the run."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit import AgentSpec, Runtime, SessionBusyError
from agentkit.providers import Chunk, ModelRequest, TextChunk
from agentkit.runtime import AgentNotFoundError
from agentkit.stores import MemoryStore, SessionNotFoundError
from agentkit.testing import FunctionProvider, ScriptedProvider

pytestmark = pytest.mark.anyio

SPEC = AgentSpec(id="demo:talker", system_prompt="Talk.")


class Gated:
    """Streams `pieces` deltas, pausing at `gate` until it is set."""

    name = "gated"

    def __init__(self, pieces: int = 10) -> None:
        self.pieces = pieces
        self.gate = anyio.Event()
        self.halfway = anyio.Event()

    def resolve_model(self, tier: str | None, model: str | None) -> str:
        return "gated-model"

    async def _stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        for index in range(self.pieces):
            if index == self.pieces // 2:
                self.halfway.set()
                await self.gate.wait()
            yield TextChunk(f"{index} ")

    def stream(self, request: ModelRequest) -> AsyncIterator[Chunk]:
        return self._stream(request)


async def test_the_run_goes_on_without_readers() -> None:
    async with Runtime(provider=ScriptedProvider(["hello"])) as runtime:
        run = await runtime.start(SPEC, "hi")
        outcome = await run.wait()
    assert outcome.ok and outcome.text == "hello" and run.done


async def test_replay_after_an_offset_then_follow() -> None:
    provider = Gated()
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        await provider.halfway.wait()
        seen = [e async for e in _take(run.entries(), 4)]
        assert [e.offset for e in seen] == [0, 1, 2, 3]
        provider.gate.set()
        rest = [e async for e in run.entries(after=seen[-1].offset)]
    assert rest[0].offset == 4
    everything = [e.event async for e in run.entries()]
    assert [e.event for e in seen] + [e.event for e in rest] == everything


async def _take(source: AsyncIterator[Any], count: int) -> AsyncIterator[Any]:
    taken = 0
    async for item in source:
        yield item
        taken += 1
        if taken == count:
            return


async def test_many_readers_see_the_same_stream() -> None:
    provider = Gated(pieces=50)
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        streams: list[list[str]] = [[] for _ in range(5)]

        async def read(index: int) -> None:
            async for event in run.events():
                streams[index].append(event.type)

        async with anyio.create_task_group() as tg:
            for index in range(5):
                tg.start_soon(read, index)
            await provider.halfway.wait()
            provider.gate.set()
    assert all(s == streams[0] for s in streams)
    assert streams[0][0] == "turn_start" and streams[0][-1] == "turn_end"
    assert streams[0].count("text_delta") == 50


async def test_a_reader_cancelled_mid_read_does_not_break_the_run() -> None:
    """The shape of an SSE handler whose client goes away."""
    provider = Gated()
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        received: list[str] = []

        async def sse_handler() -> None:
            async for event in run.events():
                received.append(event.type)

        async with anyio.create_task_group() as tg:
            tg.start_soon(sse_handler)
            await provider.halfway.wait()
            await anyio.sleep(0.01)
            tg.cancel_scope.cancel()
        assert received and "turn_end" not in received
        provider.gate.set()
        outcome = await run.wait()
    assert outcome.ok and outcome.text.split() == [str(i) for i in range(10)]


async def test_a_reader_that_breaks_early_does_not_stop_the_run() -> None:
    provider = Gated()
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        async for event in run.events():
            if event.type == "text_delta":
                break
        provider.gate.set()
        outcome = await run.wait()
    assert outcome.ok


async def test_leaving_the_runtime_waits_for_runs() -> None:
    provider = Gated()
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        await provider.halfway.wait()
        provider.gate.set()
    assert run.done and run.outcome is not None and run.outcome.ok


async def test_an_error_in_the_runtime_block_interrupts_runs() -> None:
    provider = Gated()
    with pytest.raises(RuntimeError, match="host crashed"):
        async with Runtime(provider=provider) as runtime:
            run = await runtime.start(SPEC, "hi")
            await provider.halfway.wait()
            raise RuntimeError("host crashed")
    assert run.done
    events = [e async for e in run.events()]
    assert events[-1].type == "turn_end" and events[-1].status == "interrupted"
    assert [e.type for e in events].count("error") == 1


async def test_one_run_at_a_time_per_session() -> None:
    provider = Gated()
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        with pytest.raises(SessionBusyError):
            await runtime.start(SPEC, "again", session_id=run.session_id)
        provider.gate.set()
        await run.wait()


async def test_unknown_session_and_agent_are_clear_errors() -> None:
    async with Runtime(provider=ScriptedProvider([])) as runtime:
        with pytest.raises(SessionNotFoundError):
            await runtime.start(SPEC, "hi", session_id="nope")
        with pytest.raises(AgentNotFoundError):
            await runtime.start("demo:missing", "hi")


async def test_start_outside_the_context_is_refused() -> None:
    runtime = Runtime(provider=ScriptedProvider([]))
    with pytest.raises(RuntimeError, match="async with"):
        await runtime.start(SPEC, "hi")


async def test_finished_runs_replay_from_the_store() -> None:
    store = MemoryStore()
    async with Runtime(
        provider=ScriptedProvider([{"text": "abc", "deltas": 3}]), store=store
    ) as rt:
        run = await rt.start(SPEC, "hi")
        await run.wait()
        replayed = [e async for e in rt.replay(run.id)]
    assert [e.event.type for e in replayed] == [
        "turn_start",
        "session_init",
        "text",
        "result",
        "turn_end",
    ]
    assert replayed[2].offset == 5  # three deltas kept their offsets
    record = await store.get_run(run.id)
    assert record is not None and record.status == "completed"


async def test_stream_helper_yields_the_events() -> None:
    async with Runtime(provider=ScriptedProvider(["hey"])) as runtime:
        kinds = [e.type async for e in runtime.stream(SPEC, "hi")]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_end" and "result" in kinds


async def test_a_failing_store_does_not_take_the_runtime_down(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr("agentkit.runtime._run._ENDING_RETRY_DELAY", 0.001)

    class Failing(MemoryStore):
        async def finish_run(self, run_id: str, status: Any, finished_at: float, **_: Any) -> bool:
            raise OSError("disk full")

    store = Failing()
    async with Runtime(provider=ScriptedProvider(["one", "two"]), store=store) as runtime:
        first = await runtime.start(SPEC, "hi")
        second = await runtime.start(SPEC, "hi")
        assert (await first.wait()).ok and (await second.wait()).ok
    # Said in one line each, without a traceback; the runs stay `running` in the store
    # until their lease expires and a sweep ends them.
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 2 and all(r.exc_info is None for r in errors)
    assert "disk full" in errors[0].getMessage()
    record = await store.get_run(first.id)
    assert record is not None and record.status == "running"


async def test_the_end_of_a_run_is_retried_while_the_store_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("agentkit.runtime._run._ENDING_RETRY_DELAY", 0.001)

    class Flaky(MemoryStore):
        failures = 3

        async def finish_run(self, run_id: str, *args: Any, **kwargs: Any) -> bool:
            if self.failures:
                self.failures -= 1
                raise OSError("disk full, for now")
            return await super().finish_run(run_id, *args, **kwargs)

    store = Flaky()
    async with Runtime(provider=ScriptedProvider(["one", "two"]), store=store) as runtime:
        first = await runtime.start(SPEC, "hi")
        assert (await first.wait()).ok
        record = await store.get_run(first.id)
        assert record is not None and record.status == "completed"
        events = await store.read_events(first.id)
        assert [e.event.type for e in events][-2:] == ["result", "turn_end"]
        # the session is free again
        again = await runtime.start(SPEC, "again", session_id=first.session_id)
        assert (await again.wait()).ok


async def test_offsets_below_minus_one_replay_once() -> None:
    async with Runtime(provider=ScriptedProvider(["hey"])) as runtime:
        run = await runtime.start(SPEC, "hi")
        await run.wait()
        offsets = [e.offset async for e in run.entries(after=-5)]
    assert offsets == list(range(len(run)))


async def test_context_values_json_cannot_encode_are_shown_as_text() -> None:
    import datetime

    provider = ScriptedProvider(["ok"])
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi", shared_context={"day": datetime.date(2026, 1, 2)})
        assert (await run.wait()).ok
    assert "2026-01-02" in provider.requests[0].messages[-1].content  # type: ignore[union-attr]


async def test_cancelling_before_the_run_has_begun_still_ends_it_properly() -> None:
    store = MemoryStore()
    async with Runtime(provider=ScriptedProvider(["never said"]), store=store) as runtime:
        run = await runtime.start(SPEC, "hi")
        run.cancel()  # the run's task has not taken a step yet
        outcome = await run.wait()
    assert outcome.status == "interrupted"
    kinds = [e.type async for e in run.events()]
    assert kinds[0] == "turn_start" and kinds[-1] == "turn_end" and kinds.count("error") == 1
    assert "result" not in kinds
    record = await store.get_run(run.id)
    assert record is not None and record.status == "interrupted"


async def test_a_run_stopped_by_its_host_with_a_reason_ends_as_that_error() -> None:
    # What a server shutting down does: the run ends as a crash would, at once.
    store = MemoryStore()
    provider = Gated()
    async with Runtime(provider=provider, store=store) as runtime:
        run = await runtime.start(SPEC, "hi")
        await provider.halfway.wait()
        run.cancel(reason="interrupted: its process stopped")
        run.cancel(reason="a later reason does not replace the first")
        outcome = await run.wait()
    assert outcome.status == "error" and outcome.error == "interrupted: its process stopped"
    events = [e async for e in run.events()]
    assert events[-1].type == "turn_end" and events[-1].status == "error"  # type: ignore[union-attr]
    record = await store.get_run(run.id)
    assert record is not None and record.status == "error"
    assert record.error == "interrupted: its process stopped"


async def test_cancelling_an_ended_run_changes_nothing() -> None:
    async with Runtime(provider=ScriptedProvider(["done"])) as runtime:
        run = await runtime.start(SPEC, "hi")
        outcome = await run.wait()
        run.cancel()
        run.cancel()
        again = await run.wait()
    assert outcome.ok and again is outcome


async def test_a_cancelled_host_scope_interrupts_the_runs_and_the_ending_is_saved() -> None:
    provider = Gated()
    store = MemoryStore()
    with anyio.move_on_after(30) as outer:
        async with Runtime(provider=provider, store=store) as runtime:
            run = await runtime.start(SPEC, "hi")
            await provider.halfway.wait()
            outer.cancel()
            await anyio.sleep_forever()
    assert outer.cancelled_caught and run.done
    assert run.outcome is not None and run.outcome.status == "interrupted"
    stored = [entry.event.type for entry in await store.read_events(run.id)]
    assert stored[0] == "turn_start" and stored[-2:] == ["error", "turn_end"]


async def test_a_host_cancelled_while_leaving_still_ends_every_run() -> None:
    provider = Gated()
    with anyio.move_on_after(30) as outer:
        async with Runtime(provider=provider) as runtime:
            run = await runtime.start(SPEC, "hi")
            await provider.halfway.wait()
            # Leaving waits for the run; the host is cancelled during that wait.
            outer.cancel()
    assert outer.cancelled_caught and run.done
    assert run.outcome is not None and run.outcome.status == "interrupted"


async def test_streamed_deltas_read_back_as_events_in_order() -> None:
    provider = Gated(pieces=6)
    async with Runtime(provider=provider) as runtime:
        run = await runtime.start(SPEC, "hi")
        await provider.halfway.wait()
        early = [e async for e in _take(run.events(), 5)]
        provider.gate.set()
        await run.wait()
        every = [e async for e in run.events()]
    deltas = [e for e in every if e.type == "text_delta"]
    assert [d.content for d in deltas] == [f"{i} " for i in range(6)]
    assert all(d.agent is None for d in deltas)
    assert [e.type for e in early] == ["turn_start", "session_init", *["text_delta"] * 3]
    assert every[:5] == early  # the same events, whichever reader


async def test_a_finished_run_reads_back_the_same_events_it_streamed() -> None:
    from agentkit.testing import ScriptedProvider as Scripted

    script = [
        {"tool_calls": [{"name": "missing", "input": {"x": [1, {"y": None}]}}]},
        {"text": "done, with ünïcode", "deltas": 4},
    ]
    async with Runtime(provider=Scripted(script)) as runtime:
        run = await runtime.start(SPEC, "hi")
        live = [event async for event in run.events()]  # read while it runs
        assert run.done
        again = [event async for event in run.events()]
        tail = [entry async for entry in run.entries(after=len(live) - 3)]
    assert again == live
    assert [type(e) for e in again] == [type(e) for e in live]
    assert [entry.offset for entry in tail] == [len(live) - 2, len(live) - 1]
    assert [entry.event for entry in tail] == live[-2:]
    kinds = [e.type for e in live]
    assert kinds.count("text_delta") == 4 and "tool_result" in kinds


class _Crash(BaseException):
    """Not an Exception: nothing in a run may turn it into a tool error."""


async def test_a_crash_inside_a_run_ends_it_stops_the_others_and_leaves_the_runtime() -> None:
    from agentkit.testing import FunctionProvider
    from agentkit.tools import Tool, ToolRegistry

    async def explode(arguments: dict[str, Any], context: Any) -> str:
        await anyio.sleep(0.05)  # the other run is waiting by now
        raise _Crash("boom")

    async def respond(request: ModelRequest) -> Any:
        if request.tools:  # the crashing agent
            return {"tool_calls": [{"name": "explode", "input": {}}]}
        await anyio.sleep_forever()  # the other one waits for its model

    spec = AgentSpec(id="demo:crash", tools=["explode"], permission_mode="bypassPermissions")
    tools = ToolRegistry([Tool("explode", "Explodes.", {"type": "object"}, explode)])
    with pytest.raises(BaseExceptionGroup) as caught:
        async with Runtime(provider=FunctionProvider(respond), tools=tools) as runtime:
            waiting = await runtime.start(SPEC, "hi")
            crashed = await runtime.start(spec, "go")
            await crashed.wait()
            await waiting.wait()
    assert caught.value.subgroup(_Crash) is not None
    assert crashed.outcome is not None and crashed.outcome.status == "error"
    assert "boom" in (crashed.outcome.error or "")
    assert waiting.outcome is not None and waiting.outcome.status == "interrupted"
    for run in (crashed, waiting):
        kinds = [e.type async for e in run.events()]
        assert kinds[0] == "turn_start" and kinds[-1] == "turn_end"


@pytest.mark.filterwarnings("error")
async def test_a_reader_that_stops_early_leaves_nothing_to_clean_up() -> None:
    import gc

    async with Runtime(provider=ScriptedProvider([{"text": "a b c", "deltas": 3}])) as runtime:
        run = await runtime.start(SPEC, "hi")
        for _ in range(3):
            async for _event in run.events():
                break  # no aclosing() needed, on any backend
            async for _entry in run.entries(after=1):
                break
        await run.wait()
    gc.collect()  # an abandoned async generator would warn here (trio) or on loop close


CRASHING = AgentSpec(id="demo:crash", tools=["explode"], permission_mode="bypassPermissions")


def _crashing_runtime() -> Runtime:
    """A runtime whose every model call asks for `explode`, a tool that crashes."""
    from agentkit.testing import FunctionProvider
    from agentkit.tools import Tool, ToolRegistry

    async def explode(arguments: dict[str, Any], context: Any) -> str:
        raise _Crash("boom")

    tools = ToolRegistry([Tool("explode", "Explodes.", {"type": "object"}, explode)])
    provider = FunctionProvider(lambda request: {"tool_calls": [{"name": "explode"}]})
    return Runtime(provider=provider, tools=tools)


async def test_a_crash_inside_a_run_cancels_the_body_of_the_runtime_block() -> None:
    reached = False
    with anyio.fail_after(5), pytest.raises(BaseExceptionGroup) as caught:
        async with _crashing_runtime() as runtime:
            await runtime.start(CRASHING, "go")
            await anyio.sleep_forever()  # cancelled by the crash, as in a task group
            reached = True
    assert not reached
    assert caught.value.subgroup(_Crash) is not None
    assert caught.value.subgroup(anyio.get_cancelled_exc_class()) is None


async def test_leaving_normally_after_a_crash_still_raises_it() -> None:
    with pytest.raises(BaseExceptionGroup) as caught:
        async with _crashing_runtime() as runtime:
            run = await runtime.start(CRASHING, "go")
            with anyio.CancelScope(shield=True):
                await run.wait()  # the body is shielded: it ends normally
    assert caught.value.subgroup(_Crash) is not None


async def test_the_process_jobs_of_a_run_die_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "job.pid"
    spec = AgentSpec(id="demo:jobs", tools=("process",), permission_mode="bypassPermissions")
    start = {
        "action": "start",
        "command": f"echo $$ > {pid_file}.tmp; mv {pid_file}.tmp {pid_file}; exec sleep 300",
    }

    async def respond(request: ModelRequest) -> Any:
        if len(request.messages) == 1:
            return {"tool_calls": [{"name": "process", "input": start}]}
        with anyio.fail_after(20):
            while not pid_file.exists():  # noqa: ASYNC110 - the job is another process
                await anyio.sleep(0.02)
        return "started it"

    async with Runtime(provider=FunctionProvider(respond), working_dir=tmp_path) as runtime:
        run = await runtime.start(spec, "start a job")
        assert (await run.wait()).ok
        pid = int(pid_file.read_text())
        with pytest.raises(ProcessLookupError):  # gone once the run has ended
            os.kill(pid, 0)
