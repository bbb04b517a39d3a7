"""AgentRunner: running an app's own agents, actions, summon and sub-agents (asyncio and trio)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentkit.actions import ActionContext, ActionResult
from agentkit.apps import (
    AgentRunner,
    App,
    AppFormat,
    AppLoadError,
    ForeignAgentError,
    load_app,
    load_app_actions,
)
from agentkit.events import AgentMessage
from agentkit.providers import ModelRequest
from agentkit.runtime import Runtime
from agentkit.stores import SessionNotFoundError
from agentkit.testing import (
    FunctionProvider,
    SchemaTestProvider,
    ScriptedProvider,
    assert_stream_invariants,
)
from support.paths import ROOT

EXAMPLE = ROOT / "examples" / "research-app"

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


AGENTS = {
    "writer": """\
name: writer
description: Writes
tier: large
reasoningEffort: low
permissionMode: default
maxTurns: 30
tools: []
actions: [demo:notes_create]
allowedSubagents: [demo:judge]
systemPromptPrefix: You are the writer.
""",
    "judge": """\
name: judge
description: Judges
tier: small
permissionMode: default
tools: []
outputSchema:
  type: object
  required: [verdict]
  additionalProperties: false
  properties:
    verdict: {type: string, enum: [good, bad]}
systemPromptPrefix: You are the judge.
""",
}


JUDGED = {"tool_calls": [{"name": "submit_output", "input": {"verdict": "good"}}]}


def make_app(tmp_path: Path, app_id: str = "demo") -> App:
    root = tmp_path / app_id
    (root / "agents").mkdir(parents=True)
    lines = [f"formatVersion: 2\nid: {app_id}\nagents:"]
    for name, text in AGENTS.items():
        (root / "agents" / f"{name}.yaml").write_text(
            text.replace("demo:", f"{app_id}:"), encoding="utf-8"
        )
        lines.append(f"  - agents/{name}.yaml")
    (root / "app.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_app(root)


async def collect(stream: Any) -> list[AgentMessage]:
    events = [event async for event in stream]
    assert_stream_invariants(events)
    return events


async def test_run_streams_one_turn_of_an_own_agent(tmp_path: Path) -> None:
    provider = ScriptedProvider(["Hello from the writer."])
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        events = await collect(runner.run(agent_name="demo:writer", prompt="Write"))
    types = [e.type for e in events]
    assert types[0] == "turn_start" and types[-1] == "turn_end"
    assert types.count("turn_start") == types.count("turn_end") == 1
    assert events[0].user_prompt == "Write"  # type: ignore[union-attr]
    result = next(e for e in events if e.type == "result")
    assert result.content == "Hello from the writer."  # type: ignore[union-attr]
    assert events[-1].status == "completed"  # type: ignore[union-attr]


async def test_tier_and_reasoning_effort_reach_the_provider(tmp_path: Path) -> None:
    provider = ScriptedProvider(["a", JUDGED])
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        await collect(runner.run(agent_name="demo:writer", prompt="x"))
        await collect(runner.run(agent_name="demo:judge", prompt="x"))
    writer, judge = provider.requests
    assert (writer.model, writer.reasoning_effort) == ("test-large", "low")
    assert (judge.model, judge.reasoning_effort) == ("test-small", "high")


async def test_system_prompt_is_the_prefix_plus_used_contracts_only(tmp_path: Path) -> None:
    provider = ScriptedProvider(["a", JUDGED])
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        await collect(
            runner.run(
                agent_name="demo:writer",
                prompt="Write",
                context_suffix="Reply in French.",
                shared_context={"team": "blue"},
                thread_context="earlier: hi",
            )
        )
        await collect(runner.run(agent_name="demo:judge", prompt="x"))
    writer, judge = provider.requests
    assert writer.system == "You are the writer.\n\nReply in French."
    user = writer.messages[-1].content  # type: ignore[union-attr]
    assert '<shared_context>\n{"team": "blue"}\n</shared_context>' in user
    assert "<thread_context>\nearlier: hi\n</thread_context>" in user
    assert user.endswith("Write")
    assert judge.system.startswith("You are the judge.")
    assert "submit_output" in judge.system  # the structured-output contract, nothing else


async def test_other_apps_agents_are_refused_with_a_pointer_to_summon(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=ScriptedProvider([])) as runner:
        with pytest.raises(ForeignAgentError, match="system:summon") as info:
            runner.run(agent_name="assistant:explore", prompt="x")
        assert info.value.agent_name == "assistant:explore"
        with pytest.raises(ForeignAgentError, match="canonical agent id 'demo:writer'"):
            runner.run(agent_name="writer", prompt="x")
        with pytest.raises(ForeignAgentError, match="has no agent 'nobody'"):
            runner.run(agent_name="demo:nobody", prompt="x")


async def test_run_outside_the_context_manager_is_an_error(tmp_path: Path) -> None:
    runner = AgentRunner(make_app(tmp_path), provider=ScriptedProvider([]))
    with pytest.raises(RuntimeError, match="async with"):
        runner.run(agent_name="demo:writer", prompt="x")


async def test_turn_runs_whether_or_not_the_stream_is_read(tmp_path: Path) -> None:
    provider = ScriptedProvider(["never read"])
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        stream = runner.run(agent_name="demo:writer", prompt="x")
        # nobody iterates the stream
    assert len(provider.requests) == 1
    run = await stream.started()
    assert run.done and run.outcome is not None and run.outcome.text == "never read"
    stored = await runner.runtime.store.read_events(run.id)
    assert [e.event.type for e in stored][-2:] == ["result", "turn_end"]


async def test_leaving_the_loop_early_does_not_stop_the_turn(tmp_path: Path) -> None:
    gate = anyio.Event()

    async def slow(request: ModelRequest) -> str:
        await gate.wait()
        return "finished anyway"

    async with AgentRunner(make_app(tmp_path), provider=FunctionProvider(slow)) as runner:
        stream = runner.run(agent_name="demo:writer", prompt="x")
        async for event in stream:
            assert event.type == "turn_start"
            break
        gate.set()
        outcome = await (await stream.started()).wait()
    assert outcome.status == "completed" and outcome.text == "finished anyway"


async def test_cancelling_the_run_ends_the_turn_interrupted(tmp_path: Path) -> None:
    async def never(request: ModelRequest) -> str:
        await anyio.sleep_forever()
        raise AssertionError

    async with AgentRunner(make_app(tmp_path), provider=FunctionProvider(never)) as runner:
        stream = runner.run(agent_name="demo:writer", prompt="x")
        (await stream.started()).cancel()
        events = await collect(stream)
    assert events[-1].type == "turn_end" and events[-1].status == "interrupted"  # type: ignore[union-attr]


async def test_concurrent_turns_stream_independently(tmp_path: Path) -> None:
    async def echo(request: ModelRequest) -> str:
        await anyio.sleep(0.01)
        return f"answer to {request.messages[-1].content}"  # type: ignore[union-attr]

    results: dict[str, str] = {}
    async with AgentRunner(make_app(tmp_path), provider=FunctionProvider(echo)) as runner:

        async def one(prompt: str) -> None:
            async for event in runner.run(agent_name="demo:writer", prompt=prompt):
                if event.type == "result":
                    results[prompt] = event.content

        async with anyio.create_task_group() as group:
            for prompt in ("a", "b", "c"):
                group.start_soon(one, prompt)
    assert results == {p: f"answer to {p}" for p in ("a", "b", "c")}


async def test_an_error_in_the_block_interrupts_running_turns(tmp_path: Path) -> None:
    async def never(request: ModelRequest) -> str:
        await anyio.sleep_forever()
        raise AssertionError

    runner = AgentRunner(make_app(tmp_path), provider=FunctionProvider(never))
    with pytest.raises(KeyError):
        async with runner:
            stream = runner.run(agent_name="demo:writer", prompt="x")
            run = await stream.started()
            raise KeyError("boom")
    assert run.done and run.outcome is not None and run.outcome.status == "interrupted"


async def test_session_id_resumes_the_session(tmp_path: Path) -> None:
    provider = ScriptedProvider(["first answer", "second answer"])
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        first = await collect(runner.run(agent_name="demo:writer", prompt="one"))
        session_id = first[0].session_id  # type: ignore[union-attr]
        second = await collect(
            runner.run(agent_name="demo:writer", prompt="two", session_id=session_id)
        )
    assert second[0].session_id == session_id  # type: ignore[union-attr]
    history = [
        getattr(m, "content", None) or getattr(m, "text", None)
        for m in provider.requests[1].messages
    ]
    assert history == ["one", "first answer", "two"]


async def test_unknown_session_id_fails_when_the_stream_is_read(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=ScriptedProvider([])) as runner:
        stream = runner.run(agent_name="demo:writer", prompt="x", session_id="nope")
        with pytest.raises(SessionNotFoundError):
            await collect(stream)


async def test_channel_thread_key_is_kept_with_the_session(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=ScriptedProvider(["a"])) as runner:
        events = await collect(
            runner.run(agent_name="demo:writer", prompt="x", channel_thread_key="C1/T9")
        )
        session = await runner.runtime.store.get_session(events[0].session_id)  # type: ignore[union-attr]
    assert session is not None
    assert session.metadata == {"appId": "demo", "channelThreadKey": "C1/T9"}


async def test_working_dir_is_the_turns_project_path(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=ScriptedProvider(["a"])) as runner:
        events = await collect(
            runner.run(agent_name="demo:writer", prompt="x", working_dir=tmp_path)
        )
    init = next(e for e in events if e.type == "session_init")
    assert init.project_path == str(tmp_path)  # type: ignore[union-attr]


async def test_structured_output_of_an_agent_with_output_schema(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=SchemaTestProvider()) as runner:
        events = await collect(runner.run(agent_name="demo:judge", prompt="judge this"))
    output = next(e for e in events if e.type == "structured_output")
    assert output.payload["verdict"] in ("good", "bad")  # type: ignore[union-attr]
    result = next(e for e in events if e.type == "result")
    assert json.loads(result.content) == output.payload  # type: ignore[union-attr]


async def test_agents_call_the_apps_python_actions(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    saved: list[str] = []

    @app.action(
        "notes_create",
        {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]},
    )
    async def notes_create(args: dict[str, Any], ctx: ActionContext) -> ActionResult:
        saved.append(args["title"])
        assert (ctx.app_id, ctx.caller) == ("demo", "demo:writer")
        return ActionResult.ok({"id": len(saved)})

    provider = ScriptedProvider(
        [
            {"tool_calls": [{"name": "demo__notes_create", "input": {"title": "otters"}}]},
            "Saved.",
        ]
    )
    async with AgentRunner(app, provider=provider) as runner:
        events = await collect(runner.run(agent_name="demo:writer", prompt="save"))
    assert saved == ["otters"]
    result = next(e for e in events if e.type == "tool_result")
    assert result.output == {"status": "ok", "data": {"id": 1}}  # type: ignore[union-attr]


async def test_summon_through_the_app_context_returns_one_action_result(tmp_path: Path) -> None:
    mine = make_app(tmp_path / "a", "demo")
    other = make_app(tmp_path / "b", "assistant")
    provider = ScriptedProvider(["the other app's answer"])
    async with Runtime(provider=provider) as runtime:
        AgentRunner(other, runtime=runtime)  # the platform knows the other app's agents
        runner = AgentRunner(mine, runtime=runtime)
        async with runner:
            with pytest.raises(ForeignAgentError):
                runner.run(agent_name="assistant:writer", prompt="x")
            result = await runner.app_context.run_action(
                "system:summon", {"agentName": "assistant:writer", "prompt": "help"}
            )
    assert result.status == "ok"
    assert result.data["agentName"] == "assistant:writer"
    assert result.data["content"] == "the other app's answer"
    assert isinstance(result.data["sessionId"], str)


async def test_summon_of_an_unknown_agent_is_an_error_result(tmp_path: Path) -> None:
    async with AgentRunner(make_app(tmp_path), provider=ScriptedProvider([])) as runner:
        result = await runner.run_action("system:summon", {"agentName": "x:y", "prompt": "p"})
    assert result.status == "error" and "no agent 'x:y'" in (result.error or "")


async def test_sub_agent_content_is_forwarded_tagged_with_its_id(tmp_path: Path) -> None:
    def respond(request: ModelRequest) -> Any:
        if request.system.startswith("You are the judge."):
            return {"tool_calls": [{"name": "submit_output", "input": {"verdict": "good"}}]}
        if len(request.messages) == 1:
            return {
                "tool_calls": [
                    {"name": "summon", "input": {"agentName": "demo:judge", "prompt": "judge"}}
                ]
            }
        return "The judge says good."

    async with AgentRunner(make_app(tmp_path), provider=FunctionProvider(respond)) as runner:
        events = await collect(runner.run(agent_name="demo:writer", prompt="write"))
    tagged = [e for e in events if e.agent == "demo:judge"]
    own = [e for e in events if e.agent is None]
    assert [e.type for e in own].count("turn_start") == 1
    assert [e.type for e in own].count("turn_end") == 1
    assert [e.type for e in events].count("turn_start") == 1
    assert "session_init" in [e.type for e in tagged]
    assert "structured_output" in [e.type for e in tagged]
    assert not {"turn_start", "turn_end"} & {e.type for e in tagged}
    assert events[-1].type == "turn_end" and events[-1].agent is None
    own_result = [e for e in own if e.type == "result"]
    assert own_result[0].content == "The judge says good."  # type: ignore[union-attr]


async def test_model_may_summon_only_allowed_subagents(tmp_path: Path) -> None:
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"name": "summon", "input": {"agentName": "demo:writer", "prompt": "x"}}
                ]
            },
            "ok",
        ]
    )
    async with AgentRunner(make_app(tmp_path), provider=provider) as runner:
        events = await collect(runner.run(agent_name="demo:writer", prompt="x"))
    result = next(e for e in events if e.type == "tool_result")
    assert result.is_error  # type: ignore[union-attr]
    assert not [e for e in events if e.agent]


# ------------------------------------------------------------------------ the example app


async def test_example_app_runs_offline_with_the_test_provider() -> None:
    app = load_app_actions(load_app(EXAMPLE))
    assert [a.id for a in app.actions] == ["research-app:notes_create"]
    async with AgentRunner(
        app, provider=SchemaTestProvider(tools=["research-app__notes_create"])
    ) as runner:
        researcher = await collect(
            runner.run(agent_name="research-app:researcher", prompt="Research otters")
        )
        sentinel = await collect(
            runner.run(agent_name="research-app:sentinel", prompt="Message: buy now!!!")
        )
    note = next(e for e in researcher if e.type == "tool_result")
    assert note.output["status"] == "ok"  # type: ignore[union-attr]
    assert researcher[-1].status == "completed"  # type: ignore[union-attr]
    decision = next(e for e in sentinel if e.type == "structured_output")
    assert decision.payload["decision"] in ("REPLY", "ESCALATE", "IGNORE")  # type: ignore[union-attr]


async def test_from_path_loads_the_app_and_its_actions() -> None:
    runner = AgentRunner.from_path(EXAMPLE, provider=ScriptedProvider(["hi"]))
    assert runner.app.id == "research-app"
    assert "research-app:notes_create" in runner.runtime.actions
    async with runner:
        events = await collect(runner.run(agent_name="research-app:researcher", prompt="x"))
    assert events[-1].type == "turn_end"


async def test_the_app_format_loads_a_target_with_its_spec_and_runtime_maker() -> None:
    loaded = AppFormat().load_target("research-app:sentinel", EXAMPLE)
    spec, app = loaded.spec, loaded.app
    assert spec is app.agent("sentinel").spec
    assert "research-app:notes_create" in app.actions
    provider = ScriptedProvider(
        [
            {
                "tool_calls": [
                    {"name": "submit_output", "input": {"decision": "IGNORE", "reason": "spam"}}
                ]
            }
        ]
    )
    async with app.make_runtime(provider=provider) as runtime:
        assert set(runtime.agents) == {"research-app:researcher", "research-app:sentinel"}
        outcome = await (await runtime.start(spec, "Buy now!!!")).wait()
    assert outcome.payload == {"decision": "IGNORE", "reason": "spam"}


def test_the_app_format_target_errors_are_value_or_lookup_errors(tmp_path: Path) -> None:
    apps = AppFormat()
    with pytest.raises(LookupError, match="system:summon"):
        apps.load_target("assistant:explore", EXAMPLE)
    with pytest.raises(LookupError, match="has no agent 'nobody'"):
        apps.load_target("research-app:nobody", EXAMPLE)
    with pytest.raises(ValueError, match=r"app\.yaml"):
        apps.load_target("x:y", tmp_path)


def test_actions_module_without_register_is_a_load_error(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    (app.root / "actions.py").write_text("X = 1\n", encoding="utf-8")
    with pytest.raises(AppLoadError) as info:
        load_app_actions(app)
    (error,) = info.value.errors
    assert (error.file, error.field) == (str(app.root / "actions.py"), "register")


def test_actions_module_failure_names_file_and_line(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    (app.root / "src").mkdir()
    (app.root / "src" / "actions.py").write_text(
        "def register(app):\n    raise RuntimeError('boom')\n", encoding="utf-8"
    )
    with pytest.raises(AppLoadError) as info:
        load_app_actions(app)
    (error,) = info.value.errors
    assert (error.file, error.line) == (str(app.root / "src" / "actions.py"), 2)
    assert error.message == "RuntimeError: boom"


def test_app_without_actions_module_is_unchanged(tmp_path: Path) -> None:
    app = make_app(tmp_path)
    assert load_app_actions(app) is app and len(app.actions) == 0


async def test_a_conflicting_app_adds_nothing_to_a_shared_runtime(tmp_path: Path) -> None:
    async def act(args: dict[str, Any], ctx: ActionContext) -> ActionResult:
        return ActionResult.ok({})

    first = make_app(tmp_path / "one")
    first.action("notes_create")(act)
    second = make_app(tmp_path / "two")  # same app id, other files: other specs
    second.action("notes_create")(act)  # another Action object under the same id
    second.action("notes_delete")(act)
    async with Runtime(provider=ScriptedProvider([])) as runtime:
        AgentRunner(first, runtime=runtime)
        with pytest.raises(ValueError) as info:
            AgentRunner(second, runtime=runtime)
        message = str(info.value)
        assert "agent 'demo:writer'" in message and "agent 'demo:judge'" in message
        assert "action 'demo:notes_create'" in message
        assert "nothing of the app was added" in message
        assert runtime.agents["demo:writer"] is first.agent("writer").spec
        assert runtime.actions.get("demo:notes_create") is first.actions.get("demo:notes_create")
        assert runtime.actions.get("demo:notes_delete") is None
        # the same app again conflicts with nothing
        AgentRunner(first, runtime=runtime)


def test_actions_module_failure_line_with_a_relative_app_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_app(tmp_path)
    (tmp_path / "demo" / "actions.py").write_text(
        "import os\n\ndef register(app):\n    raise RuntimeError('boom')\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AppLoadError) as info:
        load_app_actions(load_app("demo"))
    (error,) = info.value.errors
    assert (error.file, error.line, error.column) == (str(Path("demo") / "actions.py"), 4, 1)


@pytest.mark.parametrize(
    "body", ["import sys\n\nsys.exit(3)\n", "def register(app):\n    exit()\n"]
)
def test_sys_exit_in_the_actions_module_is_a_load_error(tmp_path: Path, body: str) -> None:
    app = make_app(tmp_path)
    (app.root / "actions.py").write_text(body, encoding="utf-8")
    with pytest.raises(AppLoadError) as info:
        load_app_actions(app)
    (error,) = info.value.errors
    assert (error.file, error.line) == (str(app.root / "actions.py"), 3 if "(3)" in body else 2)
    assert "called sys.exit(" in error.message
