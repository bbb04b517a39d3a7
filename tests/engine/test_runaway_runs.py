"""Runaway runs end early: a model that repeats the same rejected call three times in a
row, and a run past its budget of model calls or tokens, end with an error that says
why, and keep their accounting."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentkit import Agent, AgentSpec, RunBudget, RunFailedError, Runtime
from agentkit.apps import AgentRunner, load_app
from agentkit.conversations import Machine
from agentkit.events import AgentMessage, ErrorEvent, ToolResult, TurnEnd
from agentkit.providers import register_provider
from agentkit.testing import ScriptedProvider, assert_stream_invariants
from agentkit.tools import Tool, ToolContext, ToolError, ToolRegistry

pytestmark = pytest.mark.anyio

SCORER = """\
name: scorer
description: Scores a text
tier: small
maxTurns: 100
permissionMode: default
tools: []
outputSchema:
  type: object
  required: [score]
  properties:
    score: {type: integer, minimum: 1, maximum: 10}
systemPromptPrefix: Score the text from 1 to 10.
"""


def _call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "input": arguments}]}


def _results(events: list[AgentMessage]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


async def test_an_app_agent_submitting_an_out_of_range_score_ends_after_three(
    tmp_path: Path,
) -> None:
    """Issue 32's case: the model submitted {"score": 100} 90 times until its context ran
    out; now the run ends at the third identical rejection."""
    root = tmp_path / "demo"
    (root / "agents").mkdir(parents=True)
    (root / "agents" / "scorer.yaml").write_text(SCORER, encoding="utf-8")
    (root / "app.yaml").write_text(
        "formatVersion: 2\nid: demo\nagents:\n  - agents/scorer.yaml\n", encoding="utf-8"
    )
    provider = ScriptedProvider([_call("submit_output", score=100)] * 90)
    async with AgentRunner(load_app(root), provider=provider) as runner:
        events = [e async for e in runner.run(agent_name="demo:scorer", prompt="a poem")]
    assert_stream_invariants(events)
    assert len(provider.requests) == 3  # not 90
    end = events[-1]
    assert isinstance(end, TurnEnd) and end.status == "error"
    error = next(e for e in events if isinstance(e, ErrorEvent))
    message = error.error
    assert message.startswith(
        'the model repeated the same rejected call 3 times: submit_output {"score": 100}: '
    )
    assert "100 is greater than the maximum of 10" in message
    assert [r.is_error for r in _results(events)] == [True, True, True]
    assert error.accounting is not None
    assert error.accounting.model_calls == 3 and error.accounting.tool_calls == 3


SPEC = AgentSpec(id="demo:caller", tools=("t",), permission_mode="bypassPermissions")


def _tools(function: Any = None) -> ToolRegistry:
    async def ok(arguments: dict[str, Any], context: ToolContext) -> str:
        return "fine"

    schema = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}}
    return ToolRegistry([Tool("t", "A tool.", schema, function or ok)])


async def _run(responses: list[Any], spec: AgentSpec = SPEC, **options: Any) -> Any:
    provider = ScriptedProvider(responses)
    options.setdefault("tools", _tools())
    options.setdefault("builtin_tools", options["tools"] is None)
    async with Runtime(provider=provider, **options) as runtime:
        run = await runtime.start(spec, "go")
        events = [e async for e in run.events()]
        outcome = await run.wait()
    assert_stream_invariants(events)
    return outcome, events, provider


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (_call("t", n=100), "invalid arguments: n: 100 is greater than the maximum of 10"),
        (_call("nope", n=1), "tool 'nope' is not available to this agent"),
        ({"tool_calls": [{"name": "t", "arguments": "{not json"}]}, "not valid JSON"),
    ],
)
async def test_the_same_rejected_call_three_times_in_a_row_ends_the_run(
    call: dict[str, Any], reason: str
) -> None:
    outcome, _, provider = await _run([call] * 10)
    assert outcome.status == "error"
    assert outcome.error.startswith("the model repeated the same rejected call 3 times: ")
    assert reason in outcome.error
    assert len(provider.requests) == 3
    assert outcome.accounting.model_calls == 3


async def test_a_call_the_allowlist_does_not_permit_counts_as_rejected() -> None:
    spec = AgentSpec(
        id="demo:git", tools=("Bash(git status)",), permission_mode="bypassPermissions"
    )
    outcome, _, provider = await _run([_call("Bash", command="rm -rf /")] * 5, spec, tools=None)
    assert outcome.status == "error" and len(provider.requests) == 3
    assert 'Bash {"command": "rm -rf /"}: this call is not permitted' in outcome.error


async def test_a_different_or_accepted_call_breaks_the_row() -> None:
    script = [
        _call("t", n=100),
        _call("t", n=100),
        _call("t", n=50),  # other arguments: a new row
        _call("t", n=100),
        _call("t", n=100),
        _call("t", n=1),  # accepted
        _call("t", n=100),
        _call("t", n=100),
        "done",
    ]
    outcome, _, provider = await _run(script)
    assert outcome.ok and outcome.text == "done"
    assert len(provider.requests) == len(script)


async def test_a_tool_that_fails_the_same_way_is_not_a_rejection() -> None:
    async def failing(arguments: dict[str, Any], context: ToolContext) -> str:
        raise ToolError("the service is down")

    outcome, events, _ = await _run([_call("t", n=1)] * 4 + ["gave up"], tools=_tools(failing))
    assert outcome.ok and outcome.text == "gave up"
    assert [r.is_error for r in _results(events)] == [True] * 4


async def test_a_run_ends_at_its_budget_of_model_calls_with_its_accounting() -> None:
    outcome, events, provider = await _run(
        [_call("t", n=i) for i in range(1, 11)], budget=RunBudget(model_calls=4)
    )
    assert outcome.status == "error"
    assert outcome.error.startswith("the run used its budget of 4 model calls; raise it with")
    assert "--max-model-calls" in outcome.error
    assert len(provider.requests) == 4
    assert outcome.accounting.model_calls == 4 and outcome.accounting.tool_calls == 4
    assert len(_results(events)) == 4  # every call made got its result


async def test_a_run_ends_at_its_budget_of_tokens() -> None:
    step = {**_call("t", n=1), "input_tokens": 700, "output_tokens": 50}
    outcome, _, provider = await _run([step] * 10, budget=RunBudget(tokens=2_000))
    assert outcome.status == "error"
    assert outcome.error.startswith("the run used its budget of 2,000 tokens (2,250 used)")
    assert len(provider.requests) == 3
    [usage] = outcome.accounting.models.values()
    assert (usage.input_tokens, usage.output_tokens) == (2_100, 150)


async def test_no_limit_and_the_defaults() -> None:
    assert RunBudget() == RunBudget(model_calls=100, tokens=2_000_000)
    assert Runtime().budget == RunBudget()
    spec = SPEC.model_copy(update={"max_turns": 150})
    outcome, _, provider = await _run(
        [_call("t", n=1)] * 120 + ["done"], spec, budget=RunBudget(model_calls=None, tokens=None)
    )
    assert outcome.ok and len(provider.requests) == 121
    outcome, _, provider = await _run([_call("t", n=1)] * 120 + ["done"], spec)
    assert outcome.status == "error" and len(provider.requests) == 100
    assert "budget of 100 model calls" in outcome.error


def test_a_bad_budget_is_an_error_naming_the_field() -> None:
    for field, bad in (("model_calls", 0), ("tokens", -5), ("tokens", 1.5), ("model_calls", True)):
        with pytest.raises(ValueError, match=f"RunBudget: {field} must be a positive integer"):
            RunBudget(**{field: bad})


async def test_an_agent_takes_a_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentkit._internal import provider_names

    monkeypatch.setattr(provider_names, "FACTORIES", dict(provider_names.FACTORIES))
    provider = ScriptedProvider([_call("t", n=1)] * 5, name="scripted-budget")
    register_provider("scripted-budget", lambda **_: provider)

    async def t(n: int) -> str:
        """A tool."""
        return "fine"

    agent = Agent(
        "scripted-budget",
        tools=[t],
        permission_mode="bypassPermissions",
        budget=RunBudget(model_calls=2),
    )
    with pytest.raises(RunFailedError) as failed:
        await agent.run("go")
    assert "the run used its budget of 2 model calls" in str(failed.value)
    assert len(provider.requests) == 2
    with pytest.raises(TypeError, match="budget= sets the budget of the agent's own runtime"):
        Agent("test", runtime=Runtime(), budget=RunBudget())
    with pytest.raises(TypeError, match="budget must be a RunBudget"):
        Agent("test", budget=100)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="budget must be a RunBudget"):
        Runtime(budget={"model_calls": 5})  # type: ignore[arg-type]


def test_a_machine_passes_its_budget_to_its_runtime(tmp_path: Path) -> None:
    machine = Machine(
        store=str(tmp_path / "m.db"), attachment_roots=[tmp_path], budget=RunBudget(tokens=5)
    )
    assert machine.runtime.budget == RunBudget(tokens=5)
    assert Machine(store=str(tmp_path / "n.db"), attachment_roots=[tmp_path]).runtime.budget == (
        RunBudget()
    )


def test_agentkit_run_takes_the_budget_flags(
    tmp_path: Path, cli_env: dict[str, str], python: str
) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([_call("Bash", command="true")] * 5), encoding="utf-8")
    (tmp_path / "looper.py").write_text(
        "from agentkit import AgentSpec\n"
        "spec = AgentSpec(id='looper', tools=('Bash',), permission_mode='bypassPermissions')\n",
        encoding="utf-8",
    )
    target = f"{tmp_path / 'looper.py'}:spec"
    base = [python, "-m", "agentkit", "run", target, "go", "--provider", "scripted"]
    done = subprocess.run(
        [*base, "--script", str(script), "--max-model-calls", "2", "--max-tokens", "none"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stderr
    assert "the run used its budget of 2 model calls" in done.stderr
    for flag, value in (("--max-model-calls", "0"), ("--max-tokens", "lots")):
        bad = subprocess.run(
            [*base, "--script", str(script), flag, value],
            env=cli_env,
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
        assert bad.returncode == 2
        assert f"{flag} {value!r} is not a positive whole number or 'none'" in bad.stderr
        assert "Traceback" not in bad.stderr
    serve = subprocess.run(
        [python, "-m", "agentkit", "serve", "--port", "0", "--max-tokens", "lots"],
        env=cli_env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert serve.returncode == 2
    assert "--max-tokens 'lots' is not a positive whole number or 'none'" in serve.stderr
